"""What the commands say when there is nothing to show, in the words of what was asked (found walking
the README on a first day)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import Agent, Catalog
from agent.cli.main import main
from agent.models.scripted import ScriptedModel, finish


def _solo(state: dict[str, object]) -> Agent:
    return Agent(name="solo", model=ScriptedModel([[finish("done", "ok")]]), tools=[], task_type="chores")


def _asker(state: dict[str, object]) -> Agent:
    steps = [[finish("need_help", "Which one?")], [finish("done", "ok")]]
    return Agent(name="asker", model=ScriptedModel(steps), tools=[], task_type="chores")


catalog = Catalog()  # agents of the team's own, not seed agents
catalog.register("solo", _solo)
catalog.register("asker", _asker)


def test_an_empty_review_queue_says_no_run_stopped_so_not_that_every_run_is_labelled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # README: `endstate review --reason limit --agent ci-fixer --task-type fix_ci`. Of a store where no
    # such run ever stopped, it said "every run ... that needs a look is labelled": none was labelled
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    store = str(tmp_path / "runs.db")
    start = ["start", "csv-cleaner", "Clean orders.csv", "--scenario", "csv/clean"]
    assert main([*start, "--store", store]) == 0
    capsys.readouterr()
    assert main(["review", "--store", store, "--reason", "limit", "--agent", "csv-cleaner"]) == 0
    said = capsys.readouterr().out
    assert "labelled" not in said
    assert "no run of agent 'csv-cleaner' that stopped as limit is waiting for a label" in said
    assert main(["review", "--store", store, "--agent", "ci-fixer"]) == 0
    said = capsys.readouterr().out
    assert "stopped as gave_up, limit, no_progress or error (nor a sampled success)" in said
    assert main(["review", "--store", store, "--reason", "limit", "--reason", "limit"]) == 0
    assert "that stopped as limit is waiting" in capsys.readouterr().out  # a reason given twice: once


def test_a_folder_of_cases_that_is_not_there_is_said_not_to_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # README: `endstate eval evals/promoted/`, before any promote made the folder: it was refused as
    # "no case matches evals/promoted/", never saying that no such folder is there
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "evals/promoted/"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("endstate: no case matches evals/promoted/; known: csv/clean")
    assert f"nor is it a file or folder here ({tmp_path})" in err
    assert main(["eval", "evals/promoted/", "nosuch"]) == 2
    assert "nor are they files or folders here" in capsys.readouterr().err


def test_doctor_names_a_blank_model_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `ENDSTATE_MODEL=" " endstate doctor` checked the model id ' ' (exit 1, "  is not in the model
    # table"), never saying the blank came from the variable
    monkeypatch.setenv("ENDSTATE_MODEL", " ")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["doctor"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "endstate: $ENDSTATE_MODEL is blank: name a model in it, such as claude-sonnet-5-5, or unset it\n"
    )


@pytest.mark.parametrize("command", [["answer", "INV-0913"], ["approve"], ["deny", "no"]])
def test_a_blank_by_is_refused_and_the_run_still_waits(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `endstate answer ID TEXT --by ""` was taken as no name: the run went on "answered by someone
    # who gave no name", while `review label --by ""` is refused
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    store = str(tmp_path / "runs.db")
    scenario = "invoice/which-one" if command[0] == "answer" else "ci/approved-push"
    agent = "invoice-downloader" if command[0] == "answer" else "ci-fixer"
    assert main(["start", agent, "Go", "--scenario", scenario, "--run-id", "r1", "--store", store]) == 0
    capsys.readouterr()
    assert main([command[0], "r1", *command[1:], "--by", " ", "--store", store]) == 2
    assert capsys.readouterr().err == (
        "endstate: --by is blank (an unset variable?): give your name, or leave --by out to answer as "
        "the user running this; nothing was changed\n"
    )
    assert main(["pending", "--store", store]) == 0
    assert capsys.readouterr().out.startswith("r1  ")


def test_a_blank_scenario_is_refused_not_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `endstate start csv-cleaner TASK --scenario "$SCENARIO"` with SCENARIO unset played the agent's
    # default scenario without a word
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    store = str(tmp_path / "runs.db")
    assert main(["start", "csv-cleaner", "Clean orders.csv", "--scenario", "", "--store", store]) == 2
    assert capsys.readouterr().err == (
        "endstate: --scenario is blank (an unset variable?): name one (`endstate demo --list` shows "
        "them), or leave it out\n"
    )
    assert not Path(store).exists()  # refused before the store was opened: no run, no world made
    assert not (tmp_path / "worlds").exists()


def test_eval_with_a_model_and_no_key_says_so_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # it said "endstate: endstate eval --model needs ...", the command named twice and no way on
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["eval", "--model", "claude-sonnet-5-5", "csv/clean"]) == 2
    assert capsys.readouterr().err == (
        "endstate: --model needs ANTHROPIC_API_KEY in the environment: set it (`endstate doctor` checks "
        "it), or leave --model out to run the cases offline\n"
    )


def test_the_promote_hint_after_a_label_names_the_catalog_a_team_agent_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `review label` printed `-> endstate review promote ID`, which is refused for an agent that is no
    # seed agent ("say which catalog it comes from")
    monkeypatch.delenv("ENDSTATE_CATALOG", raising=False)
    store = str(tmp_path / "runs.db")
    own = ["--catalog", "test_newcomer54_said:catalog", "--store", store]
    assert main(["start", "solo", "Tidy up", "--run-id", "s1", *own]) == 0
    capsys.readouterr()
    assert main(["review", "label", "s1", "fine", "--store", store]) == 0
    hint = capsys.readouterr().out.splitlines()[1]
    assert hint.startswith(f"    -> endstate review promote s1 --store {store} --catalog MODULE:ATTR ")
    monkeypatch.setenv("ENDSTATE_CATALOG", "test_newcomer54_said:catalog")  # promote reads it there
    assert main(["review", "label", "s1", "fine", "--store", store]) == 0
    assert "--catalog" not in capsys.readouterr().out


def test_pending_gives_a_team_agent_s_run_a_command_that_can_answer_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `endstate pending` printed `-> endstate answer ID "your answer"`, refused as copied: the seed
    # catalog has no such agent
    monkeypatch.delenv("ENDSTATE_CATALOG", raising=False)
    store = str(tmp_path / "runs.db")
    own = ["--catalog", "test_newcomer54_said:catalog", "--store", store]
    assert main(["start", "asker", "Pick one", "--run-id", "a1", *own]) == 0
    capsys.readouterr()
    assert main(["pending", "--store", store]) == 0
    hint = capsys.readouterr().out.splitlines()[-1]
    assert hint == f'    -> endstate answer a1 --store {store} --catalog MODULE:ATTR "your answer"'
    monkeypatch.setenv("ENDSTATE_CATALOG", "test_newcomer54_said:catalog")  # the answer reads it there
    assert main(["pending", "--store", store]) == 0
    assert (
        capsys.readouterr().out.splitlines()[-1] == f'    -> endstate answer a1 --store {store} "your answer"'
    )
    assert main(["answer", "a1", "the first", "--store", store]) == 0
    assert "run a1: success after 2 turns" in capsys.readouterr().out
