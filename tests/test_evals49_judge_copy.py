"""A judge cannot change the run it judges: it is shown a copy of the segment's snapshot. The
follow-up (a person's answer) resumed from the very snapshot the judge was handed, so a judge that
changed it (here its spent turns, as a judge tidying what it read might) made the resumed run stop
at its turn budget: the case failed for the judge's doing, not the agent's."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.evals.case import load_file
from agent.evals.judges import JUDGES
from agent.evals.runner import run_case
from agent.result import StopReason

TEAM = """
from pathlib import Path

from agent import Agent, Budget
from agent.durable.catalog import Catalog
from agent.evals.judges import judge
from agent.models.scripted import ScriptedModel, finish


def prepare(state, run_id):
    folder = Path(state["base"]) / run_id
    folder.mkdir()
    return {**state, "workdir": str(folder)}


def build(state):
    script = [[finish("need_help", "the buyer or the receiver?")], [finish("done", "refunded the buyer")]]
    return Agent(name="refunder", model=ScriptedModel(script), budget=Budget(max_turns=4, max_seconds=60),
                 task_type="refund")


@judge("evals49_meddles")
def meddles(run):
    if run.result.snapshot is not None:
        run.result.snapshot.usage.turns = 99  # a judge that changes what it was shown
        run.result.snapshot.state["meddled"] = True
    return []


catalog = Catalog()
catalog.register("refunder", build, prepare=prepare)
"""

CASE = """
cases:
  - name: refund/asks
    agent: refunder
    catalog: evals49_meddling:catalog
    state: {{base: "{base}"}}
    task: Refund order 9, a gift.
    task_type: refund
    expect: need_help
    then: {{action: answer, text: "the buyer", expect: success}}
    judge: [evals49_meddles]
"""


@pytest.fixture
def case_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "evals49_meddling.py").write_text(textwrap.dedent(TEAM))
    (tmp_path / "worlds").mkdir()
    path = tmp_path / "cases.yaml"
    path.write_text(CASE.format(base=tmp_path / "worlds"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield path
    sys.modules.pop("evals49_meddling", None)
    JUDGES.pop("evals49_meddles", None)


def test_a_judge_that_changes_the_snapshot_it_is_shown_does_not_change_the_run(case_file: Path) -> None:
    (case,) = load_file(case_file)
    outcome = asyncio.run(run_case(case))
    assert outcome.actual == [StopReason.NEED_HELP, StopReason.SUCCESS], outcome.problems
    assert outcome.met and outcome.final is not None and outcome.final.turns == 2
    first = outcome.segments[0].result.snapshot
    assert first is not None and first.usage.turns == 1 and "meddled" not in first.state  # untouched
