"""probe24d: a rolling deploy, an old and a new version of the code on one store (SQLite and PostgreSQL).

A run that a newer Endstate checkpointed (a newer snapshot version) was claimed by an old runner's
recovery or deadline sweep, which could not read it and ended it `error` (`bad_snapshot`): a false
error, in the middle of every deploy that changes the snapshot's version, for a run the new version
would have continued. Now an old runner leaves such a run untouched for a runner that reads it (and
says so once per version). The rows of a newer version are stood in for by editing the version that
the stored head says it is, as a newer Endstate would have written it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import pytest
from test_probe24d_fleet import DYING_LEASE, billing_catalog, runner_of, untouched
from test_runner_agents import Crash, counted, counter_state, outlive_leases
from test_store import edit_row

from agent import StopReason
from agent.durable.store import RunStatus
from agent.durable.store._sql import TABLE
from agent.snapshot import SNAPSHOT_VERSION


def saved_as(store_url: str, run_id: str, version: int) -> None:
    """The run's head says it is of snapshot `version`, and so does the row's `head_version` (as that
    version of Endstate would write them)."""
    store = open_store_of(store_url)
    try:
        record = store.get(run_id)
        assert record is not None and record.snapshot_json
        head = json.loads(record.snapshot_json) | {"version": version}
    finally:
        store.close()
    edit_row(
        store_url,
        f"UPDATE {TABLE} SET snapshot = ?, head_version = ? WHERE run_id = ?",
        json.dumps(head),
        version,
        run_id,
    )


def open_store_of(store_url: str):  # type: ignore[no-untyped-def]
    from agent.durable.store import open_store

    return open_store(store_url)


def test_a_crashed_run_a_newer_version_saved_is_left_by_an_old_runner_not_ended_as_error(
    store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "crash"
    dying = runner_of(store_url, billing_catalog(), lease_seconds=DYING_LEASE)
    with pytest.raises(Crash):
        asyncio.run(dying.start("billing", "count", state=counter_state(folder, "crash"), run_id="n1"))
    assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 1
    saved_as(store_url, "n1", SNAPSHOT_VERSION + 1)  # a newer Endstate checkpointed it
    old = runner_of(store_url, billing_catalog())
    try:
        before = old.store.get("n1")
        assert before is not None and before.status is RunStatus.RUNNING
        with caplog.at_level(logging.WARNING, logger="endstate.runner"):
            assert asyncio.run(old.recover()) == [] and asyncio.run(old.recover()) == []
        untouched(old.store, before)
        said = [r.getMessage() for r in caplog.records if "newer Endstate" in r.getMessage()]
        assert len(said) == 1 and f"snapshot version {SNAPSHOT_VERSION + 1}" in said[0], said

        saved_as(store_url, "n1", SNAPSHOT_VERSION)  # a runner that reads it: here, as it was written
        [done] = asyncio.run(old.recover())
        assert (done.run_id, done.reason) == ("n1", StopReason.SUCCESS)
        assert counted(folder) == [1, 2, 3, 4]
    finally:
        dying.store.close()
        old.store.close()


def test_a_waiting_run_a_newer_version_saved_is_not_swept_by_an_old_runner(
    store_url: str, tmp_path: Path
) -> None:
    asking = runner_of(store_url, billing_catalog())
    first = asyncio.run(
        asking.start("billing", "count", state=counter_state(tmp_path / "a", "ask", wait=1), run_id="n2")
    )
    assert first.reason is StopReason.NEED_HELP
    saved_as(store_url, "n2", SNAPSHOT_VERSION + 1)
    later = time.time() + 60
    try:
        before = asking.store.get("n2")
        assert before is not None
        assert asyncio.run(asking.sweep(now=later)) == []
        untouched(asking.store, before)
        saved_as(store_url, "n2", SNAPSHOT_VERSION)
        [done] = asyncio.run(asking.sweep(now=later))
        assert (done.run_id, done.reason) == ("n2", StopReason.HELP_TIMEOUT)
    finally:
        asking.store.close()
