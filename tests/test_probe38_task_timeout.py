"""A run's executions give a workflow task 120 s, not Temporal's default 10 s: a worker that has not run a
run replays its whole history in one workflow task (481 turns took 8.7 s on this machine, 2,500 turns
47.9 s), and a task that times out is tried again from the start, so a long run would never be taken up
by a new worker. The start and the resumed execution both carry it."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest
from temporal_server import TemporalServer
from test_temporal import queue, state, temporal, worker  # noqa: F401 (the session's server)

from agent.result import StopReason
from agent.temporal.client import WORKFLOW_TASK_TIMEOUT

pytestmark = pytest.mark.slow


async def task_timeout(runs: object, run_id: str) -> timedelta | None:
    described = await runs.client.get_workflow_handle(run_id).describe()  # type: ignore[attr-defined]
    return described.raw_description.execution_config.default_workflow_task_timeout.ToTimedelta()


def test_a_started_and_a_resumed_execution_give_a_workflow_task_120_s(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    assert timedelta(seconds=120) == WORKFLOW_TASK_TIMEOUT

    async def scenario() -> None:
        async with worker(temporal, queue()) as runs:
            asked = await runs.start("counter", "count", state=state(tmp_path, "question"))
            assert asked.reason is StopReason.NEED_HELP
            assert await task_timeout(runs, asked.run_id) == WORKFLOW_TASK_TIMEOUT
            await runs.cancel(asked.run_id)
            assert (await runs.result(asked.run_id)).reason is StopReason.CANCELLED
            await runs.submit_resume(asked.run_id)  # a new execution of the same run
            assert await task_timeout(runs, asked.run_id) == WORKFLOW_TASK_TIMEOUT

    asyncio.run(scenario())
