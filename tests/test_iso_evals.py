"""Isolation between eval cases: one case's run never changes another case's.

A catalog whose `build` returns one shared agent (`lambda state: AGENT`) with a scripted model: each
case is played from a copy of the agent, but the copy kept the shared `ScriptedModel`, which goes on
from run to run. The second case (and every case at once, with `--jobs`) was played from where the
first left off: its script ran out, and the case failed for another case's run.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent import StopReason
from agent.evals.case import load_file
from agent.evals.runner import run_cases

TEAM = """
from agent import Agent, Budget
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, finish, say

AGENT = Agent(
    name="sharer",
    model=ScriptedModel([[say("looking")], [finish("give_up", "the portal is down")]]),
    budget=Budget(max_turns=5, max_seconds=60),
    task_type="fetch",
)
catalog = Catalog()
catalog.register("sharer", lambda state: AGENT)
"""

CASE = """
  - name: fetch/{name}
    agent: sharer
    catalog: iso_evals_shared:catalog
    task: Fetch invoice {name}.
    task_type: fetch
    expect: gave_up
"""


@pytest.fixture
def cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "iso_evals_shared.py").write_text(textwrap.dedent(TEAM))
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "cases.yaml"
    path.write_text("cases:" + "".join(CASE.format(name=name) for name in "abcd"))
    yield path
    sys.modules.pop("iso_evals_shared", None)


@pytest.mark.parametrize("jobs", [1, 4])
def test_cases_of_a_shared_scripted_agent_are_each_played_from_the_start(cases: Path, jobs: int) -> None:
    outcomes = asyncio.run(run_cases(load_file(cases), jobs=jobs))
    assert [o.met for o in outcomes] == [True] * 4, [o.problems or o.crashed for o in outcomes]
    assert [(o.segments[0].result.reason, o.segments[0].result.turns) for o in outcomes] == [
        (StopReason.GAVE_UP, 2)
    ] * 4
