"""A SQLite store that another process keeps locked, or whose calls hang, never stalls a caller past
its timeout: each call fails with `StoreTimeout` within `--store-timeout` (plus a second), reads go
on, /readyz says "not ready", a start is a 503, and nothing is lost.

Against a real second connection to the same file holding `BEGIN IMMEDIATE` or `BEGIN EXCLUSIVE`
(what a sqlite3 shell left in a transaction does); a file system that hangs is stood in for by a
statement that never ends and by a SQL function that blocks until released (a read the kernel
never returns). A call that hangs would fail the test through `in_time`'s guard (a minute: far
past any timeout here), never by timing how fast anything is.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_service_support import Server, run_status, wait_status
from test_store import checkpoint_of, lease, suspended
from test_store_hangs import GUARD, in_time, raises

from agent.durable.store import NewRun, Outcome, RunStatus, StoreTimeout, open_store

NOW = 1_800_000_000.0
RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) AS n FROM c"


@contextmanager
def locked(path: Path, begin: str = "BEGIN IMMEDIATE") -> Iterator[sqlite3.Connection]:
    """Another connection to the file (another process, as far as SQLite knows) in a write
    transaction until the block ends."""
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute(begin)
        yield other
    finally:
        other.execute("ROLLBACK")
        other.close()


@pytest.mark.parametrize("begin", ["BEGIN IMMEDIATE", "BEGIN EXCLUSIVE"])
def test_each_write_to_a_file_another_process_keeps_locked_fails_in_time_and_nothing_is_lost(
    tmp_path: Path, make_agent: Any, begin: str
) -> None:
    path = tmp_path / "runs.db"
    store = open_store(str(path), timeout=0.5)
    try:
        asked = suspended(make_agent, "asks")
        store.create(NewRun("asks", "test-agent", "pay the invoice", "default", {}), lease(), NOW)
        store.record("asks", Outcome.of(asked), lease(), NOW)
        store.create(NewRun("works", "test-agent", "pay the invoice", "default", {}), lease(), NOW)
        assert asked.snapshot is not None
        checkpoint = checkpoint_of(asked.snapshot)
        with locked(path, begin):
            error = raises(
                StoreTimeout, lambda: store.create(NewRun("new", "a", "t", "default", {}), lease(), NOW)
            )
            assert "another process kept a write transaction open on it for over 0.5 s" in str(error)
            assert "nothing was changed" in str(error)
            raises(StoreTimeout, lambda: store.checkpoint("works", checkpoint, lease(), NOW))
            raises(StoreTimeout, lambda: store.claim("asks", (RunStatus.WAITING,), lease("w2"), NOW, "yes"))
            raises(StoreTimeout, lambda: store.answers())  # type: ignore[attr-defined]
            assert [r.run_id for r in in_time(lambda: store.waiting(50))] == ["asks"]  # reads go on
            other = in_time(lambda: open_store(str(path), timeout=0.5))  # opening needs no write lock
            assert sorted(r.run_id for r in other.list_runs()) == ["asks", "works"]
            other.close()
        waiting = store.get("asks")
        assert waiting is not None and (waiting.status, waiting.segments) == (RunStatus.WAITING, 1)
        assert asked.suspension is not None and waiting.question == asked.suspension.question
        running = store.get("works")
        assert running is not None and (running.status, running.owner) == (RunStatus.RUNNING, "w1")
        assert store.get("new") is None  # refused, not half made
        store.checkpoint("works", checkpoint, lease(), NOW + 1)  # written once the lock is gone
        written = store.snapshot("works")
        assert written is not None and len(written.journal) == len(asked.snapshot.journal)
        store.answers()  # type: ignore[attr-defined]
    finally:
        store.close()


def test_a_statement_still_running_past_the_timeout_is_interrupted_and_the_store_goes_on(
    tmp_path: Path,
) -> None:
    """A statement that never ends (as one on a file system that crawls) is interrupted a second
    past the timeout: a `StoreTimeout` saying so, and in a transaction the transaction is undone."""
    store: Any = open_store(str(tmp_path / "runs.db"), timeout=0.5)

    def runaway_in_a_transaction() -> None:
        with store._tx():
            store.create(NewRun("r1", "a", "t", "default", {}), lease(), NOW)
            store._count(f"UPDATE endstate_runs SET turns = ({RUNAWAY})")

    try:
        error = raises(StoreTimeout, lambda: store._rows(RUNAWAY))
        assert "did not answer within 1.5 s, so the call was interrupted" in str(error)
        assert "--store-timeout" in str(error) and "nothing was changed" in str(error)
        raises(StoreTimeout, runaway_in_a_transaction)
        assert store.get("r1") is None and store.waited() == 0
        store.create(NewRun("r2", "a", "t", "default", {}), lease(), NOW)
        assert [r.run_id for r in store.list_runs()] == ["r2"]
    finally:
        store.close()


def test_calls_queued_behind_one_stuck_in_the_file_system_fail_in_time_and_the_store_goes_on(
    tmp_path: Path,
) -> None:
    """A call SQLite cannot interrupt (a read the kernel never returns: here a SQL function that
    blocks until released) holds the store's write connection: a call of this process queued
    behind it fails with `StoreTimeout` once it waited the timeout (plus a second), rather than for
    as long as the file system hangs; `waited` says how long the stuck call has waited (the
    service's /readyz and request queue read it); reads go on; once it returns, so do writes."""
    store: Any = open_store(str(tmp_path / "runs.db"), timeout=0.5)
    entered, release = threading.Event(), threading.Event()
    store._conn.create_function("stuck", 0, lambda: entered.set() or release.wait(GUARD))

    def stuck_write() -> None:
        with contextlib.suppress(StoreTimeout):  # interrupted once it returns, or not: either is fine
            store._count("UPDATE endstate_schema SET applied_at = applied_at WHERE stuck()")

    stuck = threading.Thread(target=stuck_write)
    try:
        store.create(NewRun("r1", "a", "t", "default", {}), lease(), NOW)
        stuck.start()
        assert entered.wait(GUARD)
        error = raises(
            StoreTimeout, lambda: store.create(NewRun("r2", "a", "t", "default", {}), lease(), NOW)
        )
        assert "a call to it from this process has not returned for over 1.5 s" in str(error)
        assert "nothing was changed" in str(error)
        assert store.waited() >= 1.0  # it waits still (since before the call that gave up after 1.5 s)
        assert in_time(lambda: store.get("r1")) is not None  # reads go on
    finally:
        release.set()
        stuck.join(GUARD)
    try:
        assert store.waited() == 0
        store.create(NewRun("r2", "a", "t", "default", {}), lease(), NOW)
        assert sorted(r.run_id for r in store.list_runs()) == ["r1", "r2"]
    finally:
        store.close()


# -- the real `endstate serve` on a file another process keeps locked -------------------------------


def test_serve_answers_not_ready_and_refuses_starts_while_another_process_keeps_the_file_locked(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    with (
        Server(str(path), tmp_path, "--store-timeout", "1", "--ready-timeout", "1") as server,
        server.client() as api,
    ):
        started = api.post("/runs", json={"agent": "invoice-downloader", "task": "Get the invoice",
                                          "state": {"scenario": "invoice/which-one"}})  # fmt: skip
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        asked = wait_status(api, run_id, "waiting")
        with locked(path):
            ready = in_time(lambda: httpx.get(f"{server.url}/readyz", timeout=GUARD))
            assert ready.status_code == 503, ready.text
            assert "store not answering" in ready.text or "write transaction open" in ready.text, ready.text
            assert in_time(lambda: httpx.get(f"{server.url}/healthz", timeout=GUARD)).status_code == 200
            refused = in_time(lambda: api.post("/runs", json={"agent": "invoice-downloader", "task": "t"}))
            assert refused.status_code == 503, refused.text
            said = refused.json()["error"]  # the lock's holder named, or the call it queued behind
            assert "nothing was changed" in said, said
            reasons = ("write transaction open", "queued behind", "not returned")
            assert any(why in said for why in reasons), said
            assert run_status(api, run_id)["status"] == "waiting"  # reads answer meanwhile
        wait_ready = lambda: httpx.get(f"{server.url}/readyz", timeout=GUARD).status_code == 200  # noqa: E731
        assert in_time(lambda: any(wait_ready() for _ in range(200))), "ready again once the lock is gone"
        again = run_status(api, run_id)
        assert (again["status"], again["segments"], again["question"]) == ("waiting", asked["segments"],
                                                                            asked["question"])  # fmt: skip
        assert [r["run_id"] for r in api.get("/runs").json()["runs"]] == [
            run_id
        ]  # the refused one: not stored
        answered = api.post(f"/runs/{run_id}/answer", json={"answer": "the March one"})
        assert answered.status_code == 202, answered.text
        assert wait_status(api, run_id, "finished")["stop_reason"] == "success"
