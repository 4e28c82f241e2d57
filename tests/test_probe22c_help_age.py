"""`agent_help_oldest_pending_seconds` for a waiting run whose asking time the store does not know.

Before, such a run was counted by `agent_help_pending` but its age read 0: a group made only of such
runs showed requests pending with no age at all, so the stale-help alert could never fire for it,
however long they waited. The store now hands over, for such a run, when its row last changed (it
was stored waiting then, or an answer was given back): an age of at least that long, never 0, and
never older than a run whose asking time is known.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient
from test_service_defences import LOCAL, TOKEN
from test_store import lease, suspended
from test_store_waiting import gauges

from agent.durable.runner import Runner
from agent.durable.store import NewRun, Outcome, RunStore, open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token

OLDEST = "agent_help_oldest_pending_seconds"


def stored_waiting(store: RunStore, asked: Any, run_id: str, task_type: str, at: float, now: float) -> None:
    """A run stored waiting at `now` whose suspension says it asked at `at` (0: unknown)."""
    store.create(NewRun(run_id, "ci-fixer", "task", task_type, {}), lease(), now)
    asking = dataclasses.replace(asked.suspension, suspended_at=at, deadline=now + 86400)
    result = dataclasses.replace(asked, run_id=run_id, suspension=asking)
    store.record(run_id, Outcome.of(result), lease(), now)


def test_a_waiting_run_with_no_asking_time_has_the_age_of_its_row_not_zero(
    store: RunStore, make_agent: Any
) -> None:
    asked, now = suspended(make_agent), time.time()
    stored_waiting(store, asked, "untimed", "alone", 0.0, now - 7200)  # stored waiting 2 h ago
    stored_waiting(store, asked, "timed", "both", now - 600, now - 600)
    stored_waiting(store, asked, "untimed-too", "both", 0.0, now - 60)
    ages = gauges(store.pending_groups)
    assert ages[("agent_help_pending", "ci-fixer", "alone")] == 1
    assert 7190 <= ages[(OLDEST, "ci-fixer", "alone")] <= 7300
    assert 590 <= ages[(OLDEST, "ci-fixer", "both")] <= 700  # a known asking time stays the oldest


def test_pending_and_the_inbox_give_such_a_run_the_age_of_its_row_not_the_epochs(
    tmp_path: Path, make_agent: Any
) -> None:
    """Before, a suspension time of 0 (unknown) was taken as the epoch: `/pending` said the run had
    waited 56 years and the inbox "494000 h"."""
    store = open_store(str(tmp_path / "runs.db"))
    now = time.time()
    stored_waiting(store, suspended(make_agent), "untimed", "alone", 0.0, now - 7200)
    service = Service(Runner(store, example_catalog(tmp_path / "worlds")), Token(TOKEN), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url=LOCAL) as api:
            (item,) = api.get("/pending").json()["pending"]
            assert 7190 <= item["waiting_seconds"] <= 7300
            assert 'class="waited">2.0 h<' in api.get("/inbox").text
    finally:
        store.close()


def test_endstate_pending_gives_such_a_run_the_age_of_its_row_and_says_a_refused_answer(
    tmp_path: Path, make_agent: Any, capsys: Any
) -> None:
    """`endstate pending` said "waiting 0s" for it (its asking time taken as now), and did not show
    why the last answer given was not taken, which the service and the inbox show."""
    from agent.cli.main import main
    from agent.durable.store import RunStatus

    path = str(tmp_path / "runs.db")
    store = open_store(path)
    now = time.time()
    stored_waiting(store, suspended(make_agent), "untimed", "alone", 0.0, now - 7200)
    claimed = store.claim("untimed", (RunStatus.WAITING,), lease(), now, "a.py", None, 1, expired=False)
    store.release(claimed.run_id, RunStatus.WAITING, lease(), now - 7200, "the answer was not taken: X")
    store.close()

    assert main(["pending", "--store", path]) == 0
    out = capsys.readouterr().out
    assert "waiting 2.0h;" in out, out
    assert "! the answer was not taken: X" in out
