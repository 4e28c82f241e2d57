"""Spans made whole (`telemetry.finished`): a turn's spans handed to the SDK's processors as finished
spans are the spans the SDK's own `start_span`/`end` would export, and the SDK's way is kept wherever
skipping it would be seen (a processor acting at a span's start, a sampler of its own, limits)."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
)
from opentelemetry.trace import StatusCode

from agent import Agent, Budget, predicate, tool
from agent.models.scripted import ScriptedModel, call, finish
from telemetry import TracingHooks
from telemetry.finished import Spans, _bounded, _Open

PER_RUN = "gen_ai.conversation.id"  # the run's id: another in each run


@tool
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tool
def broken(path: str) -> str:
    """Always fails."""
    raise RuntimeError("no such file")


@tool
def note(path: str) -> str:
    """Writes on the current span (the run's), as a team's own code or an instrumented client may."""
    current = trace.get_current_span()
    current.set_attribute("team.path", path)
    current.set_attributes({"team.list": ["a", "b"], "team.count": 2, "team.path": path + "!"})
    current.add_event("team.looked", {"path": path})
    try:
        raise ValueError("not there")
    except ValueError as exc:
        current.record_exception(exc, {"team.extra": 1})
    current.set_status(StatusCode.UNSET)  # ignored, as the SDK ignores it
    current.add_link(trace.INVALID_SPAN_CONTEXT)  # dropped, as the SDK drops it
    return "noted"


class StartWatcher(SpanProcessor):
    """A processor that acts when a span starts: what it saw start."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started.append(span.name)


class NoTools(Sampler):
    """Drops every tool call's span, keeps the rest."""

    def should_sample(
        self, parent_context: Any, trace_id: int, name: str, *args: Any, **kw: Any
    ) -> SamplingResult:
        decision = Decision.DROP if name.startswith("execute_tool") else Decision.RECORD_AND_SAMPLE
        return SamplingResult(decision, kw.get("attributes") or (args[1] if len(args) > 1 else None))

    def get_description(self) -> str:
        return "NoTools"


def run_traced(provider: TracerProvider) -> None:
    """Two turns: a good and a failing tool call, then `finish` that fails its check once, then passes."""
    checked: list[bool] = []

    def second_time(_: Any) -> bool:
        checked.append(True)
        return len(checked) > 1

    model = ScriptedModel(
        [
            [call("look", path="a"), call("broken", path="b"), call("note", path="c")],
            [finish("done", "done")],
            [finish("done", "done now")],
        ]
    )
    agent = Agent(
        "finished",
        model,
        tools=[look, broken, note],
        verifiers=[predicate(second_time, "not yet")],
        budget=Budget(max_turns=5, max_seconds=None),
        hooks=TracingHooks(provider),
    )
    result = agent.run("read")
    assert result.reason == "success", result


def traced(provider: TracerProvider, *extra: SpanProcessor) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    for processor in extra:
        provider.add_span_processor(processor)
    run_traced(provider)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def shape(spans: list[ReadableSpan]) -> list[tuple[Any, ...]]:
    """What a backend sees of each span but its ids and times: name, parent's name, kind, attributes,
    events, status, flags, what was dropped, resource and scope."""
    names = {s.context.span_id: s.name for s in spans}
    return sorted(
        (
            s.name,
            names.get(s.parent.span_id) if s.parent else None,
            s.kind,
            tuple(sorted((k, repr(v)) for k, v in s.attributes.items() if k != PER_RUN)),
            tuple((e.name, tuple(sorted((k, repr(v)) for k, v in e.attributes.items()))) for e in s.events),
            (s.status.status_code, s.status.description),
            int(s.context.trace_flags),
            (s.dropped_attributes, s.dropped_events, s.dropped_links),
            tuple(sorted(s.resource.attributes.items())),
            (s.instrumentation_scope.name, s.instrumentation_scope.version),
            len({s.context.trace_id for s in spans}),
        )
        for s in spans
    )


def test_spans_made_whole_are_the_sdks_and_a_processor_acting_at_start_gets_the_sdks_way() -> None:
    whole = traced(TracerProvider())
    watcher = StartWatcher()
    sdk_made = traced(TracerProvider(), watcher)
    # the watcher acts at a span's start: every span went the SDK's way, and it saw each begin
    assert sorted(watcher.started) == sorted(s.name for s in sdk_made)
    assert {"agent.turn", "chat scripted", "execute_tool look", "execute_tool broken"} <= set(watcher.started)
    assert shape(whole) == shape(sdk_made)
    (run,) = [s for s in whole if s.name == "invoke_agent finished"]
    assert run.attributes["team.path"] == "c!" and run.attributes["team.list"] == ("a", "b")
    assert [e.name for e in run.events] == ["team.looked", "exception"]
    assert run.events[1].attributes["exception.type"] == "ValueError"
    assert run.events[1].attributes["team.extra"] == 1
    failed = [s for s in whole if s.name == "execute_tool broken"]
    assert failed and failed[0].status.status_code.name == "ERROR"
    assert any(e.name for s in whole for e in s.events)  # the check that failed once is an event


def test_a_processor_added_later_sees_the_next_spans_start() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run_traced(provider)  # spans made whole
    watcher = StartWatcher()
    provider.add_span_processor(watcher)
    run_traced(provider)
    assert watcher.started.count("agent.turn") == 3
    assert len(exporter.get_finished_spans()) == 2 * len(watcher.started)


def test_sampling_is_the_tracers() -> None:
    assert traced(TracerProvider(sampler=ALWAYS_OFF)) == []
    off_below = ParentBased(ALWAYS_ON, local_parent_sampled=ALWAYS_OFF)  # only the run span
    assert [s.name for s in traced(TracerProvider(sampler=off_below))] == ["invoke_agent finished"]
    no_tools = ParentBased(ALWAYS_ON, local_parent_sampled=NoTools())  # a sampler of its own, asked
    names = [s.name for s in traced(TracerProvider(sampler=no_tools))]
    assert "agent.turn" in names and "chat scripted" in names
    assert not [n for n in names if n.startswith("execute_tool")]


@pytest.mark.parametrize(
    "limits",
    [
        SpanLimits(max_span_attributes=2, max_span_attribute_length=4, max_events=0),
        SpanLimits(max_span_attributes=2),  # values all clean, too many of them
    ],
)
def test_span_limits_hold_as_the_sdks(limits: SpanLimits) -> None:
    whole = traced(TracerProvider(span_limits=limits))
    sdk_made = traced(TracerProvider(span_limits=limits), StartWatcher())
    assert shape(whole) == shape(sdk_made)
    assert all(len(s.attributes) <= 2 for s in whole)
    assert all(s.dropped_attributes for s in whole if s.name == "chat scripted")
    longest = limits.max_span_attribute_length or 10**9
    assert all(len(v) <= longest for s in whole for v in s.attributes.values() if isinstance(v, str))


def test_attributes_not_already_clean_are_cleaned_as_the_sdk_cleans_them() -> None:
    limits = SpanLimits(max_span_attributes=3, max_span_attribute_length=3)
    odd = {"list": ["a", "bcde"], "none": None, "bytes": b"x", "long": "abcdef", "": 1}
    kept = _bounded(odd, limits)
    assert dict(kept) == {"none": None, "bytes": b"x", "long": "abc"}
    assert getattr(kept, "dropped", None) == 2
    assert _bounded({"a": "abc", "b": (1, 2)}, limits) == {"a": "abc", "b": (1, 2)}


def test_a_span_opened_under_a_span_made_whole_is_its_child() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spans = Spans(provider.get_tracer("t"))
    root = provider.get_tracer("t").start_span("root")
    parent = spans.open("parent", trace.set_span_in_context(root), trace.SpanKind.INTERNAL, {"a": 1}, 10)
    assert isinstance(parent, _Open)
    child = spans.open("child", spans.parent_of(parent), trace.SpanKind.CLIENT, {"b": 2}, 11)
    spans.close(child, 12)
    spans.close(parent, 13, [("e", {"c": 3}, 12)])
    root.end()
    made = {s.name: s for s in exporter.get_finished_spans()}
    assert made["child"].parent.span_id == made["parent"].context.span_id
    assert made["parent"].parent.span_id == made["root"].context.span_id
    assert made["child"].context.trace_id == made["root"].context.trace_id
    assert (made["child"].start_time, made["child"].end_time) == (11, 12)
    assert [(e.name, dict(e.attributes), e.timestamp) for e in made["parent"].events] == [("e", {"c": 3}, 12)]
