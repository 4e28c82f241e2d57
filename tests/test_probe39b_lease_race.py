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
        clock.mono += SWEEPER_LEASE  # unrenewed for a whole lease, as the sweep sees it
        renewed = renewing_first(sweeper.store, worker, Lease(job.record.owner, ELSEWHERE_LEASE))
        assert sweeper.recovery_jobs() == []  # renewed after the look: not taken
        assert renewed == [1]
        held = worker.get(job.run_id)
        assert held is not None and (held.status, held.owner) == (RunStatus.RUNNING, job.record.owner)
        assert held.segments == job.record.segments
        assert sweeper.recovery_jobs() == []  # the renewed lease, first seen
        clock.mono += SWEEPER_LEASE  # and unrenewed for a whole lease since: taken
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
