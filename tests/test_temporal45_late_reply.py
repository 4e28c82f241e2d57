"""temporal45: a reply to a run whose deadline passed while no worker polled its task queue is refused at
once (`NotClaimable`, nothing changed), as the store's runner refuses an answer past the deadline. It was
sent to the workflow and waited, for ever while no worker came, for the validator to refuse it. Against a
real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
from temporal_agents import catalog
from temporal_server import TemporalServer, serving, temporal_fixture, waiting

from agent.durable.store import NotClaimable, RunStatus
from agent.result import StopReason
from agent.temporal import TemporalRuns

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
LATE = r"deadline passed at .* UTC; the answer came too late and nothing was changed"
WAIT_S = 15  # the help deadline: it passes once the worker has stopped (under load too)


async def _until_past_deadline(runs: TemporalRuns, run_id: str) -> None:
    """Until the waiting run's deadline has passed (polled, 60 s at most)."""
    record = await runs.record(run_id)
    assert record is not None and record.deadline is not None
    until = time.monotonic() + 60
    while time.time() <= record.deadline + 0.5:
        assert time.monotonic() < until, "the run's deadline never passed"
        await asyncio.sleep(0.2)


async def _ended(runs: TemporalRuns, run_id: str) -> StopReason | None:
    """The run's stop once it has finished (120 s at most)."""
    until = time.monotonic() + 120
    while time.monotonic() < until:
        record = await runs.record(run_id)
        if record is not None and record.status is RunStatus.FINISHED:
            return record.stop_reason
        await asyncio.sleep(0.2)
    raise AssertionError(f"run {run_id} never finished")


def test_a_reply_past_the_deadline_while_no_worker_polls_is_refused_at_once(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        queue, run_id = f"late-{uuid.uuid4().hex[:8]}", f"late-{uuid.uuid4().hex[:8]}"
        state = {"script": "question", "dir": str(tmp_path), "wait": WAIT_S}
        async with serving(temporal, catalog(), queue) as runs:
            await runs.start("counter", "count", run_id=run_id, state=state, wait=False)
            await waiting(runs, run_id)
        # the worker is gone: nothing polls the queue while the deadline passes
        await _until_past_deadline(runs, run_id)
        replies = (
            lambda: runs.answer(run_id, "3"),
            lambda: runs.submit(run_id, answer="3"),  # the service's reply
            lambda: runs.approve(run_id),
        )
        for reply in replies:
            with pytest.raises(NotClaimable, match=LATE) as refused:
                await asyncio.wait_for(reply(), 60)  # it waited for a worker, for ever
            assert f"task queue {queue!r}" in str(refused.value)
        record = await runs.record(run_id)
        assert record is not None and record.status is RunStatus.WAITING  # as it was
        async with serving(temporal, catalog(), queue):  # a worker again: the deadline's timer ends it
            assert await _ended(runs, run_id) is StopReason.HELP_TIMEOUT

    asyncio.run(scenario())
