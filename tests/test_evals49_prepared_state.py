"""A catalog case's state is checked as a start checks it. A `prepare` that forgot its `return`
failed the case with its `cleanup`'s error on None (`'NoneType' object is not subscriptable`),
hiding the cause; and a state no store can keep (a YAML date, unquoted) passed the eval while
`endstate start` would refuse the same state."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeAlias

import pytest

from agent.evals.case import load_file
from agent.evals.runner import Outcome, run_case

Writer: TypeAlias = Callable[[str], Path]  # writes the case file, with more of its state

TEAM = """
import shutil
from pathlib import Path

from agent import Agent, Budget
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, finish


def prepare(state, run_id):
    folder = Path(state["base"]) / run_id
    folder.mkdir()
    state = {**state, "workdir": str(folder)}
    return None if state.get("forget") else state


def cleanup(state):
    shutil.rmtree(state["workdir"])


def build(state):
    return Agent(name="fetcher", model=ScriptedModel([[finish("give_up", "the portal is down")]]),
                 budget=Budget(max_turns=3, max_seconds=60), task_type="fetch")


catalog = Catalog()
catalog.register("fetcher", build, prepare=prepare, cleanup=cleanup)
"""

CASE = """
cases:
  - name: fetch/down
    agent: fetcher
    catalog: evals49_prepared:catalog
    state: {{base: "{base}", {more}}}
    task: Fetch the invoice.
    task_type: fetch
    expect: gave_up
"""


@pytest.fixture
def write_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Writer]:
    (tmp_path / "evals49_prepared.py").write_text(textwrap.dedent(TEAM))
    (tmp_path / "worlds").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(more: str) -> Path:
        path = tmp_path / "cases.yaml"
        path.write_text(CASE.format(base=tmp_path / "worlds", more=more))
        return path

    yield write
    sys.modules.pop("evals49_prepared", None)


def _outcome(path: Path) -> Outcome:
    (case,) = load_file(path)
    return asyncio.run(run_case(case))


def test_a_prepare_that_returns_no_state_is_named_not_its_cleanups_error(write_case: Writer) -> None:
    outcome = _outcome(write_case("forget: true"))
    assert not outcome.met
    said = outcome.crashed
    assert "its catalog entry's prepare returned NoneType, not the run's state (a dict)" in said
    assert "subscriptable" not in said


def test_a_state_no_store_keeps_fails_the_case_as_a_start_would(write_case: Writer, tmp_path: Path) -> None:
    outcome = _outcome(write_case("since: 2026-01-01"))
    said = outcome.crashed
    assert "the state its catalog entry's prepare returned cannot be stored" in said and "date" in said
    assert list((tmp_path / "worlds").iterdir()) == []  # its cleanup still ran


def test_a_json_state_runs_as_before(write_case: Writer, tmp_path: Path) -> None:
    outcome = _outcome(write_case('since: "2026-01-01"'))
    assert outcome.met, outcome.problems
    assert list((tmp_path / "worlds").iterdir()) == []
