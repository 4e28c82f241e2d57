"""store54: `PostgresStore.checkpoint` (a checkpoint written and waited for, as the service's runner and
every retry of a failed checkpoint write them) goes through the statement the sender prepares, not
psycopg's cursor. What the cursor's path did besides stays: a checkpoint that meets a migration of the
schema waits for it and lands, a lost lease is said as before, and a checkpoint sent twice stores its
entries once. Against a real PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pg import shared_server
from test_store import NOW, checkpoint_of, lease, started, suspended

from agent.durable.store import LeaseLost, open_store
from agent.durable.store.postgres import MIGRATION_LOCK, PostgresStore

HOLD = 1.5  # seconds a migration holds the runs table once a checkpoint waits for it (3 lock timeouts)


@pytest.fixture
def store() -> Iterator[Any]:
    """A store on a new database whose sessions give up a lock wait after 0.5 s (the default is 5 s)."""
    opened = open_store(shared_server().new_database() + "?options=-c%20lock_timeout%3D500ms")
    assert isinstance(opened, PostgresStore)
    yield opened
    opened.close()


def migrate_while_waited_for(url: str, begun: threading.Event) -> None:
    """What a newer Endstate's migration does (the migration lock, a change to the runs table), held
    until a session waits for it and `HOLD` s more: past the waiting statement's lock timeout."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute("ALTER TABLE endstate_runs ADD COLUMN added_by_a_newer_endstate INTEGER")
        begun.set()
        waiting = "SELECT count(*) FROM pg_locks WHERE NOT granted"
        with psycopg.connect(url, autocommit=True) as look:
            for _ in range(600):  # 30 s at most
                if look.execute(waiting).fetchone()[0]:  # type: ignore[index]
                    break
                time.sleep(0.05)
        time.sleep(HOLD)


def test_a_checkpoint_that_meets_a_migration_waits_for_it_and_lands(store: Any, make_agent: Any) -> None:
    snap = suspended(make_agent).snapshot
    assert snap is not None
    started(store)
    begun = threading.Event()
    url = store.url.partition("?")[0]
    migration = threading.Thread(target=migrate_while_waited_for, args=(url, begun))
    migration.start()
    try:
        assert begun.wait(30)
        store.checkpoint("r1", checkpoint_of(snap), lease(), NOW)  # gave up its lock wait, then waited
    finally:
        migration.join()
    written = store.snapshot("r1")
    assert written is not None and written.journal == snap.journal


def test_a_checkpoint_under_a_lease_another_worker_holds_is_refused(store: Any, make_agent: Any) -> None:
    snap = suspended(make_agent).snapshot
    assert snap is not None
    started(store)
    with pytest.raises(LeaseLost, match="r1 is no longer held by w2; another worker took it over"):
        store.checkpoint("r1", checkpoint_of(snap), lease("w2"), NOW)
    record = store.get("r1")
    assert record is not None and record.journal_length == 0  # nothing of it was written


def test_a_checkpoint_written_twice_stores_its_entries_once(store: Any, make_agent: Any) -> None:
    snap = suspended(make_agent).snapshot
    assert snap is not None
    started(store)
    store.checkpoint("r1", checkpoint_of(snap), lease(), NOW)
    store.checkpoint("r1", checkpoint_of(snap), lease(), NOW + 1)  # its answer was lost, say: sent again
    written = store.snapshot("r1")
    assert written is not None and written.journal == snap.journal
