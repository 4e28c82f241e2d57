"""clock: a worker whose host was suspended (a laptop's sleep, a VM paused and resumed) tells the run
store's time right after it wakes.

A runner on PostgreSQL tells time by the server's clock, read at most once a minute and carried on in
between. It was carried on by the monotonic clock, which stands still while the host is suspended: for
up to a minute after a suspend of an hour, the worker told the store's time an hour behind, so a help
deadline it set then (ten minutes to answer) had passed fifty minutes before it was set, and the next
sweep ended the person's wait at once; an answer it judged then was taken though its deadline had
passed. Now a read is carried on by the time elapsed on the host, suspended time included
(`CLOCK_BOOTTIME`).

The suspend is played here: the store's clock is moved an hour on (the time the host slept), and so is
the host's boot-time clock, while its monotonic clock stays where it was, as Linux's do."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pg
import pytest
from test_runner_agents import catalog, counter_state

from agent import StopReason
from agent.durable.runner import Runner
from agent.durable.store import NotClaimable, RunStatus, open_store
from agent.durable.store._sql import SqlStore

SLEPT = 3600.0  # seconds the host was suspended
WAIT = 600.0  # the counter's help wait


def _store(tmp_path: Path) -> SqlStore:
    store = open_store(pg.url_for("postgres", tmp_path))
    assert isinstance(store, SqlStore)
    return store


def _suspend(store: SqlStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The host sleeps `SLEPT` seconds: the store's clock goes on, and the host's boot-time clock;
    its monotonic clock does not (nor does anything else here: no time is waited for)."""
    store.clock = f"({type(store).clock} + {SLEPT})"
    real = time.clock_gettime

    def gettime(clock_id: int) -> float:
        return real(clock_id) + (SLEPT if clock_id == time.CLOCK_BOOTTIME else 0.0)

    monkeypatch.setattr(time, "clock_gettime", gettime)


def _ask(runner: Runner, tmp_path: Path, name: str, wait: float) -> str:
    state = counter_state(tmp_path / name, "ask", wait=wait)
    asked = asyncio.run(runner.start("counter", "count", state=state))
    assert asked.reason is StopReason.NEED_HELP
    return asked.run_id


def test_a_deadline_set_right_after_the_host_woke_is_set_by_the_store_s_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    runner = Runner(store, catalog())  # reads the store's clock now, before the host sleeps
    try:
        _suspend(store, monkeypatch)
        run_id = _ask(runner, tmp_path, "woke", WAIT)
        record = store.get(run_id)
        assert record is not None and record.deadline is not None
        left = record.deadline - store.now()  # ten minutes by the store's clock (was 50 minutes past)
        assert WAIT - 60 < left <= WAIT, left
        assert [r.run_id for r in store.expired(store.now())] == []  # no sweep ends the wait at once
        assert asyncio.run(runner.sweep()) == []
        assert _status(store, run_id) is RunStatus.WAITING
    finally:
        runner.catalog.close()
        store.close()


def test_an_answer_judged_right_after_the_host_woke_past_the_deadline_is_too_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    runner = Runner(store, catalog())
    try:
        run_id = _ask(runner, tmp_path, "asked", WAIT)  # ten minutes to answer; the host sleeps an hour
        _suspend(store, monkeypatch)
        with pytest.raises(NotClaimable, match="too late"):
            asyncio.run(runner.resume(run_id, "3"))
        assert _status(store, run_id) is RunStatus.WAITING  # for the sweep: help_timeout, not the answer
        [swept] = asyncio.run(runner.sweep())
        assert swept.reason is StopReason.HELP_TIMEOUT
    finally:
        runner.catalog.close()
        store.close()


def _status(store: Any, run_id: str) -> RunStatus:
    record = store.get(run_id)
    assert record is not None
    return record.status
