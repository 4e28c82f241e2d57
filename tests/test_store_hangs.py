"""A PostgreSQL server that hangs without closing never stalls the store, the runner or the service:
each call fails within its timeout, /readyz says "not ready", a start is a 503, and nothing is lost.

Against a real fake: a TCP server that accepts and never answers (`hang.SilentServer`), and a
proxy in front of the real PostgreSQL 15 that a test freezes mid-session (`hang.FreezableProxy`).
A call that hangs would fail the test through `in_time`'s guard (a minute: far past any timeout
here), never by timing how fast anything is.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pg
import pytest
from hang import FreezableProxy, SilentServer
from test_service_support import TOKEN, Server, run_status, wait_for, wait_status
from test_store import checkpoint_of, lease, suspended

from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import NewRun, Outcome, RunStatus, StoreError, StoreTimeout, open_store
from agent.durable.store._deadline import Watchdog
from agent.errors import ConfigError
from agent.service.app import Problem, Service
from agent.service.auth import Token

NOW = 1_800_000_000.0
GUARD = 60.0  # seconds before a call is called hung: far past every timeout these tests set
T = TypeVar("T")


def in_time(call: Callable[[], T]) -> T:
    """`call()`, failing the test if it has not returned (or raised) within `GUARD` seconds."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(call).result(timeout=GUARD)
    except concurrent.futures.TimeoutError:
        raise AssertionError(f"the call hung past {GUARD:g} s") from None
    finally:
        pool.shutdown(wait=False)


def raises(kind: type[Exception], call: Callable[[], Any]) -> Exception:
    """The `kind` exception `call()` raised in time."""
    with pytest.raises(kind) as caught:
        in_time(call)
    return caught.value


@pytest.fixture
def proxied() -> Iterator[tuple[FreezableProxy, str]]:
    """A freezable proxy in front of a fresh database on the real PostgreSQL, and the URL through it."""
    url = pg.shared_server().new_database()
    head, _, name = url.rpartition("/")
    with FreezableProxy(int(head.rpartition(":")[2])) as proxy:
        yield proxy, f"{head.rpartition(':')[0]}:{proxy.port}/{name}"


def test_opening_a_store_on_a_server_that_never_answers_fails_in_time() -> None:
    with SilentServer() as silent:
        url = f"postgresql://endstate:secret-pw@127.0.0.1:{silent.port}/runs"
        error = raises(StoreTimeout, lambda: open_store(url, timeout=1))
    assert "did not answer within 1 s" in str(error) and "nothing was changed" in str(error)
    assert "secret-pw" not in str(error)


def test_a_connect_timeout_in_the_url_is_kept() -> None:
    with SilentServer() as silent:
        url = f"postgresql://endstate@127.0.0.1:{silent.port}/runs?connect_timeout=2"
        error = raises(StoreTimeout, lambda: open_store(url, timeout=30))
    assert "within the URL's connect_timeout" in str(error)


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "soon", True])
def test_a_store_timeout_that_cannot_work_is_a_clear_error(bad: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"--store-timeout must be a number of seconds above 0"):
        open_store("postgresql://endstate@127.0.0.1:1/runs", timeout=bad)
    monkeypatch.setenv("ENDSTATE_STORE_TIMEOUT", str(bad))
    with pytest.raises(ConfigError, match=r"\$ENDSTATE_STORE_TIMEOUT must be a number of seconds above 0"):
        open_store("postgresql://endstate@127.0.0.1:1/runs")


def test_a_server_that_stops_answering_fails_each_call_in_time_and_loses_nothing(
    proxied: tuple[FreezableProxy, str], make_agent: Any
) -> None:
    proxy, url = proxied
    store = open_store(url, timeout=1)
    try:
        asked = suspended(make_agent, "asks")
        store.create(NewRun("asks", "test-agent", "pay the invoice", "default", {}), lease(), NOW)
        store.record("asks", Outcome.of(asked), lease(), NOW)
        store.create(NewRun("works", "test-agent", "pay the invoice", "default", {}), lease(), NOW)
        proxy.freeze()
        error = raises(StoreTimeout, lambda: store.get("asks"))
        assert "did not answer within 2 s" in str(error) and "--store-timeout" in str(error)
        raises(StoreTimeout, lambda: store.create(NewRun("new", "a", "t", "default", {}), lease(), NOW))
        raises(StoreTimeout, lambda: store.waiting(50))  # a new connection, which the proxy holds too
        proxy.thaw()
        waiting = in_time(lambda: store.get("asks"))  # the next call connects again
        assert waiting is not None and waiting.status is RunStatus.WAITING
        assert asked.suspension is not None and waiting.question == asked.suspension.question
        running = store.get("works")
        assert running is not None and (running.status, running.owner) == (RunStatus.RUNNING, "w1")
        assert store.get("new") is None  # refused, not half made
        assert [r.run_id for r in store.waiting(50)] == ["asks"]
    finally:
        proxy.thaw()
        store.close()


def test_a_checkpoint_sent_to_a_server_that_stops_answering_fails_in_time_and_is_written_after(
    proxied: tuple[FreezableProxy, str], make_agent: Any
) -> None:
    proxy, url = proxied
    store: Any = open_store(url, timeout=1)
    try:
        snap = suspended(make_agent, "r1").snapshot
        assert snap is not None
        store.create(NewRun("r1", "test-agent", "pay the invoice", "default", {}), lease(), NOW)
        checkpoint = checkpoint_of(snap)
        proxy.freeze()
        sent = in_time(lambda: store.send_checkpoint("r1", checkpoint, lease(), NOW))
        raises(StoreTimeout, sent.result)
        proxy.thaw()
        in_time(lambda: store.checkpoint("r1", checkpoint, lease(), NOW + 1))  # written again: once
        written = store.snapshot("r1")
        assert written is not None and len(written.journal) == len(snap.journal)
        again = store.send_checkpoint("r1", dataclasses.replace(checkpoint, entries=[]), lease(), NOW + 2)
        in_time(again.result)  # the sender's own connection came back too
    finally:
        proxy.thaw()
        store.close()


def test_a_statement_the_server_runs_too_long_is_ended_by_the_server_saying_so(
    proxied: tuple[FreezableProxy, str],
) -> None:
    """A server that answers gets the store's timeout as its statement_timeout: it ends a statement
    itself (and the connection stays), before the client would cut it."""
    _, url = proxied
    store: Any = open_store(url, timeout=1)
    try:
        error = raises(StoreError, lambda: store._rows("SELECT pg_sleep(5)"))
        assert not isinstance(error, StoreTimeout)
        assert "statement timeout" in str(error) and "raise --store-timeout" in str(error)
        assert store.schema_version() > 0
    finally:
        store.close()


# -- the real `endstate serve` in front of a database that hangs ---------------------------------


def test_serve_answers_not_ready_and_refuses_starts_while_the_store_hangs_and_loses_no_run(
    proxied: tuple[FreezableProxy, str], tmp_path: Path
) -> None:
    proxy, url = proxied
    with (
        Server(url, tmp_path, "--store-timeout", "1", "--ready-timeout", "1") as server,
        server.client() as api,
    ):
        started = api.post("/runs", json={"agent": "invoice-downloader", "task": "Get the invoice",
                                          "state": {"scenario": "invoice/which-one"}})  # fmt: skip
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        asked = wait_status(api, run_id, "waiting")
        proxy.freeze()
        ready = in_time(lambda: httpx.get(f"{server.url}/readyz", timeout=GUARD))
        assert ready.status_code == 503 and "store not answering" in ready.text, ready.text
        assert in_time(lambda: httpx.get(f"{server.url}/healthz", timeout=GUARD)).status_code == 200
        starts = in_time(lambda: starts_at_once(api, 4))  # queued behind the sweep, or each other
        assert [r.status_code for r in starts] == [503] * 4, [r.text for r in starts]
        for response in starts:  # each ran and the store did not answer, or was dropped before it ran
            said = response.json()["error"]
            assert "did not answer within" in said or "queued behind" in said, said
            assert "queued behind" not in said or response.headers["retry-after"] == "5"
        proxy.thaw()
        wait_ready = lambda: httpx.get(f"{server.url}/readyz", timeout=GUARD).status_code == 200  # noqa: E731
        assert in_time(lambda: any(wait_ready() for _ in range(200))), "ready again once the store answers"
        again = run_status(api, run_id)
        assert (again["status"], again["segments"], again["question"]) == ("waiting", asked["segments"],
                                                                            asked["question"])  # fmt: skip
        assert [r["run_id"] for r in api.get("/runs").json()["runs"]] == [run_id]  # none of them started
        answered = api.post(f"/runs/{run_id}/answer", json={"answer": "the March one"})
        assert answered.status_code == 202, answered.text
        assert wait_status(api, run_id, "finished")["stop_reason"] == "success"


def test_opening_a_store_already_up_to_date_waits_for_no_migration_lock() -> None:
    """Only a store behind the schema takes the migration lock (and its calls may wait long for
    it): one up to date is known from one read within the timeout, and opens while another session
    holds the lock (a migration elsewhere, or a session stuck holding it)."""
    import psycopg

    from agent.durable.store.postgres import MIGRATION_LOCK

    url = pg.shared_server().new_database()
    open_store(url, timeout=1).close()
    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        store = in_time(lambda: open_store(url, timeout=1))
        assert store.schema_version() > 0
        store.close()


def starts_at_once(api: httpx.Client, n: int) -> list[httpx.Response]:
    """`n` starts sent at the same time; their responses."""
    body = {"agent": "invoice-downloader", "task": "t", "state": {"scenario": "invoice/which-one"}}
    with concurrent.futures.ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(lambda _: api.post("/runs", json=body), range(n)))


# -- the service's one thread for store calls ------------------------------------------------------


def test_a_request_queued_behind_a_call_the_store_does_not_answer_is_dropped_before_it_runs(
    proxied: tuple[FreezableProxy, str],
) -> None:
    """Requests queue for the service's one thread of store calls; while a call to the store has
    waited `ready_timeout` for a server that stopped answering, each queued request is a 503 at
    once that changed nothing, rather than waiting its turn behind every call before it."""
    proxy, url = proxied
    store = open_store(url, timeout=30)
    service = Service(Runner(store, Catalog()), Token(TOKEN), ready_timeout=0.2)
    ran = list[str]()

    async def main() -> Problem:
        proxy.freeze()
        held = asyncio.ensure_future(service.off_loop(store.get, "r1"))  # a call the server holds
        with pytest.raises(Problem) as refused:
            await service.for_request(ran.append, "queued")
        proxy.thaw()
        assert await held is None  # answered once the server answers again
        await service.for_request(ran.append, "after")  # the thread is free again
        return refused.value

    try:
        problem = in_time(lambda: asyncio.run(main()))
    finally:
        proxy.thaw()
        store.close()
    assert problem.status == 503 and "queued behind" in str(problem)
    assert problem.headers == {"Retry-After": "5"}
    assert ran == ["after"]  # the dropped call never ran


# -- the watchdog cuts off the call it watches, and nothing else --------------------------------------


def test_the_deadline_cuts_off_the_calls_own_socket_even_once_its_number_names_another() -> None:
    """The connection closes its socket during the call (libpq does when it sees the connection end)
    and another socket gets that number before the call's watch is off: the deadline shuts down the
    call's own socket, never the one now behind the number (another store's connection, say)."""
    watchdog = Watchdog(period=60.0)
    call_side, call_peer = socket.socketpair()
    other, other_peer = socket.socketpair()
    try:
        with watchdog.socket_call(call_side.fileno(), 0.05) as watch:
            os.dup2(other.fileno(), call_side.fileno())  # the number reused, deterministically
            wait_for(lambda: watch.cut, timeout=GUARD, what="the deadline")
            assert call_peer.recv(1) == b""  # the call's connection ended (its socket is still open)
        other.sendall(b"out")
        other_peer.sendall(b"in")
        assert (other_peer.recv(3), other.recv(2)) == (b"out", b"in")  # the other socket still works
    finally:
        watchdog.close()
        for sock in (call_side, call_peer, other, other_peer):
            sock.close()


def test_a_call_armed_is_cut_on_time_but_wakes_the_watchdog_only_when_due_before_it_looks() -> None:
    """A store's calls all get the same allowance, so each one's deadline comes after the watchdog's
    next look: arming it wakes no thread (it did at every call: a thread hand-over per checkpoint).
    A call due sooner than that look still wakes it, and is cut off on time."""
    watchdog = Watchdog(period=60.0)
    wakes: list[int] = []
    notify = watchdog._wake.notify
    watchdog._wake.notify = lambda n=1: (wakes.append(n), notify(n))  # type: ignore[method-assign]
    cut = threading.Event()
    try:
        with watchdog.call(lambda: None, 60.0):  # starts the thread, which then sleeps up to 60 s
            for _ in range(20):
                with watchdog.call(lambda: None, 60.0):
                    pass
            assert wakes == []
            with watchdog.call(cut.set, 0.05) as soon:  # woken (unless it has not looked yet)
                assert cut.wait(GUARD) and soon.cut
    finally:
        watchdog.close()


def test_a_cut_off_that_fails_is_logged_and_later_calls_are_still_cut_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A call's cut-off raising (a connection's interrupt failing, say) ended the watchdog's thread,
    and every later call went unwatched: it is logged, and the next call past its time is cut off."""

    def failing() -> None:
        raise OSError("the connection cannot be interrupted")

    watchdog = Watchdog(period=60.0)
    cut = threading.Event()
    try:
        with watchdog.call(failing, 0.01) as broken:
            assert wait_for(lambda: broken.cut, GUARD)
        with watchdog.call(cut.set, 0.01) as later:
            assert cut.wait(GUARD) and later.cut
    finally:
        watchdog.close()
    assert "could not cut off a store call" in caplog.text
