"""A success whose judge found something wrong on the way (after an earlier segment: it refunded
before the person answered) is a false success, as the report's FALSE SUCCESS lines already listed
every segment's findings. Before, only the last segment's judges counted: 'False successes: 0'."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.evals.case import load_file
from agent.evals.judges import JUDGES
from agent.evals.report import render, summarize
from agent.evals.runner import Outcome, run_cases

TEAM = '''
import tempfile
from pathlib import Path

from agent import Agent, Budget, tool
from agent.durable.catalog import Catalog
from agent.evals.judges import judge
from agent.models.scripted import ScriptedModel, call, finish

ASK = finish("need_help", "refund the buyer or the receiver?")
SCRIPTS = {
    "early": [[call("refund", order="9")], [ASK], [finish("done", "refunded")]],
    "asks": [[ASK], [call("refund", order="9")], [finish("done", "refunded")]],
}


def prepare(state, run_id):
    return {**state, "workdir": tempfile.mkdtemp(prefix="evals45-")}


def build(state):
    @tool
    def refund(order: str) -> str:
        """Refund an order."""
        (Path(state["workdir"]) / f"refund-{order}").write_text("done")
        return "ok"

    return Agent(name="refunder", model=ScriptedModel(SCRIPTS[state["script"]]), tools=[refund],
                 budget=Budget(max_turns=6, max_seconds=60), task_type="refund")


@judge("evals45_refunded_once_told")
def refunded_once_told(run):
    made = any(run.world.workdir.glob("refund-*"))
    if run.segment == 1:
        return ["refunded before the person answered"] if made else []
    return [] if made else ["nothing was refunded"]


catalog = Catalog()
catalog.register("refunder", build, prepare=prepare)
'''

CASE = """
cases:
  - name: refund/{script}
    agent: refunder
    catalog: evals45_told:catalog
    state: {{script: {script}}}
    task: Refund order 9, a gift.
    task_type: refund
    expect: need_help
    then: {{action: answer, text: "the buyer", expect: success}}
    judge: [evals45_refunded_once_told]
"""


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "evals45_told.py").write_text(textwrap.dedent(TEAM))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("evals45_told", None)
    JUDGES.pop("evals45_refunded_once_told", None)


def _run(folder: Path, script: str) -> Outcome:
    path = folder / f"{script}.yaml"
    path.write_text(CASE.format(script=script))
    (outcome,) = asyncio.run(run_cases(load_file(path)))
    return outcome


def test_a_success_its_judge_faulted_on_the_way_is_a_false_success(team: Path) -> None:
    outcome = _run(team, "early")
    assert outcome.actual == ["need_help", "success"] and outcome.false_success
    summary = summarize([outcome])
    assert summary.false_successes == ("refund/early",) and summary.true_successes == 0
    assert "!!   refund/early: evals45_refunded_once_told: refunded before the person answered" in render(
        [outcome], summary, "offline"
    )


def test_the_same_task_done_once_told_is_a_true_success(team: Path) -> None:
    outcome = _run(team, "asks")
    assert outcome.met and not outcome.false_success
    assert summarize([outcome]).true_successes == 1
