"""review26: a rolling deploy on one store (SQLite and PostgreSQL), as an old runner sweeps it.

An old runner leaves the runs a newer Endstate saved (probe24d). To tell them, its recovery and its
deadline sweep read each listed run's whole row (its snapshot included) on every sweep, every five
seconds, for as long as the deploy lasts. The store now keeps each head's snapshot version in a
column of its own (schema 12), which the listing the sweep makes already carries.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from test_probe24d_deploy import saved_as
from test_probe24d_fleet import DYING_LEASE, billing_catalog, runner_of, untouched
from test_runner import Workers, task_typed
from test_runner_agents import Crash, counted, counter_state, outlive_leases
from test_store import edit_row

from agent import StopReason
from agent.durable.runner import Runner
from agent.durable.store._sql import TABLE
from agent.snapshot import SNAPSHOT_VERSION


def reads_of_rows(runner: Runner, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The run ids whose whole row (or snapshot) the runner's store is asked for from now on."""
    reads: list[str] = []
    for name in ("get", "snapshot"):
        real = getattr(runner.store, name)

        def spy(run_id: str, *args: Any, _real: Any = real) -> Any:
            reads.append(run_id)
            return _real(run_id, *args)

        monkeypatch.setattr(runner.store, name, spy)
    return reads


def test_a_sweep_reads_no_row_of_the_runs_it_leaves_for_a_newer_version(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dying = runner_of(store_url, billing_catalog(), lease_seconds=DYING_LEASE)
    asking = runner_of(store_url, billing_catalog())
    old = runner_of(store_url, billing_catalog())
    try:
        for run_id in ("c1", "c2"):
            with pytest.raises(Crash):
                state = counter_state(tmp_path / run_id, "crash")
                asyncio.run(dying.start("billing", "count", state=state, run_id=run_id))
            saved_as(store_url, run_id, SNAPSHOT_VERSION + 1)
        assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 2
        state = counter_state(tmp_path / "w1", "ask", wait=1)
        asked = asyncio.run(asking.start("billing", "count", state=state, run_id="w1"))
        assert asked.reason is StopReason.NEED_HELP
        saved_as(store_url, "w1", SNAPSHOT_VERSION + 1)

        reads = reads_of_rows(old, monkeypatch)
        assert asyncio.run(old.recover()) == [] and asyncio.run(old.sweep(now=time.time() + 60)) == []
        assert reads == []  # was ['c1', 'c2'] and ['w1']: each run's row, at every sweep
    finally:
        for runner in (dying, asking, old):
            runner.store.close()


def test_a_head_saved_before_the_store_kept_its_version_is_read_as_one_this_version_reads(
    store_url: str, tmp_path: Path
) -> None:
    """A store upgraded to schema 12 has no version for the heads saved before it (NULL): an Endstate
    older than the column saved them, which cannot be newer than this one. Its runs recover."""
    folder = tmp_path / "crash"
    dying = runner_of(store_url, billing_catalog(), lease_seconds=DYING_LEASE)
    old = runner_of(store_url, billing_catalog())
    try:
        with pytest.raises(Crash):
            asyncio.run(dying.start("billing", "count", state=counter_state(folder, "crash"), run_id="p1"))
        before = old.store.get("p1")
        assert before is not None and before.head_version == SNAPSHOT_VERSION
        edit_row(store_url, f"UPDATE {TABLE} SET head_version = NULL WHERE run_id = ?", "p1")
        assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 1
        [done] = asyncio.run(old.recover())
        assert (done.run_id, done.reason) == ("p1", StopReason.SUCCESS)
        assert counted(folder) == [1, 2, 3, 4]
    finally:
        dying.store.close()
        old.store.close()


def test_a_waiting_run_whose_task_type_the_catalog_lacks_is_not_swept_but_left_for_one_that_runs_it(
    store_url: str, tmp_path: Path
) -> None:
    """A rolling deploy that adds a task type: the old replica's sweep ended the new type's run past
    its deadline as `error` (a false one, on the dashboards); now the new replica's sweep applies its
    help policy."""
    new, old = Workers(store_url, task_typed("bulk-counting")), Workers(store_url, task_typed())
    try:
        state = counter_state(tmp_path / "a", "ask", wait=1)
        first = asyncio.run(new.new().start("counter", "ask", task_type="bulk-counting", state=state))
        assert first.reason is StopReason.NEED_HELP and first.suspension is not None
        later = first.suspension.deadline + 60
        sweeper = old.new()
        before = sweeper.store.get(first.run_id)
        assert before is not None
        assert asyncio.run(sweeper.sweep(now=later)) == []
        untouched(sweeper.store, before)
        [swept] = asyncio.run(new.new().sweep(now=later))
        assert (swept.reason, swept.task_type) == (StopReason.HELP_TIMEOUT, "bulk-counting")
    finally:
        old.close()
        new.close()
