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


def test_a_restarted_demo_workload_follows_up_the_requests_it_left_waiting(tmp_path: Path) -> None:
    """A fresh stack must not page itself: after a restart, the demo's old questions and
    approvals are answered (or its unanswered ones expired by the sweep), not left pending."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))

    async def first_process() -> None:  # plays one round, then "dies" before any follow-up is due
        workload = DemoWorkload(runner, interval=3600, answer_after=3600)
        playing = asyncio.create_task(workload.run())
        while workload.rounds == 0:  # noqa: ASYNC110  (one round of every scenario)
            await asyncio.sleep(0.01)
        playing.cancel()
        await asyncio.gather(playing, return_exceptions=True)
        await runner.shutdown(grace=10)

    async def restarted() -> None:  # follow-ups due at once; stop after them, before a new round
        runner.shutting_down.clear()
        workload = DemoWorkload(runner, interval=3600, answer_after=0)
        playing = asyncio.create_task(workload.run())
        while workload.rounds == 0 or workload._later:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        workload.stop()
        await playing
        await runner.shutdown(grace=30)
        await runner.sweep()  # what the service's sweep does with the unanswered ones (deadline 0 s)

    try:
        asyncio.run(first_process())
        left = [r.run_id for r in store.list_runs(RunStatus.WAITING, limit=None)]
        assert left  # the first process left requests waiting
        asyncio.run(restarted())
        still = [r.run_id for r in store.list_runs(RunStatus.WAITING, limit=None) if r.run_id in left]
        assert still == []
    finally:
        runner.catalog.close()
        store.close()
