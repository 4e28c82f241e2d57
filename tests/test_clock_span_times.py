"""clock: a run segment's spans never end before they begin, and its turns and calls lie inside its run
span, whatever the clocks do.

Before: the run span began at the run's `started_at`, by the run's clock (a runner's is the run store's:
the PostgreSQL server's; Temporal's is the workflow's; a test's is its own), and everything else began
and ended by this host's wall clock. A store clock a minute ahead of the worker's made a run span of a
few seconds end 55 s before it began, its turns outside it. And a step of the wall clock mid-run (an
NTP correction back) made the call then under way end before it began. Now a segment's spans are timed
by this host's wall clock as the segment began, carried on by the monotonic clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pg
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_runner_agents import catalog, counter_state

from agent import Agent, StopReason, tool
from agent.clock import SystemClock
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.durable.store._sql import SqlStore
from agent.models import ScriptedModel, call, finish
from telemetry import TracingHooks
from telemetry import names as n

AHEAD = 60.0  # seconds the run's clock runs ahead of this host's
STEP = 60.0  # seconds the wall clock is stepped back mid-call


class Ahead(SystemClock):
    """The run's clock: this host's, a minute ahead (as a run store's or Temporal's may be)."""

    def time(self) -> float:
        return super().time() + AHEAD


@pytest.fixture
def traced() -> Iterator[tuple[TracingHooks, InMemorySpanExporter]]:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield TracingHooks(provider), exporter
    provider.shutdown()


@tool
def look(path: str) -> str:
    """Read a file."""
    return f"{path}: ok"


def _steps() -> list[Any]:
    return [[call("look", path="a")], [finish("done", "read a")]]


def _check_times(spans: Sequence[ReadableSpan]) -> None:
    """Every span ends no earlier than it begins, and lies within the run span of its segment."""
    [run] = [s for s in spans if s.name.startswith(n.SPAN_INVOKE_AGENT)]
    assert run.start_time is not None and run.end_time is not None
    for span in spans:
        assert span.start_time is not None and span.end_time is not None
        assert span.end_time >= span.start_time, (span.name, (span.end_time - span.start_time) / 1e9)
        assert run.start_time <= span.start_time and span.end_time <= run.end_time, span.name
    assert {n.SPAN_TURN, f"{n.SPAN_EXECUTE_TOOL} look"} <= {s.name for s in spans}


def test_a_run_clock_ahead_of_this_host_s_makes_no_run_span_end_before_it_began(
    traced: tuple[TracingHooks, InMemorySpanExporter],
) -> None:
    hooks, exporter = traced
    agent = Agent("t", ScriptedModel(_steps()), tools=[look], hooks=hooks, clock=Ahead())
    assert agent.run("read a").reason is StopReason.SUCCESS
    _check_times(exporter.get_finished_spans())


def test_a_wall_clock_stepped_back_mid_call_makes_no_span_end_before_it_began(
    traced: tuple[TracingHooks, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks, exporter = traced
    real = time.time_ns

    @tool
    def slow_look(path: str) -> str:
        """Read a file; the wall clock is stepped back meanwhile (NTP)."""
        monkeypatch.setattr(time, "time_ns", lambda: real() - int(STEP * 1e9))
        return f"{path}: ok"

    steps = [[call("slow_look", path="a")], [finish("done", "read a")]]
    agent = Agent("t", ScriptedModel(steps), tools=[slow_look], hooks=hooks)
    assert agent.run("read a").reason is StopReason.SUCCESS
    spans = exporter.get_finished_spans()
    [tool_span] = [s for s in spans if s.name == f"{n.SPAN_EXECUTE_TOOL} slow_look"]
    assert tool_span.start_time is not None and tool_span.end_time is not None
    assert 0 <= tool_span.end_time - tool_span.start_time < 10e9  # was -60 s
    for span in spans:
        assert span.start_time is not None and span.end_time is not None
        assert span.end_time >= span.start_time, span.name


def test_a_runner_on_a_store_whose_clock_runs_ahead_makes_whole_spans(
    traced: tuple[TracingHooks, InMemorySpanExporter], tmp_path: Path
) -> None:
    hooks, exporter = traced
    store = open_store(pg.url_for("postgres", tmp_path))
    assert isinstance(store, SqlStore)
    store.clock = f"({type(store).clock} + {AHEAD})"  # the PostgreSQL server's clock, a minute ahead
    runner = Runner(store, catalog(), hooks=hooks)
    try:
        state = counter_state(tmp_path / "run", "plain")
        assert asyncio.run(runner.start("counter", "count", state=state)).reason is StopReason.SUCCESS
    finally:
        runner.catalog.close()
        store.close()
    spans = exporter.get_finished_spans()
    [run] = [s for s in spans if s.name.startswith(n.SPAN_INVOKE_AGENT)]
    assert run.start_time is not None and run.end_time is not None
    assert run.end_time >= run.start_time, (run.end_time - run.start_time) / 1e9
    for span in spans:
        assert span.start_time is not None and run.start_time <= span.start_time, span.name
