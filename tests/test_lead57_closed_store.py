"""A PostgreSQL store used after `close()` (a late callback's write, a heartbeat, a checkpoint sent by a
run cut off at shutdown) opened a new connection that nobody closed, left open until the garbage
collector found it (a `ResourceWarning` in CI, and a server connection held meanwhile). Now each such
call is a `StoreError` saying the store was closed, as SQLite's closed connection refuses it, and no
connection is opened."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest
from pg import shared_server
from test_store import suspended

from agent.durable.store import Lease, NewRun, StoreError, open_store
from agent.journal import Note
from agent.snapshot import Checkpoint, SnapshotKind


def _server_connections(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        mine = "datname = current_database() AND pid <> pg_backend_pid()"
        row = conn.execute(f"SELECT count(*) FROM pg_stat_activity WHERE {mine}").fetchone()
    assert row is not None
    return int(row[0])


def test_a_closed_postgres_store_opens_no_connection_for_a_late_call(make_agent: Any) -> None:
    snap = suspended(make_agent, "r1").snapshot
    assert snap is not None
    head = dataclasses.replace(snap, kind=SnapshotKind.CHECKPOINT, journal=[])
    url = shared_server().new_database()
    store = open_store(url)
    lease = Lease("w", 30.0)
    store.create(NewRun("r1", "x", "task", "general", {}), lease, time.time())
    store.close()
    before = _server_connections(url)
    with pytest.raises(StoreError, match="was closed"):
        store.get("r1")
    with pytest.raises(StoreError, match="was closed"):
        store.heartbeat(lease, ["r1"])
    with pytest.raises(StoreError, match="was closed"), store.starting("r2"):  # type: ignore[attr-defined]
        pass
    checkpoint = Checkpoint(head, 0, [Note("late")])
    sent = store.send_checkpoint("r1", checkpoint, lease, time.time())  # type: ignore[attr-defined]
    with pytest.raises(StoreError, match="was closed"):
        sent.result()
    assert _server_connections(url) == before  # nothing was opened behind the closed store
