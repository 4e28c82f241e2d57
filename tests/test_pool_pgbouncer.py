"""The PostgreSQL store behind a real PgBouncer (Debian's 1.18), as many teams run it (pool).

In `pool_mode = transaction` PgBouncer gives each transaction whichever server connection is free:
what a session keeps (prepared statements, advisory locks, `SET`) is not the client's any more. The
store's named prepared statements then clashed with another client's ("prepared statement
endstate_checkpoint_0 already exists") at the first checkpoint of the second store, and its start
lock stayed on a server connection that other clients then used. With `?pool_mode=transaction` on
the URL it uses none of these; without it, a pooler's error says to add it. `pool_mode = session`
works as a direct connection does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg
import psycopg
import pytest
from old_stores import write_old_store
from pgbouncer import PgBouncer
from test_runner_agents import (
    a_run_whose_worker_died,
    catalog,
    counted,
    counter_state,
    lease_ran_out,
)
from test_service_support import Server, endstate, spawn, wait_for, wait_status
from test_store import checkpoint_of, lease, suspended

from agent.durable.runner import Runner
from agent.durable.store import NewRun, StartingNow, StoreError, open_store
from agent.durable.store._sql import latest_version
from agent.result import StopReason

NOW = 1_800_000_000.0
CATALOG = "test_runner_agents:catalog"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def transaction_pool() -> Iterator[PgBouncer]:
    bouncer = PgBouncer(pg.shared_server(), "transaction", pool_size=4)
    yield bouncer
    bouncer.stop()


@pytest.fixture(scope="module")
def session_pool() -> Iterator[PgBouncer]:
    bouncer = PgBouncer(pg.shared_server(), "session", pool_size=8)
    yield bouncer
    bouncer.stop()


def pooled(bouncer: PgBouncer, option: str = "?pool_mode=transaction") -> str:
    """A fresh database's URL through `bouncer`, with `option`."""
    return bouncer.url(pg.shared_server().new_database()) + option


def asked_and_answered(url: str, folder: Path, task: str) -> list[StopReason]:
    """A counter run started on its own store object (as a process would), suspended, then answered
    from another store object: the reasons of its two segments."""
    runner = Runner(open_store(url), catalog())
    try:
        asked = asyncio.run(runner.start("counter", task, state=counter_state(folder, "ask")))
    finally:
        runner.store.close()
    runner = Runner(open_store(url), catalog())
    try:
        answered = asyncio.run(runner.resume(asked.run_id, "2"))
    finally:
        runner.store.close()
    return [asked.reason, answered.reason]


def test_runs_checkpoint_suspend_and_are_answered_through_transaction_pooling(
    transaction_pool: PgBouncer, tmp_path: Path
) -> None:
    url = pooled(transaction_pool)
    for i in range(3):  # one after another: each store finds the server connections the last one used
        assert asked_and_answered(url, tmp_path / f"seq{i}", f"t{i}") == [
            StopReason.NEED_HELP,
            StopReason.SUCCESS,
        ]
    with concurrent.futures.ThreadPoolExecutor(6) as pool:  # more stores than server connections
        done = list(pool.map(lambda i: asked_and_answered(url, tmp_path / f"par{i}", f"p{i}"), range(6)))
    assert done == [[StopReason.NEED_HELP, StopReason.SUCCESS]] * 6
    for i in range(3):
        assert counted(tmp_path / f"seq{i}") == [1, 2]


def test_a_run_whose_worker_died_is_recovered_through_transaction_pooling(
    transaction_pool: PgBouncer, tmp_path: Path
) -> None:
    url = pooled(transaction_pool)
    job = a_run_whose_worker_died(url, tmp_path / "r")
    lease_ran_out(url, job)
    runner = Runner(open_store(url), catalog())
    try:
        results = asyncio.run(runner.recover())
    finally:
        runner.store.close()
    assert [r.reason for r in results] == [StopReason.SUCCESS]


def test_without_the_option_a_prepared_statement_clash_says_what_to_do(
    transaction_pool: PgBouncer, make_agent: Any
) -> None:
    url = pooled(transaction_pool, option="")
    snap = suspended(make_agent, "r").snapshot
    assert snap is not None
    stores: list[Any] = []
    try:
        with pytest.raises(StoreError) as failed:
            for i in range(transaction_pool.pool_size + 1):  # a server connection prepared by two of them
                store: Any = open_store(url)
                stores.append(store)
                store.create(NewRun(f"r{i}", "test-agent", "t", "default", {}), lease(), NOW)
                store.send_checkpoint(f"r{i}", checkpoint_of(snap), lease(), NOW).result()
        said = str(failed.value)
        assert "prepared statement" in said
        assert "pool_mode=transaction" in said and "session" in said
    finally:
        for store in stores:
            store.close()


def test_a_start_holds_its_run_id_through_transaction_pooling(transaction_pool: PgBouncer) -> None:
    url = pooled(transaction_pool)
    first: Any = open_store(url)
    second: Any = open_store(url)
    try:
        with first.starting("x"):
            # the second may land on the server connection the first used
            with pytest.raises(StartingNow), second.starting("x"):
                pass
            with second.starting("y"):
                pass
        for _ in range(transaction_pool.pool_size + 1):  # let go on every server connection
            with second.starting("x"):
                pass
    finally:
        first.close()
        second.close()


def test_the_store_leaves_no_session_setting_on_a_shared_server_connection(
    transaction_pool: PgBouncer,
) -> None:
    url = pooled(transaction_pool)
    store: Any = open_store(url)
    try:
        store.create(NewRun("r", "test-agent", "t", "default", {}), lease(), NOW)
    finally:
        store.close()
    bare = transaction_pool.url(url.partition("?")[0])
    with psycopg.connect(bare, autocommit=True, prepare_threshold=None) as conn:
        for _ in range(transaction_pool.pool_size):
            row = conn.execute("SELECT current_setting('lock_timeout')").fetchone()
            assert row is not None and row[0] == "0"


def test_runs_are_answered_through_session_pooling_with_a_plain_url(
    session_pool: PgBouncer, tmp_path: Path
) -> None:
    url = pooled(session_pool, option="")
    for i in range(3):
        assert asked_and_answered(url, tmp_path / f"s{i}", f"s{i}") == [
            StopReason.NEED_HELP,
            StopReason.SUCCESS,
        ]


@pytest.mark.parametrize(
    ("pool", "option"), [("transaction_pool", "?pool_mode=transaction"), ("session_pool", "")]
)
def test_serve_starts_and_answers_runs_through_pgbouncer(
    pool: str, option: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = pooled(request.getfixturevalue(pool), option)
    body = {"agent": "counter", "task": "count", "state": counter_state(tmp_path / "q", "ask")}
    with Server(url, tmp_path, catalog="test_runner_agents:catalog") as server:
        with server.client() as api:
            run_id = api.post("/runs", json=body).json()["run_id"]
            wait_status(api, run_id, "waiting")
            assert api.post(f"/runs/{run_id}/answer", json={"answer": "2"}).status_code == 202
            assert wait_status(api, run_id, "finished")["stop_reason"] == "success"
        said = server.log.read_text()
    assert counted(tmp_path / "q") == [1, 2]
    assert "Traceback" not in said and "failed" not in said, said


def test_a_pool_mode_the_store_does_not_know_is_refused_saying_which_it_takes() -> None:
    with pytest.raises(StoreError, match=r"pool_mode=transaction .* or pool_mode=session") as refused:
        open_store("postgresql://app:s3cret-pw@127.0.0.1:1/db?sslmode=disable&pool_mode=statement")
    assert "'statement'" in str(refused.value) and "s3cret-pw" not in str(refused.value)


def test_a_role_without_timeouts_behind_transaction_pooling_is_warned_of(
    transaction_pool: PgBouncer, caplog: pytest.LogCaptureFixture
) -> None:
    url = pooled(transaction_pool)
    open_store(url).close()
    warned = [r.getMessage() for r in caplog.records if "pool_mode=transaction" in r.getMessage()]
    assert len(warned) == 1 and "ALTER ROLE postgres SET statement_timeout = '10s'" in warned[0]
    assert "ALTER ROLE postgres SET lock_timeout = '5s'" in warned[0]
    assert "default_transaction_isolation" not in warned[0]  # read committed, PostgreSQL's default
    caplog.clear()
    bounded = pg.shared_server().new_database()  # set before PgBouncer opens a connection to it
    with psycopg.connect(pg.shared_server().admin_url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {bounded.rpartition('/')[2]} SET statement_timeout = '10s'")
        conn.execute(f"ALTER DATABASE {bounded.rpartition('/')[2]} SET lock_timeout = '5s'")
    open_store(transaction_pool.url(bounded) + "?pool_mode=transaction").close()
    assert not [r for r in caplog.records if "pool_mode=transaction" in r.getMessage()]
    repeatable = pg.shared_server().new_database()
    with psycopg.connect(pg.shared_server().admin_url, autocommit=True) as conn:
        for setting in (
            "statement_timeout = '10s'",
            "lock_timeout = '5s'",
            "default_transaction_isolation = 'repeatable read'",
        ):
            conn.execute(f"ALTER DATABASE {repeatable.rpartition('/')[2]} SET {setting}")
    open_store(transaction_pool.url(repeatable) + "?pool_mode=transaction").close()
    [warned_once] = [r.getMessage() for r in caplog.records if "pool_mode=transaction" in r.getMessage()]
    assert "(ALTER ROLE postgres SET default_transaction_isolation = 'read committed')" in warned_once


def test_a_worker_killed_mid_run_through_transaction_pooling_is_recovered(
    transaction_pool: PgBouncer, tmp_path: Path
) -> None:
    url = pooled(transaction_pool)
    folder = tmp_path / "run"
    state = counter_state(folder, "hang")
    (folder / "hang.flag").write_text("block")  # the third turn's hang() blocks until this is removed
    proc = spawn(
        "start", "counter", "count to five", "--state", json.dumps(state), "--catalog", CATALOG,
        store=url, log=tmp_path / "start.log",
    )  # fmt: skip
    try:
        wait_for(lambda: counted(folder) == [1, 2, 3], what="three counts")
        wait_for(lambda: _turns(url) == 3, what="the third turn's checkpoint")
    finally:
        proc.kill()  # SIGKILL, with PgBouncer holding its connections
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    (folder / "hang.flag").unlink()
    done = endstate("recover", "--catalog", CATALOG, store=url)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "1 run recovered or swept" in done.stdout
    assert counted(folder) == [1, 2, 3, 4, 5]  # count(3), recorded, is not run again


def _turns(url: str) -> int:
    store = open_store(url)
    try:
        runs = store.list_runs(limit=None)
        return runs[0].turns if runs else 0
    finally:
        store.close()


def test_a_client_connection_pgbouncer_closed_for_idling_is_replaced_before_the_next_call(
    tmp_path: Path,
) -> None:
    bouncer = PgBouncer(pg.shared_server(), "transaction", extra="client_idle_timeout = 1\n")
    try:
        url = pooled(bouncer)
        runner = Runner(open_store(url), catalog())
        try:
            time.sleep(2.5)  # PgBouncer closes the store's connections (it looks every second or so)
            asked = asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / "r", "ask")))
            assert asked.reason is StopReason.NEED_HELP, asked.note
            time.sleep(2.5)
            assert asyncio.run(runner.resume(asked.run_id, "2")).reason is StopReason.SUCCESS
        finally:
            runner.store.close()
    finally:
        bouncer.stop()
    assert counted(tmp_path / "r") == [1, 2]


def test_a_pool_whose_server_connections_starts_hold_says_so_when_a_call_gives_up() -> None:
    bouncer = PgBouncer(pg.shared_server(), "transaction", pool_size=1)
    try:
        store: Any = open_store(pooled(bouncer), timeout=1)
        try:
            with store.starting("x"), pytest.raises(StoreError) as stalled:
                store.get("x")  # waits in PgBouncer's queue for the one server connection, held
        finally:
            store.close()
    finally:
        bouncer.stop()
    assert "default_pool_size" in str(stalled.value)


def test_a_store_is_migrated_through_transaction_pooling(transaction_pool: PgBouncer, tmp_path: Path) -> None:
    direct = pg.shared_server().new_database()
    write_old_store(direct, 10, [])
    url = transaction_pool.url(direct) + "?pool_mode=transaction"
    with concurrent.futures.ThreadPoolExecutor(3) as pool:  # three processes opening it at once
        stores = list(pool.map(lambda _: open_store(url), range(3)))
    for store in stores:
        assert store.schema_version() == latest_version("postgres")
        store.close()
    assert asked_and_answered(url, tmp_path / "r", "t") == [StopReason.NEED_HELP, StopReason.SUCCESS]


@pytest.mark.parametrize(
    ("url", "rest", "mode"),
    [
        (
            "postgresql://a:p?w&x@h:6432/db?pool_mode=transaction",
            "postgresql://a:p?w&x@h:6432/db",
            "transaction",
        ),
        (
            "postgresql://h/db?sslmode=require&pool_mode=session&x=1",
            "postgresql://h/db?sslmode=require&x=1",
            "session",
        ),
        ("postgresql://h/db?sslmode=require", "postgresql://h/db?sslmode=require", None),
        ("postgresql://h/pool_mode=transaction", "postgresql://h/pool_mode=transaction", None),
    ],
)
def test_the_pool_mode_option_is_taken_out_of_the_url_and_nothing_else(
    url: str, rest: str, mode: str | None
) -> None:
    from agent.durable.store.urls import take_option

    assert take_option(url, "pool_mode") == (rest, mode)


def test_without_the_option_no_statement_runs_under_a_name_another_client_prepared(
    transaction_pool: PgBouncer,
) -> None:
    """psycopg prepares a statement run five times as `_pg3_0`, `_pg3_1`, ... on whichever server
    connection the pooler gave it; every client names its own so. A later run of it on another
    server connection found nothing by that name (an error), or another client's statement of that
    name, which ran in its place with this one's values. The store's own connection prepares none."""
    url = pooled(transaction_pool, option="")
    store: Any = open_store(url)
    try:
        store.create(NewRun("r", "test-agent", "t", "default", {}), lease(), NOW)
        for _ in range(6):  # prepared by psycopg, if it prepares, on the server connection it has
            assert store.get("r") is not None
        with psycopg.connect(transaction_pool.url(url), prepare_threshold=None) as holder:
            holder.execute("SELECT 1")  # in a transaction: that server connection is the holder's now
            for _ in range(3):
                assert store.get("r") is not None
    finally:
        store.close()
