"""A service recovers no more runs than its --max-running has room for.

After a replica of a fleet died, the first service to sweep took every one of its runs at once,
past its own `--max-running` (which bounds starts): hundreds of model calls from one process. It
now takes as many as it has room for; the others stay recoverable, for its next sweep or another
replica, and every run still finishes, each tool call made once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_probe24d_fleet import DYING_LEASE, billing_catalog, runner_of
from test_runner import _dead_pid
from test_runner_agents import Crash, counted, counter_state, outlive_leases

from agent import StopReason
from agent.durable.runner import machine
from agent.service.app import Service
from agent.service.auth import Token

RUNS, ROOM = 5, 2
DEAD = f"{machine()}:{_dead_pid()}:replica"  # a replica of this host whose process is gone: a sweep
# takes its runs at once (one of another host only once it saw their leases unrenewed for a lease)


def test_a_service_recovers_only_as_many_runs_as_max_running_has_room_for(tmp_path: Path) -> None:
    url = str(tmp_path / "runs.db")
    dying = runner_of(url, billing_catalog(), lease_seconds=DYING_LEASE, owner=DEAD)
    for i in range(RUNS):
        with pytest.raises(Crash):
            state = counter_state(tmp_path / str(i), "crash")
            asyncio.run(dying.start("billing", "count", state=state, run_id=f"c{i}"))
    assert outlive_leases(url, DYING_LEASE + 1, dying.owner) == RUNS
    runner = runner_of(url, billing_catalog())
    service = Service(runner, Token("t" * 32), sweep_interval=3600, max_running=ROOM)

    async def sweeps() -> list[tuple[int, int]]:
        seen = []  # (runs this service took in a sweep, runs still left to recover after it)
        while runner.recoverable() or runner.in_flight:
            before = runner.in_flight
            await service._recover()
            seen.append((runner.in_flight - before, len(runner.recoverable())))
            await asyncio.sleep(0.05)
        return seen

    try:
        seen = asyncio.run(sweeps())
        assert seen[0] == (ROOM, RUNS - ROOM), seen
        assert all(took <= ROOM for took, _ in seen), seen
        assert [runner.store.get(f"c{i}").stop_reason for i in range(RUNS)] == [StopReason.SUCCESS] * RUNS  # type: ignore[union-attr]
        assert all(counted(tmp_path / str(i)) == [1, 2, 3, 4] for i in range(RUNS))
    finally:
        dying.store.close()
        runner.store.close()


def test_with_no_max_running_a_service_recovers_every_run_at_once(tmp_path: Path) -> None:
    url = str(tmp_path / "runs.db")
    dying = runner_of(url, billing_catalog(), lease_seconds=DYING_LEASE, owner=DEAD)
    for i in range(3):
        with pytest.raises(Crash):
            state = counter_state(tmp_path / str(i), "crash")
            asyncio.run(dying.start("billing", "count", state=state, run_id=f"c{i}"))
    outlive_leases(url, DYING_LEASE + 1, dying.owner)
    runner = runner_of(url, billing_catalog())
    service = Service(runner, Token("t" * 32), sweep_interval=3600)
    assert service.room() is None

    async def one_sweep() -> int:
        await service._recover()
        taken = runner.in_flight
        await runner.shutdown(30)
        return taken

    try:
        assert asyncio.run(one_sweep()) == 3
    finally:
        dying.store.close()
        runner.store.close()
