"""`endstate limits suggest --store --window` reads the runs that ended within the window, not every
run the store ever kept (each whole, its texts and state with it)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import agent.durable.store._sql as sql
from agent import Agent, Budget, NoHooks
from agent.durable.runner import Catalog, Runner
from agent.durable.store import RunStatus, open_store
from agent.durable.store.base import Listing
from agent.evals.limits import history_from_store
from agent.models.scripted import ScriptedModel, finish


def finished_runs(url: str, count: int) -> list[str]:
    catalog = Catalog()
    catalog.register(
        "quick",
        lambda state: Agent(
            "quick", ScriptedModel([[finish("done", "ok")]]), budget=Budget(max_turns=3), hooks=NoHooks()
        ),
    )
    store = open_store(url)
    runner = Runner(store, catalog, hooks=NoHooks())

    async def run_all() -> list[str]:
        return [(await runner.start("quick", f"task {i}")).run_id for i in range(count)]

    ids = asyncio.run(run_all())
    store.close()
    return ids


def age(url: str, run_ids: list[str], seconds: float) -> None:
    """Make the runs look as if they ended `seconds` ago."""
    store = open_store(url)
    assert isinstance(store, sql.SqlStore)
    when = time.time() - seconds
    for run_id in run_ids:
        store._count(
            f"UPDATE {sql.TABLE} SET ended_at = ?, updated_at = ? WHERE run_id = ?", (when, when, run_id)
        )
    store.close()


def records_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    record_of = sql.record_of

    def counting(row: Any) -> Any:
        read.append(row["run_id"])
        return record_of(row)

    monkeypatch.setattr(sql, "record_of", counting)
    return read


def test_a_window_reads_only_the_runs_that_ended_in_it(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = finished_runs(store_url, 30)
    age(store_url, ids[:25], 30 * 86400)  # a month ago
    read = records_read(monkeypatch)
    history = history_from_store(store_url, window_seconds=7 * 86400)
    assert sorted(r.run_id or "" for r in history.runs) == sorted(ids[25:])
    assert sorted(read) == sorted(ids[25:])  # was all 30: every finished run, filtered afterwards
    read.clear()
    everything = history_from_store(store_url)
    assert len(everything.runs) == 30 and len(read) == 30


def test_what_is_read_is_what_every_run_read_whole_gave(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = finished_runs(store_url, 6)
    age(store_url, ids[:2], 30 * 86400)
    narrow = history_from_store(store_url, window_seconds=7 * 86400)
    monkeypatch.setattr(sql.SqlStore, "finished_since", every_run_whole)  # as before: whole, then filtered
    whole = history_from_store(store_url, window_seconds=7 * 86400)
    assert narrow.runs == whole.runs and len(narrow.runs) == 4


def every_run_whole(store: sql.SqlStore, since: float | None, limit: int = 1_000_000) -> Listing:
    """What `limits suggest` read before the store applied the window: every finished run, whole."""
    runs = store.list_runs(RunStatus.FINISHED, limit=limit)
    return Listing([r for r in runs if since is None or (r.ended_at or r.updated_at) >= since])
