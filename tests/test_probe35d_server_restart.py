"""probe35d: Temporal's development server restarted under a live worker, against a real server.

The dev server keeps its state in memory: restarted, it has lost Endstate's search attributes, which the
worker registered only as it started. A run then started by Temporal's own tools (`temporal workflow
start --type EndstateRun`, a Schedule, as README documents) failed every workflow task ("no mapping
defined for search attribute EndstateAgent") and never ended, with no stop reason.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporal_agents import catalog
from temporal_server import RestartableServer, serving
from test_temporal import listed_as

from agent.durable.store import RunStatus
from agent.result import StopReason
from agent.temporal import worker as worker_module

pytestmark = pytest.mark.slow


@pytest.fixture(name="server")
def server_fixture() -> Iterator[RestartableServer]:
    server = RestartableServer()
    yield server
    server.stop()


def test_a_run_started_by_hand_after_the_server_restarted_under_a_live_worker_ends_named(
    server: RestartableServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        worker_module, "ATTRIBUTES_EVERY", 0.5, raising=False
    )  # the check's pace, not what it does

    async def scenario() -> None:
        async with serving(server, catalog()) as runs:
            await asyncio.to_thread(server.restart)  # the worker polls on through it
            run_id = f"by-hand-{uuid.uuid4().hex[:8]}"
            start = {
                "agent": "counter",
                "task": "Count",
                "state": {"script": "success", "dir": str(tmp_path)},
            }
            await runs.client.start_workflow("EndstateRun", start, id=run_id, task_queue=runs.task_queue)
            result = await asyncio.wait_for(runs.result(run_id), 120)  # was: no end, ever
            assert (result.reason, result.verified) == (StopReason.SUCCESS, True)
            [record] = await listed_as(runs, run_id, RunStatus.FINISHED)  # visibility lags the run's end
            assert (record.run_id, record.agent, record.stop_reason) == (
                run_id,
                "counter",
                StopReason.SUCCESS,
            )

    asyncio.run(scenario())
