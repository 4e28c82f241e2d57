"""A team's own eval cases for its own agents (a catalog of its own), written by hand as the docs
show: its own judges, registered with `@judge` beside its agents, and offline runs of the model its
catalog builds."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.evals.case import load_cases
from agent.evals.judges import JUDGES
from agent.evals.runner import run_cases

TEAM = '''
import tempfile
from pathlib import Path

from agent import Agent, Budget, tool
from agent.durable.catalog import Catalog
from agent.evals.judges import judge
from agent.models.scripted import ScriptedModel, call, finish
from agent.verify import predicate

SCRIPTS = {
    "easy": [[call("write", text="hello")], [finish("done", "wrote hello")]],
    "claims": [[finish("done", "the margin is 12%")]],
}


CALLED = []


class Paid:
    """A model API: a call costs money."""

    name = "claude-team"

    async def complete(self, request):
        CALLED.append(request)
        raise RuntimeError("a paid call")


def prepare(state, run_id):
    return {**state, "workdir": tempfile.mkdtemp(prefix="team42-")}


def build(state):
    folder = Path(state["workdir"])

    @tool
    def write(text: str) -> str:
        """Write text to out.txt."""
        (folder / "out.txt").write_text(text)
        return "ok"

    def written(ctx):
        if state.get("boom"):
            raise ValueError("verifier boom")
        return (folder / "out.txt").exists()

    wrote = predicate(written, "nothing written")
    return Agent(
        name="writer",
        model=Paid() if state.get("api") else ScriptedModel(SCRIPTS[state["script"]]),
        tools=[write],
        verifiers=[] if state.get("unchecked") else [wrote],
        budget=Budget(max_turns=5, max_seconds=60),
        task_type="writing",
    )


@judge("team42_wrote_hello")
def wrote_hello(run):
    path = run.world.workdir / "out.txt"
    return [] if path.exists() and path.read_text() == "hello" else ["out.txt does not say hello"]


catalog = Catalog()
catalog.register("writer", build, prepare=prepare)
'''

CASES = """
cases:
  - name: writer/easy
    agent: writer
    catalog: team42_agents:catalog
    state: {script: easy}
    task: Write hello.
    task_type: writing
    expect: success
    judge: [team42_wrote_hello]
  - name: writer/impossible
    agent: writer
    catalog: team42_agents:catalog
    state: {script: claims, unchecked: true}
    task: Find the private company's margin.
    task_type: writing
    expect: gave_up
    impossible: true
    judge: [team42_wrote_hello]
"""


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The team's package on the path, not yet imported; its case file."""
    (tmp_path / "team42_agents.py").write_text(textwrap.dedent(TEAM))
    (tmp_path / "cases.yaml").write_text(CASES)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "cases.yaml"
    sys.modules.pop("team42_agents", None)
    JUDGES.pop("team42_wrote_hello", None)


def test_a_judge_registered_beside_the_catalog_agents_is_known_when_the_cases_load(team: Path) -> None:
    cases = load_cases([team])
    assert [ref.name for ref in cases[0].judges] == ["team42_wrote_hello"]


def test_a_hand_written_catalog_case_runs_offline_with_the_model_its_catalog_builds(team: Path) -> None:
    easy, impossible = asyncio.run(run_cases(load_cases([team])))
    assert not easy.skipped and easy.met and easy.actual == ["success"]
    assert impossible.false_success and not impossible.met  # the unchecked claim is caught by the eval


def test_a_hand_written_catalog_case_whose_catalog_builds_a_model_api_is_skipped_never_called(
    team: Path,
) -> None:
    """Offline means no paid call: a case without `replay:` runs its catalog's model only when that is a
    ScriptedModel; one that builds a model API is skipped, saying to run it with --model."""
    from agent.evals.runner import CALLS_A_MODEL

    team.write_text(CASES.replace("state: {script: easy}", "state: {script: easy, api: true}"))
    easy, impossible = asyncio.run(run_cases(load_cases([team])))
    assert easy.skipped == CALLS_A_MODEL and "--model" in CALLS_A_MODEL
    assert sys.modules["team42_agents"].CALLED == []  # type: ignore[attr-defined]
    assert not impossible.skipped  # the other case's catalog entry builds a scripted model


def test_a_judge_that_raises_fails_the_case_without_calling_a_true_success_false(tmp_path: Path) -> None:
    """A judge with a bug could not judge: the case fails and says so, but the run is no false success
    (FALSE SUCCESS says the agent invented an outcome; here nobody knows)."""
    from agent.evals.judges import judge
    from agent.evals.report import case_json, summarize

    @judge("team42_broken")
    def broken(run: object) -> list[str]:
        raise RuntimeError("judge bug")

    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "cases:\n  - {name: csv/broken-judge, agent: csv-cleaner, fixture: dirty_orders, script: csv/clean,\n"
        "     expect: success, judge: [csv_matches_hand_cleaned, team42_broken]}\n"
    )
    try:
        [outcome] = asyncio.run(run_cases(load_cases([cases])))
    finally:
        JUDGES.pop("team42_broken", None)
    assert outcome.actual == ["success"] and not outcome.met
    assert not outcome.false_success
    assert outcome.problems == ["could not judge: team42_broken: the judge raised RuntimeError: judge bug"]
    summary = summarize([outcome])
    assert not summary.passed and summary.false_successes == () and summary.true_successes == 0
    assert case_json(outcome)["segments"][0]["judge_errors"] == [outcome.problems[0].split(": ", 1)[1]]


def test_the_pytest_entry_point_takes_the_catalog_from_the_environment_as_endstate_eval_does(
    team: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A case that names no catalog: the error told the team to set $ENDSTATE_CATALOG, which
    `case_params` then ignored."""
    from agent.evals.testing import case_params, check_case

    team.write_text(CASES.replace("    catalog: team42_agents:catalog\n", ""))
    monkeypatch.setenv("ENDSTATE_CATALOG", "team42_agents:catalog")
    params = case_params(team)
    assert [p.id for p in params] == ["writer/easy", "writer/impossible"]
    assert params[0].values[0].catalog == "team42_agents:catalog"
    check_case(params[0].values[0])
    monkeypatch.delenv("ENDSTATE_CATALOG")
    assert [p.id for p in case_params(team, catalog="team42_agents:catalog")] == [
        "writer/easy",
        "writer/impossible",
    ]


def test_an_unexpected_stop_says_why_the_run_ended(team: Path) -> None:
    """A red case in CI said only "expected success, got error": the verifier's exception, the
    reason the run gave up, were in the run's note and nowhere in the failure."""
    team.write_text(CASES.replace("state: {script: easy}", "state: {script: easy, boom: true}"))
    outcome = asyncio.run(run_cases(load_cases([team])))[0]
    assert outcome.actual == ["error"]
    assert outcome.problems[0] == "expected success, got error (A verifier raised ValueError: verifier boom)"


def test_the_few_successes_note_counts_only_the_successes_the_ceilings_were_read_from() -> None:
    """Two successes, one labelled false_success: the ceilings come from one run, and the note said 2."""
    from agent.evals.limits import PastRun, RecordHistory, suggest
    from agent.result import StopReason

    ok = PastRun("t", StopReason.SUCCESS, None, 5, 2, 100, 0.01, "a")
    false = PastRun("t", StopReason.SUCCESS, None, 6, 2, 100, 0.01, "b", label="false_success")
    (s,) = suggest(RecordHistory([ok, false]))
    assert s.ceilings[0].observed.count == 1
    assert s.notes[0].startswith("only 1 successful run(s): the 95th percentile is rough")


def test_a_success_where_the_case_expects_a_give_up_is_a_false_success(team: Path) -> None:
    """A promoted false_success case (expects gave_up) replayed as the same success: the report said
    "True success: 0 of 1" and "False successes: 0", and named nothing loudly."""
    from agent.evals.report import render, summarize

    team.write_text(CASES.replace("expect: success", "expect: gave_up"))
    outcomes = asyncio.run(run_cases(load_cases([team])))
    assert outcomes[0].actual == ["success"] and outcomes[0].false_success
    summary = summarize(outcomes)
    assert summary.false_successes == ("writer/easy", "writer/impossible") and not summary.passed
    assert "!!   writer/easy: the case expects a give-up" in render(outcomes, summary, "offline")


def test_json_says_a_case_that_could_not_run_crashed(team: Path) -> None:
    """A machine reading --json could tell a case whose agent could not be built from one that ran
    and failed only by parsing the problem's words."""
    from agent.evals.report import case_json

    team.write_text(CASES.replace("state: {script: easy}", "state: {script: no-such-script}"))
    outcome = asyncio.run(run_cases(load_cases([team])))[0]
    line = case_json(outcome)
    assert line["crashed"] == "KeyError: 'no-such-script'" and line["met"] is False and line["segments"] == []
    assert case_json(asyncio.run(run_cases(load_cases([team])))[1])["crashed"] is None
