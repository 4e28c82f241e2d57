"""A runner on the system clock sets and reckons help deadlines by the run store's clock (probe38c),
not its own host's: on PostgreSQL, the server's `now()`, read at most once a `REFRESH_SECONDS` and
carried on by the time elapsed on the host between reads. The store's clock is moved here by giving the store
an offset clock expression (the server's own cannot be stepped by a test)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pg
from starlette.testclient import TestClient
from test_runner_agents import catalog, counter_state

from agent import StopReason
from agent.durable._storetime import READER, REFRESH_SECONDS, StoreClock, pending_by_store_clock
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.durable.store._sql import SqlStore
from agent.service.app import Service, create_app
from agent.service.auth import Token

OFF = 3600.0  # seconds the store's clock is off this host's
WAIT = 600.0  # the counter's help wait (its state's "wait")
TOKEN = "t" * 32


def _store_off(tmp_path: Path, off: float) -> Any:
    store = open_store(pg.url_for("postgres", tmp_path))
    assert isinstance(store, SqlStore)
    store.clock = f"({type(store).clock} + {off})"
    return store


class Mono:
    """A monotonic clock the test moves on."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_help_deadline_is_set_by_the_store_s_clock(tmp_path: Path) -> None:
    store = _store_off(tmp_path, OFF)
    runner = Runner(store, catalog())
    try:
        state = counter_state(tmp_path / "run", "ask", wait=WAIT)
        asked = asyncio.run(runner.start("counter", "count", state=state))
        assert asked.reason is StopReason.NEED_HELP
        record = store.get(asked.run_id)
        assert record is not None and record.deadline is not None
        late = record.deadline - (time.time() + OFF + WAIT)  # by the store's clock: 0, give or take the run
        assert -60.0 < late <= 0.0, late
    finally:
        runner.catalog.close()
        store.close()


def test_the_store_s_clock_is_read_once_a_refresh_and_carried_on_between(tmp_path: Path) -> None:
    store = _store_off(tmp_path, OFF)
    reads: list[float] = []
    now = store.now

    def counted() -> float:
        reads.append(now())
        return reads[-1]

    store.now = counted
    mono = Mono()
    try:
        clock = StoreClock(store, elapsed=mono)
        assert len(reads) == 1 and abs(reads[0] - (time.time() + OFF)) < 60
        mono.now += REFRESH_SECONDS / 2
        assert clock.time() == reads[0] + REFRESH_SECONDS / 2  # carried on, not read again
        assert len(reads) == 1
        mono.now += REFRESH_SECONDS / 2
        clock.time()  # due: read again, on a thread of its own
        for reader in [t for t in threading.enumerate() if t.name == READER]:
            reader.join(30)
        assert len(reads) == 2
        assert clock.time() == reads[1]
    finally:
        store.close()


def test_the_gauges_reckon_a_wait_by_the_store_s_clock(tmp_path: Path) -> None:
    """A store whose clock is an hour behind this host's: a run that just asked has waited about 0 s,
    not an hour."""
    store = _store_off(tmp_path, -OFF)
    runner = Runner(store, catalog())
    try:
        state = counter_state(tmp_path / "run", "ask", wait=WAIT)
        assert asyncio.run(runner.start("counter", "count", state=state)).reason is StopReason.NEED_HELP
        [(_, _, count, since)] = pending_by_store_clock(store)()
        assert count == 1 and -60 < time.time() - since < 60, time.time() - since
    finally:
        runner.catalog.close()
        store.close()


def test_pending_reckons_a_wait_by_the_store_s_clock(tmp_path: Path) -> None:
    """A store an hour behind: a run that just asked, with a wait of ten minutes, has waited about 0 s
    and is not past its deadline (reckoned by this host's clock, it would have waited an hour, its
    deadline fifty minutes past)."""
    store = _store_off(tmp_path, -OFF)
    runner = Runner(store, catalog())
    try:
        state = counter_state(tmp_path / "run", "ask", wait=WAIT)
        assert asyncio.run(runner.start("counter", "count", state=state)).reason is StopReason.NEED_HELP
        app = create_app(Service(runner, Token(TOKEN), sweep_interval=3600))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            [item] = client.get("/pending", headers={"Authorization": f"Bearer {TOKEN}"}).json()["pending"]
        assert item["expired"] is False and 0 <= item["waiting_seconds"] < 60, item
    finally:
        runner.catalog.close()
        store.close()
