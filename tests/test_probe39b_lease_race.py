"""A sweep takes a run over only while its lease is the one the sweep looked at (probe39b): a renewal
landing between the look and the take-over keeps the run its holder's, on either store, however far
the sweeper's clock runs ahead (then every lease looks run out to it)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from test_probe38c_lease_clocks import SWEEPER_LEASE, sweeper_ahead
from test_runner_agents import ELSEWHERE_LEASE, a_run_whose_worker_died
from test_store import edit_row

from agent.durable.store import Lease, NewRun, NotClaimable, RunStatus, RunStore, open_store


def renewing_first(store: RunStore, worker: RunStore, lease: Lease) -> list[int]:
    """Make `store`'s next take-over land just after `worker` renews `lease` (the race, made
    certain); the list gets how many runs the renewal renewed."""
    take_over, renewed = store.take_over, []

    def renewed_then_taken(*args: Any, **kwargs: Any) -> Any:
        store.take_over = take_over  # type: ignore[method-assign]
        renewed.append(worker.heartbeat(lease))
        return take_over(*args, **kwargs)

    store.take_over = renewed_then_taken  # type: ignore[method-assign]
    return renewed


def test_a_renewal_between_the_sweep_s_look_and_its_take_over_keeps_the_run(
    store_url: str, tmp_path: Path
) -> None:
    job = a_run_whose_worker_died(store_url, tmp_path / "run")  # alive, on another host
    worker = open_store(store_url)
    sweeper, clock = sweeper_ahead(store_url)
    try:
        assert sweeper.recovery_jobs() == []  # first seen
        clock.mono += ELSEWHERE_LEASE  # unrenewed for a whole lease (its holder's), as the sweep sees it
        renewed = renewing_first(sweeper.store, worker, Lease(job.record.owner, ELSEWHERE_LEASE))
        assert sweeper.recovery_jobs() == []  # renewed after the look: not taken
        assert renewed == [1]
        held = worker.get(job.run_id)
        assert held is not None and (held.status, held.owner) == (RunStatus.RUNNING, job.record.owner)
        assert held.segments == job.record.segments
        assert sweeper.recovery_jobs() == []  # the renewed lease, first seen
        clock.mono += ELSEWHERE_LEASE  # and unrenewed for a whole lease since: taken
        [taken] = sweeper.recovery_jobs()
        assert taken.run_id == job.run_id
        assert worker.get(job.run_id).owner == sweeper.owner  # type: ignore[union-attr]
    finally:
        sweeper.catalog.close()
        worker.close()
        sweeper.store.close()


def test_a_take_over_as_seen_refuses_a_renewed_or_taken_lease_and_takes_the_one_seen(
    store: RunStore,
) -> None:
    store.create(NewRun("r1", "test-agent", "pay", "default"), Lease("w1", -1), time.time())  # ran out
    seen = store.get("r1")
    assert seen is not None
    assert store.heartbeat(Lease("w1", -0.5)) == 1  # renewed, and still run out by the store's clock
    with pytest.raises(NotClaimable, match="renewed the lease"):
        store.take_over("r1", "w1", Lease("w2", 30), time.time(), as_seen=seen)
    with pytest.raises(NotClaimable):  # a worker known gone: the lease seen must still be its
        store.take_over("r1", "w1", Lease("w2", 30), time.time(), only_lapsed=False, as_seen=seen)
    now_seen = store.get("r1")
    assert now_seen is not None and now_seen.owner == "w1"
    taken = store.take_over("r1", "w1", Lease("w2", 30), time.time(), as_seen=now_seen)
    assert (taken.owner, taken.segments) == ("w2", now_seen.segments + 1)
    with pytest.raises(NotClaimable):  # taken since: the same look takes nothing twice
        store.take_over("r1", "w2", Lease("w3", 30), time.time(), only_lapsed=False, as_seen=now_seen)


def test_a_sweep_waits_the_longer_lease_its_holder_wrote_before_taking_the_run(
    store_url: str, tmp_path: Path
) -> None:
    """A worker started with a lease twenty times the sweeper's renews every third of its own: a
    sweep that waited only its own lease took the run between two renewals."""
    job = a_run_whose_worker_died(store_url, tmp_path / "run")  # its lease: ELSEWHERE_LEASE
    worker = open_store(store_url)
    sweeper, clock = sweeper_ahead(store_url)
    try:
        assert job.record.lease_seconds == ELSEWHERE_LEASE
        assert sweeper.recovery_jobs() == []  # first seen
        clock.mono += 3 * SWEEPER_LEASE  # three of the sweeper's leases: none of its holder's renewals due
        assert sweeper.recovery_jobs() == []
        assert worker.heartbeat(Lease(job.record.owner, 2 * ELSEWHERE_LEASE), [job.run_id]) == 1
        assert worker.get(job.run_id).lease_seconds == 2 * ELSEWHERE_LEASE  # type: ignore[union-attr]
        assert sweeper.recovery_jobs() == []  # the renewal, first seen
        clock.mono += 2 * ELSEWHERE_LEASE - 0.001
        assert sweeper.recovery_jobs() == []
        clock.mono += 0.001  # the holder's whole lease, unrenewed: it is gone
        [taken] = sweeper.recovery_jobs()
        assert taken.run_id == job.run_id and taken.record.lease_seconds == SWEEPER_LEASE
    finally:
        sweeper.catalog.close()
        worker.close()
        sweeper.store.close()


def test_a_lease_whose_length_is_not_stored_waits_the_sweeper_s_own(store_url: str, tmp_path: Path) -> None:
    """(A lease written by an Endstate before the store kept its length.)"""
    job = a_run_whose_worker_died(store_url, tmp_path / "run")
    edit_row(store_url, "UPDATE endstate_runs SET lease_seconds = NULL WHERE run_id = ?", job.run_id)
    sweeper, clock = sweeper_ahead(store_url)
    try:
        assert sweeper.recovery_jobs() == []
        clock.mono += SWEEPER_LEASE
        assert [j.run_id for j in sweeper.recovery_jobs()] == [job.run_id]
    finally:
        sweeper.catalog.close()
        sweeper.store.close()


def test_every_write_of_a_lease_stores_its_length(store: RunStore) -> None:
    assert (
        store.create(NewRun("r1", "test-agent", "pay", "default"), Lease("w1", 40), time.time()).lease_seconds
        == 40
    )
    assert store.heartbeat(Lease("w1", 50)) == 1
    assert store.get("r1").lease_seconds == 50  # type: ignore[union-attr]
    assert store.take_over("r1", "w1", Lease("w2", 60), time.time(), only_lapsed=False).lease_seconds == 60
    store.release("r1", RunStatus.CANCELLED, Lease("w2", 60), time.time())
    assert store.claim("r1", (RunStatus.CANCELLED,), Lease("w3", 70), time.time()).lease_seconds == 70
