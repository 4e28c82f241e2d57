"""A migration of a SQLite store by another process (a newer Endstate opening the file, during a
rolling deploy on one host) holds the file's write lock until it commits; a run that checkpoints
meanwhile waits for it and goes on, as on PostgreSQL (tests/test_review26_migration.py).

A write of another process gave up after the store's timeout (SQLite's busy timeout), a run's
checkpoint after its few tries, and the run ended `error`. Now the migrating process holds a flag
beside the store (`runs.db-migrating`, flocked) and a write that gave up while it is held is sent
again, waiting as long as a migration may take. Two real processes on one file; the store's
timeout and the checkpoint's tries are made short so that the test is short.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from test_runner_agents import catalog, counted, counter_state, env_with_tests

from agent import StopReason
from agent.durable import _behind
from agent.durable.runner import Runner
from agent.durable.store import Lease, NewRun, RunStatus, StoreTimeout, open_store
from agent.durable.store.sqlite import flag_of, migration_under_way

# The other process: a newer Endstate (one migration more) that holds the store, once its migration
# has begun, until the file `go` exists; it writes `holding` when it holds it.
MIGRATOR = """
import sys, time
from pathlib import Path
from agent.durable.store import _sql, open_store
from agent.durable.store.sqlite import SqliteStore

path, holding, go = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
newer = [*_sql.migrations("sqlite"), (99, "CREATE TABLE added_by_a_newer_endstate (x INTEGER)")]
_sql.migrations = lambda dialect: newer
applied = SqliteStore._apply_migrations

def held(self):
    done = applied(self)
    holding.write_text("")
    while not go.exists():
        time.sleep(0.05)
    return done

SqliteStore._apply_migrations = held
open_store(path).close()
"""


@pytest.fixture
def short_tries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint that failed is tried again twice, 0.05 s apart (the default: 4 times over 7.5 s)."""
    monkeypatch.setattr(_behind, "RETRIES", (0.05, 0.05))


@pytest.fixture
def migration(tmp_path: Path) -> Iterator[Callable[[Path], Callable[[], None]]]:
    """`begin(store_path)` starts the other process's migration and returns once it holds the store;
    the function it returns lets the migration commit (and waits for the process to end)."""
    procs: list[subprocess.Popen[bytes]] = []
    holding, go = tmp_path / "holding", tmp_path / "go"

    def begin(store: Path) -> Callable[[], None]:
        argv = [sys.executable, "-c", MIGRATOR, str(store), str(holding), str(go)]
        procs.append(subprocess.Popen(argv, env=env_with_tests()))
        until(lambda: holding.exists() or procs[0].poll() is not None, "migration holding the store")
        assert procs[0].poll() is None, "the migrating process ended before it held the store"

        def commit() -> None:
            go.write_text("")
            assert procs[0].wait(timeout=60) == 0

        return commit

    yield begin
    go.write_text("")
    for proc in procs:
        if proc.poll() is None:
            proc.wait(timeout=60)


def until(check: Callable[[], bool], what: str) -> None:
    """Until `check()` is true (60 s at most)."""
    for _ in range(1200):
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"no {what}")


def waiting_for_it(caplog: pytest.LogCaptureFixture) -> Callable[[], bool]:
    return lambda: any("being migrated by another process" in r.getMessage() for r in caplog.records)


@pytest.mark.usefixtures("short_tries")
def test_a_run_that_checkpoints_during_another_process_migration_waits_for_it_and_goes_on(
    tmp_path: Path, migration: Callable[[Path], Callable[[], None]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="endstate.store")
    store_path, folder = tmp_path / "runs.db", tmp_path / "run"
    state = counter_state(folder, "hang-first")
    (folder / "hang.flag").write_text("")  # the run waits inside its first tool call until it goes
    runner = Runner(open_store(store_path, timeout=0.5), catalog())
    try:
        with ThreadPoolExecutor(1) as pool:
            run = pool.submit(asyncio.run, runner.start("counter", "count", state=state, run_id="m1"))
            until((folder / "hanging").exists, "run inside its tool call")
            commit = migration(store_path)
            (folder / "hang.flag").unlink()  # the tool's result is checkpointed while the migration holds
            until(lambda: waiting_for_it(caplog)() or run.done(), "checkpoint waiting for the migration")
            commit()
            result = run.result(timeout=120)
        assert (result.reason, result.output) == (StopReason.SUCCESS, "counted"), result.note  # was error
        assert counted(folder) == [1]
        record = runner.store.get("m1")
        assert record is not None and (record.status, record.stop_reason) == (RunStatus.FINISHED, "success")
    finally:
        runner.store.close()


def test_a_write_that_waits_for_another_process_lock_still_fails_at_the_timeout(tmp_path: Path) -> None:
    """Only a migration is waited for: a transaction another process keeps open (a sqlite3 shell left
    in BEGIN) still fails the write after the store's timeout, saying so."""
    store_path = tmp_path / "runs.db"
    store = open_store(store_path, timeout=0.3)
    other = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store_path), str(tmp_path / "holding"), str(tmp_path / "go")]
    )
    try:
        until(lambda: (tmp_path / "holding").exists() or other.poll() is not None, "a transaction held")
        assert not migration_under_way(store_path)
        with pytest.raises(StoreTimeout, match="kept a write transaction open"):
            store.create(NewRun("w1", "counter", "count", "counting"), Lease("w1", 30.0), time.time())
    finally:
        (tmp_path / "go").write_text("")
        other.wait(timeout=60)
        store.close()


HOLDER = """
import sqlite3, sys, time
from pathlib import Path
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
Path(sys.argv[2]).write_text("")
while not Path(sys.argv[3]).exists():
    time.sleep(0.05)
conn.execute("ROLLBACK")
"""


def test_the_flag_is_held_only_while_a_migration_runs(tmp_path: Path) -> None:
    store_path = tmp_path / "runs.db"
    open_store(store_path).close()  # a new store is migrated: the flag was held, and given back
    assert flag_of(store_path).exists()
    assert not migration_under_way(store_path)
