"""Review, label, promote as a team walks it, with the runs that do not fit: each step works or
refuses saying why."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path

import pytest
import yaml
from foreign_agents import ENV_CHECKPOINTS, catalog

from agent.cli.main import main
from agent.durable import review
from agent.durable.runner import Runner
from agent.durable.store import open_store


def test_a_foreign_run_is_refused_at_promote_not_written_as_a_case_that_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the promote wrote a case (from a journal holding only the suspension) that every
    `endstate eval` failed with "a foreign agent: evals replay Endstate agents only"."""
    monkeypatch.setenv(ENV_CHECKPOINTS, str(tmp_path / "lg.db"))
    url = str(tmp_path / "runs.db")
    store = open_store(url)
    try:
        res = asyncio.run(Runner(store, catalog()).start("oa-remover", "clean up a"))
        assert main(["deny", res.run_id, "no", "--store", url, "--catalog", "foreign_agents:catalog"]) == 0
        assert main(["review", "label", res.run_id, "false_success", "--store", url]) == 0  # labels count
        capsys.readouterr()
        out = tmp_path / "cases"
        code = main(
            [
                "review",
                "promote",
                res.run_id,
                "--store",
                url,
                "--out",
                str(out),
                "--catalog",
                "foreign_agents:catalog",
            ]
        )
        err = capsys.readouterr().err
        assert code == 2
        assert (
            f"run {res.run_id} of agent 'oa-remover' ran on another framework (openai_agents)" in err
            and "cannot be promoted" in err
        )
        assert not list(out.glob("*.yaml")) if out.exists() else True
        with pytest.raises(review.ReviewError, match="replay Endstate agents only"):  # the inbox's case too
            review.case_files(store, res.run_id, catalog="foreign_agents:catalog")
    finally:
        store.close()


def test_a_run_cancelled_by_a_shutdown_and_resumed_replays_its_cancel_and_its_case_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the case expected `cancelled -> success`, but the replay only played the replies, so
    nothing cancelled the run and every eval of the unchanged agent failed ("got success")."""
    from agent.examples.scenarios import example_catalog, scenario_named

    url = str(tmp_path / "runs.db")
    store = open_store(url)
    seeds = example_catalog(tmp_path / "worlds")
    runner = Runner(store, seeds)
    task = scenario_named("csv/shutdown").task
    try:
        first = asyncio.run(
            runner.start("csv-cleaner", task, state={"scenario": "csv/shutdown"}, run_id="shut")
        )
        assert str(first.reason) == "cancelled"
        assert str(asyncio.run(runner.resume("shut")).reason) == "success"
    finally:
        seeds.close()
        store.close()
    assert main(["review", "label", "shut", "fine", "--store", url]) == 0
    out = tmp_path / "cases"
    assert main(["review", "promote", "shut", "--store", url, "--out", str(out)]) == 0
    case = yaml.safe_load((out / "shut.yaml").read_text())["cases"][0]
    assert case["offline_only"] is True  # only the replay shuts the host down: not a case for --model
    assert [r.get("cancelled", False) for r in case["replay"]] == [False, True, False, False, False]
    capsys.readouterr()
    assert main(["eval", str(out)]) == 0, capsys.readouterr().out
    assert "cancelled -> success        cancelled -> success" in capsys.readouterr().out


def test_a_replay_marked_cancelled_must_say_true_or_false(tmp_path: Path) -> None:
    from agent.evals.case import CaseError, load_cases

    path = tmp_path / "c.yaml"
    reply = {"content": [{"type": "text", "text": "hi"}], "cancelled": "yes"}
    case = {
        "name": "c",
        "agent": "csv-cleaner",
        "fixture": "dirty_orders",
        "task": "t",
        "expect": "error",
        "replay": [reply],
    }
    path.write_text(yaml.safe_dump({"cases": [case]}))
    with pytest.raises(CaseError, match=r"replay\[0\]\.cancelled.*true or false"):
        load_cases([str(path)])


@pytest.mark.parametrize(
    "command", [["review"], ["review", "label", "r1", "fine"], ["review", "promote", "r1"]]
)
def test_review_on_temporal_with_no_store_named_refuses_rather_than_read_a_local_store(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: with $ENDSTATE_TEMPORAL set, `endstate review` listed (and labelled, promoted) the runs of
    whatever local store was there, as if they were the runs on Temporal; with none there it said only
    "there is no run store"."""
    from agent.cli.temporal import ENV_TEMPORAL
    from agent.durable.store import ENV_STORE

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".endstate").mkdir()
    open_store(str(tmp_path / ".endstate" / "runs.db")).close()  # a stale local store (a demo's, say)
    monkeypatch.setenv(ENV_TEMPORAL, "127.0.0.1:7233")
    monkeypatch.delenv(ENV_STORE, raising=False)
    capsys.readouterr()
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "$ENDSTATE_TEMPORAL is set with no store named" in err
    assert "runs are not reviewed, labelled or promoted (yet)" in err and "pass --store" in err
    assert main(["review", "--store", str(tmp_path / ".endstate" / "runs.db")]) == 0  # a store named: read


RETRIER = '''
from agent import Agent, tool
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, call, finish


def build(state):
    @tool
    def schedule(after: str) -> str:
        """Schedule a retry after a delay such as 1.5s."""
        return f"retry scheduled in {float(after.removesuffix('s')) * 1000:.0f} ms, took 0.02s"

    note = "the portal is down; a retry is scheduled in 1.5s"
    model = ScriptedModel([[call("schedule", after="1.5s")], [finish("give_up", note)]])
    return Agent(name="retrier", model=model, tools=[schedule], task_type="retry")


catalog = Catalog()
catalog.register("retrier", build)
'''


def test_a_timing_the_model_wrote_in_a_call_is_replayed_as_it_wrote_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "1.5s" in a call's arguments was written as `{duration}` (a placeholder meant for the
    timings in results, never filled back in), so the replayed tool got "{duration}", raised, and the
    case of the unchanged agent failed ("answered differently")."""
    (tmp_path / "retrier44.py").write_text(RETRIER)
    monkeypatch.syspath_prepend(str(tmp_path))
    retriers = importlib.import_module("retrier44").catalog  # written above: no distribution's

    url = str(tmp_path / "runs.db")
    store = open_store(url)
    try:
        asyncio.run(Runner(store, retriers).start("retrier", "retry the portal", run_id="d1"))
    finally:
        store.close()
    assert main(["review", "label", "d1", "correct_give_up", "--store", url]) == 0
    out = tmp_path / "cases"
    assert (
        main(["review", "promote", "d1", "--store", url, "--out", str(out), "--catalog", "retrier44:catalog"])
        == 0
    )
    case = yaml.safe_load((out / "d1.yaml").read_text())["cases"][0]
    assert case["replay"][0]["content"][0]["input"] == {"after": "1.5s"}
    assert (
        case["results"][0]["text"] == "retry scheduled in 1500 ms, took {duration}"
    )  # results: placeholders
    capsys.readouterr()
    assert main(["eval", str(out)]) == 0, capsys.readouterr().out


@pytest.mark.parametrize(
    ("edit", "field", "problem"),
    [
        ({"contnet": []}, "replay[0].contnet", "unknown key; a reply has: content, input_tokens"),
        ({"input_tokens": "many"}, "replay[0].input_tokens", "must be a whole number from 0 to 2**63 - 1"),
        ({"output_tokens": -5}, "replay[0].output_tokens", "must be a whole number from 0 to 2**63 - 1"),
        (
            {"content": [{"type": "tool_use", "id": "a", "name": "t", "input": [1]}]},
            "replay[0].content[0]",
            "a tool_use block needs 'input', a mapping",
        ),
        (
            {"content": [{"type": "tool_use", "id": "a", "input": {}}]},
            "replay[0].content[0]",
            "a tool_use block needs 'id' and 'name'",
        ),
        (
            {"content": [{"type": "text", "text": 5}]},
            "replay[0].content[0]",
            "a text block needs 'text', a string",
        ),
    ],
)
def test_a_recorded_reply_edited_by_hand_wrongly_is_refused_when_the_case_loads_naming_it(
    tmp_path: Path, edit: dict[str, object], field: str, problem: str
) -> None:
    """Before: a misspelt key was ignored (the case passed without it), and a bad token count or call
    failed the replayed run as `error`, reported as if the agent had changed."""
    from agent.evals.case import CaseError, load_cases

    reply = {"content": [{"type": "tool_use", "id": "a", "name": "list_invoices", "input": {}}], **edit}
    case = {
        "name": "c", "agent": "invoice-downloader", "fixture": "portal_offline", "task": "t",
        "expect": "gave_up", "replay": [reply],
    }  # fmt: skip
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"cases": [case]}))
    with pytest.raises(CaseError) as refused:
        load_cases([str(path)])
    assert f"field '{field}': {problem}" in str(refused.value)
