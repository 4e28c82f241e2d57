"""review26: a run whose segment raised past every catch of the loop ends `error`, and its note said
"`endstate resume RUN_ID` continues it" (as the README says: resumable once fixed); a resume refused
it ("finished, not waiting or cancelled"). Now a resume continues it from the checkpoint its segment
saved; one that saved none says to start its task again, and a run an operator ended stays ended."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_probe24d_fleet import DYING_LEASE
from test_runner_agents import Crash, catalog, counted, counter_state, outlive_leases
from test_runner_segment_failed import failing

from agent import StopReason
from agent.durable.runner import Runner
from agent.durable.store import NotClaimable, RunStatus, open_store


def crashed_mid_run(store_url: str, folder: Path, run_id: str) -> None:
    """A run of the counter that checkpointed its first two counts, then its worker died."""
    dying = Runner(open_store(store_url), catalog(), lease_seconds=DYING_LEASE)
    try:
        with pytest.raises(Crash):
            asyncio.run(dying.start("counter", "count", state=counter_state(folder, "crash"), run_id=run_id))
        assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 1
    finally:
        dying.store.close()


def test_a_run_whose_segment_raised_after_its_checkpoints_is_resumed_from_them(
    store_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    crashed_mid_run(store_url, folder, "f1")
    runner = Runner(open_store(store_url), catalog())
    try:
        [job] = runner.recovery_jobs(watched=False)  # as `endstate recover` takes it
        failed = asyncio.run(runner.drive(failing(job)))  # a bug past every catch of the loop
        assert (failed.reason, failed.error_type) == (StopReason.ERROR, "RuntimeError")
        assert "`endstate resume f1` continues it" in failed.note
        done = asyncio.run(Runner(runner.store, catalog()).resume("f1"))  # was NotClaimable
        assert (done.reason, done.output) == (StopReason.SUCCESS, "counted to 4")
        assert counted(folder) == [1, 2, 3, 4]  # the checkpointed counts were not made again
    finally:
        runner.store.close()


def test_a_run_whose_segment_raised_before_any_checkpoint_says_to_start_it_again(
    store_url: str, tmp_path: Path
) -> None:
    runner = Runner(open_store(store_url), catalog())
    try:
        job = runner.begin("counter", "count", state=counter_state(tmp_path, "plain"), run_id="f2")
        failed = asyncio.run(runner.drive(failing(job)))
        assert failed.error_type == "RuntimeError" and "endstate resume" not in failed.note
        assert "start its task again" in failed.note
        with pytest.raises(NotClaimable):
            runner.claim("f2")
    finally:
        runner.store.close()


def test_a_run_an_operator_ended_mid_segment_is_not_resumed(store_url: str, tmp_path: Path) -> None:
    crashed_mid_run(store_url, tmp_path / "run", "f3")
    runner = Runner(open_store(store_url), catalog())
    try:
        ended = runner.end("f3", note="nobody runs this agent any more")
        assert ended.error_type == "ended_by_operator"
        with pytest.raises(NotClaimable):
            runner.claim("f3")
        record = runner.store.get("f3")
        assert record is not None and record.status is RunStatus.FINISHED
    finally:
        runner.store.close()
