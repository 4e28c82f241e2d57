"""The metrics of runs on a real Temporal server: replay never counts a run twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer
from test_temporal import queue, state, temporal, worker  # noqa: F401  (temporal: the server fixture)

from agent.result import StopReason
from telemetry import Telemetry


def test_a_run_replayed_at_every_workflow_task_is_counted_as_started_once(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    """With no workflow cache (a workflow that leaves it, on a busy worker) every workflow task
    replays the run and observes its segment again: it was counted as started at each (7 for 1)."""

    async def scenario() -> None:
        telemetry = Telemetry.from_env({}, registry=CollectorRegistry())
        try:
            async with worker(temporal, queue(), hooks=telemetry.hooks, max_cached_workflows=0) as runs:
                result = await runs.start("counter", "count", state=state(tmp_path, "success"))
            assert result.reason is StopReason.SUCCESS and result.turns == 3
            labels = {"agent": "counter", "task_type": "counting"}
            assert telemetry.registry.get_sample_value("agent_runs_started_total", labels) == 1
        finally:
            telemetry.shutdown()

    asyncio.run(scenario())
