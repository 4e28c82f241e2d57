"""A PostgreSQL store that takes no writes (a standby replica, or default_transaction_read_only
on) says so and how to fix it, and changes nothing (durable47). It said only the server's
"cannot execute UPDATE in a read-only transaction", with no word of what to do."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg
import psycopg
import pytest
from test_runner_agents import catalog, counted, counter_state
from test_store import lease, suspended

from agent.durable.runner import Runner
from agent.durable.store import NewRun, StoreError, open_store
from agent.result import StopReason
from agent.snapshot import Checkpoint, SnapshotKind

NOW = 1_800_000_000.0
HINT = "takes no writes"


def read_only(url: str, on: bool) -> None:
    """Make the database read-only (or writable again) for every session that begins after this."""
    with psycopg.connect(pg.shared_server().admin_url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {url.rpartition('/')[2]} SET default_transaction_read_only = {on}")


@pytest.fixture
def url() -> Iterator[str]:
    yield pg.shared_server().new_database()


def test_an_answer_to_a_read_only_store_says_how_to_fix_it_and_is_taken_once_it_is_writable(
    url: str, tmp_path: Path
) -> None:
    runner = Runner(open_store(url), catalog())
    try:
        asked = asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / "r", "ask")))
    finally:
        runner.store.close()
    read_only(url, True)
    runner = Runner(open_store(url), catalog())
    try:
        before = runner.store.get(asked.run_id)
        with pytest.raises(StoreError, match="read-only transaction") as refused:
            asyncio.run(runner.resume(asked.run_id, "2"))
        assert HINT in str(refused.value) and "point --store at the primary" in str(refused.value)
        assert runner.store.get(asked.run_id) == before
    finally:
        runner.store.close()
    read_only(url, False)
    runner = Runner(open_store(url), catalog())
    try:
        assert asyncio.run(runner.resume(asked.run_id, "2")).reason is StopReason.SUCCESS
        assert counted(tmp_path / "r") == [1, 2]
    finally:
        runner.store.close()


def test_a_checkpoint_sent_to_a_read_only_store_says_how_to_fix_it(url: str, make_agent: Any) -> None:
    store: Any = open_store(url)
    snap = suspended(make_agent, "r1").snapshot
    assert snap is not None
    store.create(NewRun("r1", "test-agent", "pay the invoice", "default", {}), lease(), NOW)
    store.close()
    read_only(url, True)
    store = open_store(url)
    try:
        head = dataclasses.replace(snap, kind=SnapshotKind.CHECKPOINT, journal=[])
        sent = store.send_checkpoint("r1", Checkpoint(head, 0, list(snap.journal)), lease(), NOW)
        with pytest.raises(StoreError, match="read-only transaction") as refused:
            sent.result()
        assert HINT in str(refused.value)
        assert store.snapshot("r1") is None  # nothing was written
    finally:
        store.close()
