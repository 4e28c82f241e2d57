"""Parts of the service tested in this process: the demo workload's stop, the inbox's rendering."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent.examples.scenarios import example_catalog
from agent.runner import Runner
from agent.service.inbox import item
from agent.service.workload import DemoWorkload
from agent.store import RunRecord, RunStatus, open_store


def test_a_cancelled_demo_workload_leaves_no_follow_up_behind(tmp_path: Path) -> None:
    """The service cancels the workload at shutdown: its follow-ups must go with it, not be left
    pending on a loop that is about to close."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    workload = DemoWorkload(runner, interval=0.01, answer_after=60)

    async def scenario() -> list[bool]:
        playing = asyncio.create_task(workload.run())
        while not workload._later:  # noqa: ASYNC110  (waits for a question to be scheduled)
            await asyncio.sleep(0.01)
        later = list(workload._later)
        playing.cancel()
        await asyncio.gather(playing, return_exceptions=True)
        left_behind = [not task.done() for task in later]
        await runner.shutdown(grace=10)
        return left_behind

    try:
        left_behind = asyncio.run(scenario())
    finally:
        runner.catalog.close()
        store.close()
    assert left_behind and not any(left_behind)


def test_the_inbox_shows_a_deadline_in_utc_not_in_the_servers_zone() -> None:
    record = RunRecord(
        run_id="r1", agent="a", task="t", task_type="default", status=RunStatus.WAITING, state={},
        started_at=0.0, updated_at=0.0, question="Which?", deadline=1_800_000_000.0, suspended_at=0.0,
    )  # fmt: skip
    shown = item(record, now=1_799_990_000.0, signed_in=False)
    assert "deadline 2027-01-15 08:00:00 UTC" in shown
