"""probe24d: a service whose clock runs ahead never cuts the waits of the fleet short.

Every service of a fleet sweeps deadlines, and each judged them by its own clock: one machine whose
clock ran ten minutes ahead ended every person's wait ten minutes early (`help_timeout`), for all
the fleet's runs, and refused their answers as late while the inbox still showed time left. A
runner on the system clock now judges deadlines, in its sweep and when it takes an answer, by the
store's clock (the PostgreSQL server's; for SQLite, the machine's that holds the file), as leases
already were. Here the worker's system clock is put ahead; the store's is not.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from test_probe24d_fleet import billing_catalog, runner_of
from test_runner_agents import counter_state

from agent import StopReason
from agent.clock import SystemClock
from agent.durable.store import RunStatus

AHEAD = 600.0  # seconds this machine's clock runs ahead


def test_a_sweeper_whose_clock_runs_ahead_leaves_a_wait_whose_deadline_has_not_passed(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asking = runner_of(store_url, billing_catalog())
    try:
        state = counter_state(tmp_path / "a", "ask", wait=300)  # five minutes to answer
        assert (
            asyncio.run(asking.start("billing", "count", state=state, run_id="s1")).reason
            is StopReason.NEED_HELP
        )
        real = time.time
        monkeypatch.setattr(SystemClock, "time", lambda self: real() + AHEAD)
        ahead = runner_of(store_url, billing_catalog())
        try:
            assert asyncio.run(ahead.sweep()) == []
            rec = ahead.store.get("s1")
            assert rec is not None and rec.status is RunStatus.WAITING
            done = asyncio.run(ahead.resume("s1", "3"))  # answered in time, on this machine too
            assert done.reason is StopReason.SUCCESS
        finally:
            ahead.store.close()
    finally:
        asking.store.close()


def test_a_deadline_that_passed_by_the_stores_clock_is_swept(store_url: str, tmp_path: Path) -> None:
    asking = runner_of(store_url, billing_catalog())
    try:
        state = counter_state(tmp_path / "a", "ask", wait=0.01)
        assert (
            asyncio.run(asking.start("billing", "count", state=state, run_id="s2")).reason
            is StopReason.NEED_HELP
        )
        time.sleep(0.05)
        [ended] = asyncio.run(asking.sweep())
        assert (ended.run_id, ended.reason) == ("s2", StopReason.HELP_TIMEOUT)
    finally:
        asking.store.close()
