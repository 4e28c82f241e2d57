"""probe24d: many runners of a fleet recover and sweep one store at once (SQLite and PostgreSQL).

Every run is claimed by exactly one of them (none twice, none skipped), and each goes on to its end
with no recorded tool call run again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from test_probe24d_fleet import DYING_LEASE, billing_catalog, runner_of
from test_runner import _dead_pid
from test_runner_agents import Crash, counted, counter_state, outlive_leases

from agent import StopReason
from agent.durable.runner import Job, Runner, machine

RUNS, RUNNERS = 12, 4
DEAD = f"{machine()}:{_dead_pid()}:replica"  # a replica of this host whose process is gone: a sweep
# takes its runs at once (one of another host only once it saw their leases unrenewed for a lease)


def at_once(runners: list[Runner], claim: str) -> list[list[Job]]:
    """Each runner's `claim` (`recovery_jobs` or `expiry_jobs`), all begun at the same moment."""
    start = threading.Barrier(len(runners))

    def one(runner: Runner) -> list[Job]:
        start.wait()
        jobs: list[Job] = getattr(runner, claim)()
        return jobs

    with ThreadPoolExecutor(len(runners)) as pool:
        return list(pool.map(one, runners))


def each_once(claimed: list[list[Job]], expected: set[str]) -> None:
    ids = [job.run_id for jobs in claimed for job in jobs]
    assert sorted(ids) == sorted(expected), ids  # none twice, none left


def drive_all(runners: list[Runner], claimed: list[list[Job]]) -> list[StopReason]:
    reasons = []
    for runner, jobs in zip(runners, claimed, strict=True):

        async def go(runner: Runner = runner, jobs: list[Job] = jobs) -> list[StopReason]:
            return [r.reason for r in await asyncio.gather(*(runner.drive(j) for j in jobs))]

        reasons += asyncio.run(go())
    return reasons


def test_runners_recovering_at_once_each_take_every_crashed_run_exactly_once(
    store_url: str, tmp_path: Path
) -> None:
    dying = runner_of(store_url, billing_catalog(), lease_seconds=DYING_LEASE, owner=DEAD)
    for i in range(RUNS):
        with pytest.raises(Crash):
            asyncio.run(
                dying.start(
                    "billing", "count", state=counter_state(tmp_path / str(i), "crash"), run_id=f"c{i}"
                )
            )
    assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == RUNS
    runners = [runner_of(store_url, billing_catalog()) for _ in range(RUNNERS)]
    try:
        claimed = at_once(runners, "recovery_jobs")
        each_once(claimed, {f"c{i}" for i in range(RUNS)})
        assert drive_all(runners, claimed) == [StopReason.SUCCESS] * RUNS
        assert all(counted(tmp_path / str(i)) == [1, 2, 3, 4] for i in range(RUNS))
        assert at_once(runners, "recovery_jobs") == [[]] * RUNNERS  # nothing left, nothing taken again
    finally:
        for r in (dying, *runners):
            r.store.close()


def test_runners_sweeping_at_once_each_expire_every_run_past_its_deadline_exactly_once(
    store_url: str, tmp_path: Path
) -> None:
    asking = runner_of(store_url, billing_catalog())
    for i in range(RUNS):
        state = counter_state(tmp_path / str(i), "ask", wait=1)
        assert (
            asyncio.run(asking.start("billing", "count", state=state, run_id=f"w{i}")).reason
            is StopReason.NEED_HELP
        )
    runners = [runner_of(store_url, billing_catalog()) for _ in range(RUNNERS)]
    later = time.time() + 60
    try:
        claimed = at_once([_Later(r, later) for r in runners], "expiry_jobs")  # type: ignore[misc]
        each_once(claimed, {f"w{i}" for i in range(RUNS)})
        assert drive_all(runners, claimed) == [StopReason.HELP_TIMEOUT] * RUNS
    finally:
        for r in (asking, *runners):
            r.store.close()


class _Later:
    """A runner whose `expiry_jobs` sweeps as of `now`."""

    def __init__(self, runner: Runner, now: float) -> None:
        self.runner, self.now = runner, now

    def expiry_jobs(self) -> list[Job]:
        return self.runner.expiry_jobs(now=self.now)
