"""clock: a run of a foreign agent (OpenAI Agents SDK, Pydantic AI, LangGraph) that a runner drives sets
its help deadline by the run store's clock, as Endstate's own agents do, not by its worker's.

A runner judges deadlines by the store's clock (its sweep, the answer's time), and sets its own agents'
by it. A foreign agent's suspension was timed by the integration with this host's wall clock and
stored as it was: a worker whose clock ran an hour behind the PostgreSQL server's set a deadline an
hour early, so a day's wait for a person was cut to 23 h (and a wait shorter than the skew was swept
at once), and the wait was reckoned an hour off. The store's clock is put ahead here by giving the
store an offset clock expression (the server's own cannot be stepped by a test)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pg
import pytest
from foreign_agents import catalog

from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store
from agent.durable.store._sql import SqlStore
from agent.result import StopReason

AHEAD = 3600.0  # seconds the store's clock runs ahead of this worker's
DAY = 24 * 3600.0  # the catalog's agents wait a day for a person


@pytest.mark.parametrize("agent", ["oa-remover", "pai-deleter", "lg-deleter"])
def test_a_foreign_run_s_deadline_is_set_by_the_store_s_clock(
    agent: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(pg.url_for("postgres", tmp_path))
    assert isinstance(store, SqlStore)
    store.clock = f"({type(store).clock} + {AHEAD})"
    runner = Runner(store, catalog())
    try:
        asked = asyncio.run(runner.start(agent, "clean up a"))
        assert asked.reason is StopReason.NEED_HELP, asked.note
        record = store.get(asked.run_id)
        assert record is not None and record.deadline is not None and record.asked_at is not None
        now = store.now()
        assert -60 < now - record.asked_at < 60, now - record.asked_at  # asked now, by the store's clock
        assert DAY - 60 < record.deadline - now <= DAY, record.deadline - now  # a day left (was 23 h)
        assert asked.suspension is not None and asked.suspension.deadline == record.deadline
        assert asyncio.run(runner.resume(asked.run_id, approved=True)).reason is StopReason.SUCCESS
        done = store.get(asked.run_id)
        assert done is not None and done.status is RunStatus.FINISHED
        assert 0 <= done.waiting_seconds < 60, done.waiting_seconds  # answered at once (was an hour)
    finally:
        runner.catalog.close()
        store.close()
