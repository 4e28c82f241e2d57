"""A service's sweep takes a run whose lease looks run out only once it has itself seen that lease
unrenewed for one whole lease (probe38c), by its own monotonic clock: a sweeper whose store clock
runs far ahead never takes a run from a live worker that renews it. A worker of this host whose
process is gone is still taken at once."""

from __future__ import annotations

import time
from pathlib import Path

from test_runner import _dead_pid
from test_runner_agents import ELSEWHERE_LEASE, a_run_whose_worker_died, catalog, counter_state

from agent.durable.runner import Runner, machine
from agent.durable.store import Lease, RunStatus, open_store
from agent.durable.store._sql import SqlStore

AHEAD = 3 * ELSEWHERE_LEASE  # seconds the sweeper's clock runs ahead: every lease looks run out
SWEEPER_LEASE = 30.0


class AheadClock:
    """A runner's clock: wall time far ahead, and a monotonic time the test moves on."""

    def __init__(self) -> None:
        self.mono = 1000.0

    def time(self) -> float:
        return time.time() + AHEAD

    def monotonic(self) -> float:
        return self.mono


def sweeper_ahead(store_url: str) -> tuple[Runner, AheadClock]:
    """A runner whose store's clock (by which leases run out) and own clock run `AHEAD`."""
    store = open_store(store_url)
    assert isinstance(store, SqlStore)
    store.clock = f"({type(store).clock} + {AHEAD})"
    clock = AheadClock()
    return Runner(store, catalog(), lease_seconds=SWEEPER_LEASE, clock=clock), clock


def test_a_sweeper_whose_clock_runs_ahead_leaves_a_renewed_lease_and_takes_it_once_unrenewed(
    store_url: str, tmp_path: Path
) -> None:
    job = a_run_whose_worker_died(store_url, tmp_path / "run")  # alive, on another host, for now
    worker = open_store(store_url)
    sweeper, clock = sweeper_ahead(store_url)
    try:
        assert [r.run_id for r in sweeper.recoverable()] == [job.run_id]  # run out, by its clock
        assert sweeper.recovery_jobs() == []  # first seen: not taken
        for i in range(1, 5):  # the worker renews it every third of the sweeper's lease
            clock.mono += SWEEPER_LEASE / 3
            before = worker.get(job.run_id)
            lease = Lease(job.record.owner, ELSEWHERE_LEASE + i)  # its end moves on, however fast
            assert worker.heartbeat(lease, [job.run_id]) == 1
            assert worker.get(job.run_id).lease_until > before.lease_until  # type: ignore[union-attr, operator]
            assert sweeper.recovery_jobs() == []
        held = worker.get(job.run_id)
        assert held is not None and (held.status, held.owner) == (RunStatus.RUNNING, job.record.owner)
        clock.mono += SWEEPER_LEASE  # the worker died: unrenewed for the sweeper's lease, and
        assert sweeper.recovery_jobs() == []  # not yet for its holder's, longer (probe39b)
        clock.mono += ELSEWHERE_LEASE + 4 - SWEEPER_LEASE - 0.001  # the holder's last lease, all but
        assert sweeper.recovery_jobs() == []
        clock.mono += 0.001
        [taken] = sweeper.recovery_jobs()
        assert taken.run_id == job.run_id
        assert worker.get(job.run_id).owner == sweeper.owner  # type: ignore[union-attr]
    finally:
        sweeper.catalog.close()
        worker.close()
        sweeper.store.close()


def test_a_person_s_recover_still_trusts_the_store_s_clock(store_url: str, tmp_path: Path) -> None:
    """`endstate recover` (one pass, a person's call) takes a lease run out by the store's clock."""
    job = a_run_whose_worker_died(store_url, tmp_path / "run")
    sweeper, _ = sweeper_ahead(store_url)
    try:
        assert [j.run_id for j in sweeper.recovery_jobs(watched=False)] == [job.run_id]
    finally:
        sweeper.catalog.close()
        sweeper.store.close()


def test_a_worker_of_this_host_whose_process_is_gone_is_taken_at_the_first_sweep(
    store_url: str, tmp_path: Path
) -> None:
    store = open_store(store_url)
    gone = Runner(store, catalog(), owner=f"{machine()}:{_dead_pid()}:gone", lease_seconds=ELSEWHERE_LEASE)
    job = gone.begin("counter", "count", state=counter_state(tmp_path / "run", "plain"))
    sweeper = Runner(open_store(store_url), catalog(), lease_seconds=SWEEPER_LEASE)
    try:
        [taken] = sweeper.recovery_jobs()  # its lease is good for 600 s more: its process is gone
        assert taken.run_id == job.run_id
    finally:
        for runner in (gone, sweeper):
            runner.catalog.close()
            runner.store.close()
