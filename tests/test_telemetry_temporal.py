"""The metrics of runs on a real Temporal server: replay never counts a run twice."""

from __future__ import annotations

import asyncio
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from load_bounds import FLUSH_S
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ports import PortTaken, held_by, on_free_port, port_clash
from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer, cli_env, endstate
from test_temporal import OpenSpans, queue, state, temporal, wait_for_line, worker  # noqa: F401  (temporal: the server fixture)
from test_temporal_fleet import CATALOG

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


def test_a_question_answered_on_temporal_is_counted_by_how_long_ago_the_run_asked(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The workflow's resumed segment knows when it suspended (by the workflow's clock): a resume
    minutes later is `stopped_ago="1h"`, never `unknown`, so the share rules weigh it as one."""

    async def scenario() -> None:
        telemetry = Telemetry.from_env({}, registry=CollectorRegistry())
        try:
            async with worker(temporal, queue(), hooks=telemetry.hooks) as runs:
                asked = await runs.start("counter", "count", state=state(tmp_path, "question"))
                assert asked.reason is StopReason.NEED_HELP
                done = await runs.answer(asked.run_id, "3")
            assert done.reason is StopReason.SUCCESS
            resumed = {**LABELS, "stop_reason": "need_help"}
            counts = {
                ago: telemetry.registry.get_sample_value(
                    f"{n.METRIC_RUNS_RESUMED}_total", resumed | {n.LABEL_STOPPED_AGO: ago}
                )
                for ago in n.STOPPED_AGO_VALUES
            }
            assert counts == {"1h": 1, "6h": 0, "1d": 0, "7d": 0, "older": 0, "unknown": 0}
        finally:
            telemetry.shutdown()

    asyncio.run(scenario())


@pytest.mark.parametrize("cached", [True, False])
def test_a_run_that_moves_to_another_worker_is_started_once_in_one_span_from_its_real_start(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
    cached: bool,
) -> None:
    """The first worker stops mid-segment; the second replays the run's history and finishes it.
    The fleet counts one start, and the segment's one span and `gen_ai.invoke_agent.duration` run
    from the segment's start, not from the move. Without a cache on the second worker the result
    was built again in the replay of the last workflow task, with no observer live: it carried no
    trace id, and each workflow task before began a span (a new trace) that never ended."""

    async def scenario() -> None:
        first, second = (_telemetry() for _ in range(2))
        opened = [OpenSpans.on(t) for t, _ in (first, second)]
        name = queue()
        hold = tmp_path / "hold.flag"  # count(3) waits for it on the first worker: the run cannot end there
        hold.write_text("hold")
        slow = state(tmp_path, "slow", sleep=0.1, max_turns=10, hold=str(hold), hold_at=3)
        try:
            # The first worker keeps no workflow cached (each task evicts it): a worker stopped with a
            # workflow in its cache drops it, and the garbage collector later closes its coroutine
            # outside any workflow, which the test run reports as an error (an SDK matter).
            async with worker(temporal, name, hooks=first[0].hooks, max_cached_workflows=0) as runs:
                run_id = str(await runs.start("counter", "count", state=slow, wait=False))
                await wait_for_line(tmp_path, run_id, "start 3")  # two turns done, the third's call held
            # the stop cancelled the held call (its thread spins on, and does not hold the stop up)
            moved = time.time()
            hold.unlink()  # the second worker runs count(3) again, not held
            options = {} if cached else {"max_cached_workflows": 0}
            async with worker(temporal, name, hooks=second[0].hooks, **options) as runs:
                result = await runs.result(run_id)
            assert result.reason is StopReason.SUCCESS
            for telemetry, _ in (first, second):
                assert telemetry.force_flush(FLUSH_S), "the spans were not exported"
            started = [
                t.registry.get_sample_value("agent_runs_started_total", LABELS) for t, _ in (first, second)
            ]
            assert started == [1, 0]
            spans = [s for _, exporter in (first, second) for s in exporter.get_finished_spans()]
            run_spans = [s for s in spans if s.name == "invoke_agent counter"]
            assert len(run_spans) == 1 and run_spans[0].attributes
            span = run_spans[0]
            assert span.attributes[n.AGENT_SEGMENT_REPLAYED] is True and span.attributes[n.AGENT_SEGMENT] == 1
            assert result.trace_id == f"{span.context.trace_id:032x}", (
                "the result points at its run span's trace"
            )
            assert span.start_time is not None and span.end_time is not None
            assert span.start_time / 1e9 < moved, (
                "the span starts where the segment started, on the first worker"
            )
            duration = second[0].registry.get_sample_value(DURATION + "_sum", INVOKE)
            assert duration == pytest.approx((span.end_time - span.start_time) / 1e9, abs=0.5)
            assert [o.names() for o in opened] == [[], []], "no span begun and never ended"
        finally:
            for telemetry, _ in (first, second):
                telemetry.shutdown()

    asyncio.run(scenario())


def test_a_worker_serves_the_series_of_its_runs_at_zero_and_polls_once_they_were_read(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    """`endstate worker --first-scrape-wait`: its catalog's runs' series are at zero on /metrics before
    it takes any workflow task, and it polls once Prometheus (here: this test) has read them."""
    log = tmp_path / "worker.log"
    proc, port = metrics_worker(temporal, queue(), log, "--first-scrape-wait", "120")
    try:
        assert proc.poll() is None, log.read_text()
        assert "polling task queue" not in log.read_text()  # it waits for the first read
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
            text = page.read().decode()
        # temporal_agents.catalog's agent, each resumed series at zero before the first read
        declared = 'agent="counter",stop_reason="cancelled",stopped_ago="1h",task_type="batch"'
        assert f"{n.METRIC_RUNS_RESUMED}_total{{{declared}}} 0.0" in text
        _until(lambda: "polling task queue" in log.read_text(), "the worker to poll after the scrape")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def metrics_worker(
    temporal: TemporalServer,  # noqa: F811
    task_queue: str,
    log: Path,
    *options: str,
) -> tuple[subprocess.Popen[bytes], int]:
    """`endstate worker` of the test catalog on `task_queue`, serving /metrics on a free port (with
    `options`), its output in `log`: the process and the port, once the port is held."""

    def start(port: int) -> tuple[subprocess.Popen[bytes], int]:
        argv = ["worker", "--temporal", temporal.address, "--task-queue", task_queue, "--catalog", CATALOG]
        argv += ["--metrics-port", str(port), *options]
        with log.open("w") as out:
            proc = subprocess.Popen(endstate(*argv), env=cli_env(), stdout=out, stderr=subprocess.STDOUT)
        _until(lambda: held_by(proc.pid, port) or proc.poll() is not None, "the worker's /metrics")
        if proc.poll() is not None and port_clash(log.read_text()):
            raise PortTaken(log.read_text()[-500:])
        return proc, port

    return on_free_port(start, "endstate worker --metrics-port")


def _until(check: Callable[[], object], what: str) -> None:
    for _ in range(1200):
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


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
