"""A run that ends in success where its case expects another stop (limit, no_progress, error,
cancelled) is a false success, as one where the case expects a give-up or a person's say already
was: the case is the eval's own word that no success can come there (a tool that changes nothing,
a budget too small for the task, a model API that is down, a host that shuts the run down), so a
run that says success there claims what the eval cannot back. Before, it was a plain FAILED beside
'False successes: 0' (and 'True success: 0 of 1': the counts did not add up)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.evals.case import load_file
from agent.evals.limits import history_from_jsonl
from agent.evals.report import case_json, render, summarize
from agent.evals.runner import Outcome, run_cases
from agent.evals.testing import check_case
from agent.result import LimitKind

TEAM = '''
from agent import Agent, Budget, tool
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, call, finish


def build(state):
    @tool
    def sync(rows: int) -> str:
        """Sync some rows."""
        return "ok"

    replies = [[call("sync", rows=n)] for n in range(state.get("calls", 1))] + [[finish("done", "synced")]]
    return Agent(name="syncer", model=ScriptedModel(replies), tools=[sync],
                 budget=Budget(max_turns=20, max_seconds=60), task_type="sync")


catalog = Catalog()
catalog.register("syncer", build)
'''

CASE = """
cases:
  - name: sync/{name}
    agent: syncer
    catalog: evals47_syncer:catalog
    state: {{calls: 2}}
    task: Sync the rows.
    task_type: sync
    expect: {expect}
"""

WHY = {
    "limit": "the case expects a budget to run out (limit)",
    "no_progress": "the case expects it to be stopped for going round in circles (no_progress)",
    "error": "the case expects the run to end in error",
    "cancelled": "the case expects the run to be cancelled",
}


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "evals47_syncer.py").write_text(textwrap.dedent(TEAM))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("evals47_syncer", None)


def _case(folder: Path, expect: str) -> Path:
    path = folder / f"{expect}.yaml"
    path.write_text(CASE.format(name=expect, expect=expect))
    return path


def _run(folder: Path, expect: str) -> Outcome:
    (outcome,) = asyncio.run(run_cases(load_file(_case(folder, expect))))
    return outcome


@pytest.mark.parametrize("expect", sorted(WHY))
def test_a_success_where_the_case_expects_another_stop_is_a_false_success(team: Path, expect: str) -> None:
    outcome = _run(team, expect)
    assert outcome.actual == ["success"] and not outcome.met
    assert outcome.false_success
    summary = summarize([outcome])
    assert summary.false_successes == (f"sync/{expect}",) and not summary.passed
    assert summary.successes == 1 and summary.true_successes == 0
    out = render([outcome], summary, "offline")
    assert "FALSE SUCCESS" in out and "False successes:  1" in out
    assert f"sync/{expect}: {WHY[expect]}" in out
    line = case_json(outcome)
    assert line["false_success"] is True and line["met"] is False


def test_the_pytest_entry_point_names_it_a_false_success(team: Path) -> None:
    (case,) = load_file(_case(team, "limit"))
    with pytest.raises(AssertionError, match="FALSE SUCCESS"):
        check_case(case)


def test_limits_do_not_size_by_it(team: Path) -> None:
    lines = [json.dumps(case_json(_run(team, e))) for e in sorted(WHY)]
    history = history_from_jsonl(lines)
    assert history.reviewed("sync").false_successes == len(WHY)
    assert history.observed("sync", LimitKind.TURNS, 0.95) is None


def test_the_command_exits_1_and_says_false_success_on_stderr_and_in_json(team: Path) -> None:
    _case(team, "no_progress")
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", "--json", "--no-progress", "no_progress.yaml"],
        capture_output=True,
        text=True,
        cwd=team,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    *cases, summary = [json.loads(line) for line in done.stdout.splitlines()]
    assert cases[0]["false_success"] is True
    assert summary["summary"]["false_successes"] == ["sync/no_progress"]
    assert "FALSE SUCCESS: sync/no_progress" in done.stderr
