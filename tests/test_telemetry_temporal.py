"""The metrics of runs on a real Temporal server: replay never counts a run twice."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer
from test_temporal import queue, state, temporal, wait_for_line, worker  # noqa: F401  (temporal: the server fixture)

from agent.result import StopReason
from telemetry import Telemetry
from telemetry import names as n


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


def test_a_run_that_moves_to_another_worker_is_started_once_in_one_span_from_its_real_start(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The first worker stops mid-segment; the second replays the run's history and finishes it.
    The fleet counts one start, and the span that ends the segment (the first worker's never
    ends) and `gen_ai.invoke_agent.duration` run from the segment's start, not from the move."""

    async def scenario() -> None:
        first, second = (_telemetry() for _ in range(2))
        name = queue()
        try:
            async with worker(temporal, name, hooks=first[0].hooks) as runs:
                run_id = str(
                    await runs.start(
                        "counter", "count", state=state(tmp_path, "slow", sleep=0.5, max_turns=10), wait=False
                    )
                )
                await wait_for_line(tmp_path, run_id, "end 2")  # two turns done on the first worker
            moved = time.time()
            async with worker(temporal, name, hooks=second[0].hooks) as runs:
                result = await runs.result(run_id)
            assert result.reason is StopReason.SUCCESS
            for telemetry, _ in (first, second):
                telemetry.force_flush()
            started = [
                t.registry.get_sample_value("agent_runs_started_total", LABELS) for t, _ in (first, second)
            ]
            assert started == [1, 0]
            spans = [s for _, exporter in (first, second) for s in exporter.get_finished_spans()]
            run_spans = [s for s in spans if s.name == "invoke_agent counter"]
            assert len(run_spans) == 1 and run_spans[0].attributes
            span = run_spans[0]
            assert span.attributes[n.AGENT_SEGMENT_REPLAYED] is True and span.attributes[n.AGENT_SEGMENT] == 1
            assert span.start_time is not None and span.end_time is not None
            assert span.start_time / 1e9 < moved, (
                "the span starts where the segment started, on the first worker"
            )
            duration = second[0].registry.get_sample_value(DURATION + "_sum", INVOKE)
            assert duration == pytest.approx((span.end_time - span.start_time) / 1e9, abs=0.5)
        finally:
            for telemetry, _ in (first, second):
                telemetry.shutdown()

    asyncio.run(scenario())


LABELS = {"agent": "counter", "task_type": "counting"}
DURATION = n.METRIC_GEN_AI_INVOKE_AGENT_DURATION
INVOKE = {
    n.LABEL_GEN_AI_OPERATION_NAME: n.OP_INVOKE_AGENT,
    n.LABEL_GEN_AI_PROVIDER_NAME: "scripted",
    n.LABEL_GEN_AI_AGENT_NAME: "counter",
    n.LABEL_GEN_AI_REQUEST_MODEL: "scripted",
    n.LABEL_ERROR_TYPE: "",
}


def _telemetry() -> tuple[Telemetry, InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    return Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=spans), spans
