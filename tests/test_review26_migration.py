"""review26: a migration of a PostgreSQL store (a newer Endstate opening it, during a rolling deploy)
holds the tables until it commits; a run that checkpoints meanwhile loses nothing, and no lease runs
out for the time it took.

Each statement of another process gave up waiting for the migration's lock after `LOCK_TIMEOUT`, and
a run's checkpoint after a few tries (about 30 s at the defaults): a migration that took longer (an
index built over every run) ended the runs in flight as `error`. Now a statement that gave up while a
migration holds the store is sent again, waiting for it as long as a migration may take. Against a
real PostgreSQL; the lock timeout and the checkpoint's tries are made short so the test is short.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from pg import shared_server
from test_runner_agents import catalog, counted, counter_state

from agent import StopReason
from agent.durable import _behind
from agent.durable.runner import Runner
from agent.durable.store import Lease, NewRun, NotClaimable, RunStatus, _sql, open_store
from agent.durable.store.postgres import MIGRATION_LOCK

LEASE = 3.0  # seconds of the lease a migration outlasts
HOLD = 3.0  # seconds the migration holds the store past the first wait: twice a checkpoint's tries


@pytest.fixture
def store_url() -> str:
    """A new database whose sessions give up a lock wait after 0.5 s (the default is 5 s)."""
    return shared_server().new_database() + "?options=-c%20lock_timeout%3D500ms"


@pytest.fixture
def short_tries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint that failed is tried again twice, 0.05 s apart (the default: 4 times over 7.5 s):
    with the 0.5 s lock timeout, it gives up after about 1.5 s."""
    monkeypatch.setattr(_behind, "RETRIES", (0.05, 0.05))


@pytest.fixture
def migration(store_url: str) -> Iterator[threading.Event]:
    """Call `set()` to begin a migration as `PostgresStore._migrate` makes one (the migration lock,
    a change to the runs table), which commits once another session has waited on it `HOLD` s."""
    begin, url = threading.Event(), store_url.partition("?")[0]

    def migrate() -> None:
        begin.wait()
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            conn.execute("ALTER TABLE endstate_runs ADD COLUMN added_by_a_newer_endstate INTEGER")
            begin.clear()  # it holds the table now
            waiting_for(url, "a session waiting for the migration's lock")
            time.sleep(HOLD)

    thread = threading.Thread(target=migrate)
    thread.start()
    yield begin
    begin.set()
    thread.join()


def waiting_for(url: str, what: str) -> None:
    """Until a session waits for a lock on this database (30 s at most)."""
    sql = "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE NOT l.granted"
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(600):
            if conn.execute(sql).fetchone()[0]:  # type: ignore[index]
                return
            time.sleep(0.05)
    raise AssertionError(f"no {what}")


def until(check: Callable[[], bool], what: str) -> None:
    """Until `check()` is true (30 s at most)."""
    for _ in range(600):
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"no {what}")


@pytest.mark.usefixtures("short_tries")
def test_a_run_that_checkpoints_during_a_migration_waits_for_it_and_goes_on(
    store_url: str, tmp_path: Path, migration: threading.Event
) -> None:
    folder = tmp_path / "run"
    state = counter_state(folder, "hang-first")
    (folder / "hang.flag").write_text("")  # the run waits inside its first tool call until it goes
    runner = Runner(open_store(store_url), catalog())
    try:
        with ThreadPoolExecutor(1) as pool:
            run = pool.submit(asyncio.run, runner.start("counter", "count", state=state, run_id="m1"))
            until((folder / "hanging").exists, "run inside its tool call")
            migration.set()
            until(lambda: not migration.is_set(), "migration holding the runs table")
            (folder / "hang.flag").unlink()  # the tool's result is checkpointed while the migration holds
            result = run.result(timeout=120)
        assert (result.reason, result.output) == (StopReason.SUCCESS, "counted")  # was error
        assert counted(folder) == [1]
        record = runner.store.get("m1")
        assert record is not None and (record.status, record.stop_reason) == (RunStatus.FINISHED, "success")
    finally:
        runner.store.close()


def test_a_migration_longer_than_a_lease_gives_the_leases_back_the_time_it_took(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No worker can renew a lease while a migration holds the runs table: without the time back, a
    live worker's run was taken over the moment a migration longer than its lease committed."""
    url = shared_server().new_database()
    store = open_store(url)
    try:
        store.create(NewRun("l1", "counter", "count", "counting"), Lease("w1", LEASE), time.time())
        slow = [*_sql.migrations("postgres"), (99, f"SELECT pg_sleep({LEASE + 1})")]
        monkeypatch.setattr(_sql, "migrations", lambda dialect: slow)
        open_store(url).close()  # a newer Endstate migrates the store, for longer than the lease
        with pytest.raises(NotClaimable):  # was taken over: the lease had run out meanwhile
            store.take_over("l1", "w1", Lease("w2", 30.0), time.time(), only_lapsed=True)
        record = store.get("l1")
        assert record is not None and record.owner == "w1"
    finally:
        store.close()
