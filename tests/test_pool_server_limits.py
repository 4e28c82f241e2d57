"""The PostgreSQL store under the limits a DBA sets on the server (pool).

`idle_session_timeout` (PostgreSQL 14+) ends a connection left idle that long: the store's next call
found out only by sending its statement, which failed ("terminating connection due to idle-session
timeout"): a service idle for a while refused the next start with a 503. The store now sees the
connection ended before it sends, and connects again. A start's hold on its run id (see
`PostgresStore.starting`) outlives both idle timeouts and holds back no vacuum. A `statement_timeout`
or `lock_timeout` the role or database sets says where to raise it (`--store-timeout` does not change
a role's), a checkpoint sent ahead included.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg
import psycopg
import pytest
from test_runner_agents import catalog, counted, counter_state
from test_store import checkpoint_of, lease, suspended

from agent.durable.runner import Runner
from agent.durable.store import NewRun, RunStatus, StartingNow, StoreError, open_store
from agent.result import StopReason

NOW = 1_800_000_000.0
IDLE = 0.3  # seconds: the idle timeouts these tests set


@pytest.fixture
def url() -> Iterator[str]:
    yield pg.shared_server().new_database()


def database_sets(url: str, **settings: str) -> None:
    """`ALTER DATABASE ... SET` each setting, for every session that begins after this."""
    with psycopg.connect(pg.shared_server().admin_url, autocommit=True) as conn:
        for name, value in settings.items():
            conn.execute(f"ALTER DATABASE {url.rpartition('/')[2]} SET {name} = '{value}'")


def test_a_connection_the_server_ended_for_idling_is_replaced_before_the_next_call(
    url: str, tmp_path: Path
) -> None:
    open_store(url).close()
    database_sets(url, idle_session_timeout=f"{round(IDLE * 1000)}ms")
    runner = Runner(open_store(url), catalog())
    try:
        for i in range(2):  # each call after an idle spell: a start, an answer
            time.sleep(IDLE * 2)
            asked = asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / f"r{i}", "ask")))
            assert asked.reason is StopReason.NEED_HELP, asked.note
            time.sleep(IDLE * 2)
            assert asyncio.run(runner.resume(asked.run_id, "2")).reason is StopReason.SUCCESS
            assert counted(tmp_path / f"r{i}") == [1, 2]
    finally:
        runner.store.close()


def test_a_start_holds_its_run_id_past_the_servers_idle_timeouts(url: str) -> None:
    open_store(url).close()
    idle = f"{round(IDLE * 1000)}ms"
    database_sets(url, idle_session_timeout=idle, idle_in_transaction_session_timeout=idle)
    first, second = open_store(url), open_store(url)
    try:
        with first.starting("x"):  # type: ignore[attr-defined]
            time.sleep(IDLE * 3)  # its catalog's prepare runs
            with pytest.raises(StartingNow), second.starting("x"):  # type: ignore[attr-defined]
                pass
        with second.starting("x"):  # type: ignore[attr-defined]
            pass
    finally:
        first.close()
        second.close()


def test_a_statement_timeout_the_role_sets_says_where_to_raise_it(url: str, tmp_path: Path) -> None:
    runner = Runner(open_store(url), catalog())
    try:
        asked = asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / "r", "ask")))
    finally:
        runner.store.close()
    database_sets(url, statement_timeout="300ms")
    runner = Runner(open_store(url), catalog())
    try:
        with psycopg.connect(url) as holder:  # an open transaction holds the run's row past it
            holder.execute("SELECT 1 FROM endstate_runs WHERE run_id = %s FOR UPDATE", (asked.run_id,))
            with pytest.raises(StoreError, match="statement timeout") as refused:
                asyncio.run(runner.resume(asked.run_id, "2"))
        said = str(refused.value)
        assert "ALTER ROLE" in said and "options=-c%20statement_timeout" in said
        record = runner.store.get(asked.run_id)
        assert record is not None and record.status is RunStatus.WAITING  # nothing changed
        assert asyncio.run(runner.resume(asked.run_id, "2")).reason is StopReason.SUCCESS
    finally:
        runner.store.close()


def test_a_url_may_raise_the_statement_timeout_as_the_hint_says(url: str) -> None:
    database_sets(url, statement_timeout="300ms")
    store = open_store(url + "?options=-c%20statement_timeout%3D5s")
    try:
        assert store._rows("SELECT pg_sleep(0.5), 1 AS n")[0]["n"] == 1  # type: ignore[attr-defined]
    finally:
        store.close()


def test_a_checkpoint_ended_at_the_statement_timeout_says_where_to_raise_it(
    url: str, make_agent: Any
) -> None:
    store: Any = open_store(url)
    store.create(NewRun("r1", "test-agent", "t", "default", {}), lease(), NOW)
    store.close()
    database_sets(url, statement_timeout="300ms")
    snap = suspended(make_agent, "r1").snapshot
    assert snap is not None
    store = open_store(url)
    try:
        with psycopg.connect(url) as holder:  # an open transaction holds the run's row past it
            holder.execute("SELECT 1 FROM endstate_runs WHERE run_id = 'r1' FOR UPDATE")
            sent = store.send_checkpoint("r1", checkpoint_of(snap), lease(), NOW)
            with pytest.raises(StoreError, match="statement timeout") as refused:
                sent.result()
        assert "ALTER ROLE ... SET statement_timeout" in str(refused.value)
        assert store.snapshot("r1") is None  # nothing was written
    finally:
        store.close()


def test_a_lock_timeout_the_role_sets_says_where_to_raise_it(url: str, tmp_path: Path) -> None:
    runner = Runner(open_store(url), catalog())
    try:
        asked = asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / "r", "ask")))
    finally:
        runner.store.close()
    database_sets(url, lock_timeout="100ms")  # shorter than another worker's write may hold a row
    runner = Runner(open_store(url), catalog())
    try:
        with psycopg.connect(url) as holder:
            holder.execute("SELECT 1 FROM endstate_runs WHERE run_id = %s FOR UPDATE", (asked.run_id,))
            with pytest.raises(StoreError, match="lock timeout") as refused:
                asyncio.run(runner.resume(asked.run_id, "2"))
        assert "ALTER ROLE ... SET lock_timeout" in str(refused.value)
        assert asyncio.run(runner.resume(asked.run_id, "2")).reason is StopReason.SUCCESS
    finally:
        runner.store.close()


def test_a_start_holding_its_run_id_holds_back_no_vacuum(url: str) -> None:
    """The hold is a transaction left open while the start's prepare runs (up to 5 minutes): it keeps
    no snapshot, so the server's vacuum may still remove the row versions the runs leave behind."""
    store: Any = open_store(url)
    try:
        with store.starting("x"), psycopg.connect(url, autocommit=True) as look:
            held = look.execute(
                "SELECT backend_xmin FROM pg_stat_activity WHERE datname = current_database() "
                "AND state = 'idle in transaction'"
            ).fetchall()
        assert held == [(None,)]
    finally:
        store.close()


def test_an_isolation_level_the_database_sets_changes_no_claim(url: str, tmp_path: Path) -> None:
    """A database whose transactions default to repeatable read (or serializable): an answer that
    waited for the run's row while another session changed it failed, 'could not serialize access
    due to concurrent update', where read committed (which the store's claims are written for) reads
    the row as it is now and goes on. The store's sessions read committed, whatever the default."""
    runner = Runner(open_store(url), catalog())
    try:
        asked = asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / "r", "ask")))
    finally:
        runner.store.close()
    database_sets(url, default_transaction_isolation="repeatable read")
    runner = Runner(open_store(url), catalog())
    try:
        outcome: list[Any] = []
        with psycopg.connect(url) as holder:  # another session's write to the row, not yet committed
            holder.execute("UPDATE endstate_runs SET segments = segments WHERE run_id = %s", (asked.run_id,))
            answering = threading.Thread(target=lambda: outcome.append(_claimed(runner, asked.run_id)))
            answering.start()
            _wait_for_a_lock_wait(url)
        answering.join(30)
        assert outcome and not isinstance(outcome[0], BaseException), outcome
        assert asyncio.run(runner.drive(outcome[0])).reason is StopReason.SUCCESS
    finally:
        runner.store.close()


def _claimed(runner: Runner, run_id: str) -> Any:
    try:
        return runner.claim(run_id, "2")
    except BaseException as exc:
        return exc


def _wait_for_a_lock_wait(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(600):
            if conn.execute(
                "SELECT 1 FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone():
                return
            time.sleep(0.05)
    raise AssertionError("no session waited for the run's row in 30 s")


def test_a_client_encoding_the_database_sets_changes_no_text(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database (or the host's $PGCLIENTENCODING) whose client encoding is not UTF-8: a task in
    Japanese raised UnicodeEncodeError out of the start (LATIN1), and the checkpoints, sent as UTF-8,
    would have been read as the other encoding. The store's connections speak UTF-8."""
    open_store(url).close()
    database_sets(url, client_encoding="LATIN1")
    task = "tâche 日本 ✓"
    for env in ("", "SQL_ASCII"):
        if env:
            monkeypatch.setenv("PGCLIENTENCODING", env)
        runner = Runner(open_store(url), catalog())
        try:
            state = counter_state(tmp_path / f"r{env}", "ask")
            asked = asyncio.run(runner.start("counter", task, state=state))
            assert asked.reason is StopReason.NEED_HELP, asked.note
            record = runner.store.get(asked.run_id)
            assert record is not None and record.task == task
            assert asyncio.run(runner.resume(asked.run_id, "2 ✓")).reason is StopReason.SUCCESS
            snap = runner.store.snapshot(asked.run_id)
            assert snap is not None
            journal = json.dumps(json.loads(snap.to_json())["journal"], ensure_ascii=False)
            assert task in journal and "2 ✓" in journal
        finally:
            runner.store.close()


def test_a_database_whose_encoding_cannot_hold_a_text_says_to_use_utf8(tmp_path: Path) -> None:
    name = f"endstate_latin1_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg.shared_server().admin_url, autocommit=True) as conn:
        conn.execute(
            f"CREATE DATABASE {name} ENCODING 'LATIN1' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'"
        )
    url = pg.shared_server().admin_url.rpartition("/")[0] + f"/{name}"
    runner = Runner(open_store(url), catalog())
    try:
        with pytest.raises(StoreError, match="has no equivalent in encoding") as refused:
            asyncio.run(runner.start("counter", "tâche 日本", state=counter_state(tmp_path / "r", "ask")))
        assert "ENCODING 'UTF8'" in str(refused.value)
        latin = asyncio.run(runner.start("counter", "tâche", state=counter_state(tmp_path / "l", "plain")))
        assert latin.reason is StopReason.SUCCESS  # what it can hold, it holds
    finally:
        runner.store.close()
