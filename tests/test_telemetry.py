"""Every stop reason, seen in spans and in metrics; resume across segments."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client import CollectorRegistry, generate_latest

from agent import (
    Agent,
    Budget,
    CompositeHooks,
    Extension,
    ModelError,
    RunResult,
    Snapshot,
    StopReason,
    predicate,
    tool,
)
from agent.models import ScriptedModel, call, finish, say
from agent.models.base import ModelReply, ModelRequest
from telemetry import MetricsHooks, TracingHooks
from telemetry import names as n

AGENT = "probe"
TASK_TYPE = "probe_task"


@tool
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


class OpenSpans(SpanProcessor):
    """Every span started and not yet ended: a span left open is never exported."""

    def __init__(self) -> None:
        self.open: dict[int, str] = {}

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        self.open[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        self.open.pop(span.context.span_id, None)


def bad_attributes(spans: list[ReadableSpan]) -> list[str]:
    """Values that OTLP backends drop or reject: None, nested or mixed-type arrays, other types."""
    bags = [(s.name, s.attributes) for s in spans] + [(e.name, e.attributes) for s in spans for e in s.events]
    return [
        f"{name}: {key}={value!r}"
        for name, bag in bags
        for key, value in (bag or {}).items()
        if not _plain(value)
    ]


def _plain(value: Any) -> bool:
    if isinstance(value, tuple):
        return len({type(v) for v in value}) <= 1 and all(
            _plain(v) for v in value if not isinstance(v, tuple)
        )
    return isinstance(value, str | bool | int | float)


@dataclass
class Rig:
    """Tracing and metrics hooks writing to an in-memory exporter and a fresh registry."""

    exporter: InMemorySpanExporter
    registry: CollectorRegistry
    hooks: CompositeHooks
    metrics: MetricsHooks
    open_spans: OpenSpans = field(default_factory=OpenSpans)
    labels: dict[str, str] = field(default_factory=lambda: {"agent": AGENT, "task_type": TASK_TYPE})

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def runs(self) -> list[ReadableSpan]:
        return sorted(
            (s for s in self.spans() if s.name == f"{n.SPAN_INVOKE_AGENT} {AGENT}"),
            key=lambda s: s.start_time or 0,
        )

    def children(self, parent: ReadableSpan, name: str | None = None) -> list[ReadableSpan]:
        kids = [s for s in self.spans() if s.parent and s.parent.span_id == parent.context.span_id]
        return sorted(
            (s for s in kids if name is None or s.name.startswith(name)), key=lambda s: s.start_time or 0
        )

    def scrape(self) -> str:
        return generate_latest(self.registry).decode()

    def value(self, metric: str, **labels: str) -> float:
        if metric == "agent_stops_total" and "stop_cause" not in labels:  # who gave up: gave_up only
            labels["stop_cause"] = "agent" if labels.get("stop_reason") == "gave_up" else ""
        value = self.registry.get_sample_value(metric, {**self.labels, **labels})
        assert value is not None, f"no series {metric}{labels}"
        return value


@contextlib.contextmanager
def rigged() -> Iterator[Rig]:
    """A rig that fails the test if a span is left open or carries a value OTLP drops."""
    exporter, open_spans = InMemorySpanExporter(), OpenSpans()
    provider = TracerProvider()
    provider.add_span_processor(open_spans)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    registry = CollectorRegistry()
    metrics = MetricsHooks(registry)
    rig = Rig(exporter, registry, CompositeHooks((TracingHooks(provider), metrics)), metrics, open_spans)
    yield rig
    provider.shutdown()
    assert not open_spans.open, f"spans never ended: {sorted(open_spans.open.values())}"
    assert not bad_attributes(rig.spans()), bad_attributes(rig.spans())


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


def build(rig: Rig, steps: list[Any], **kwargs: Any) -> Agent:
    kwargs.setdefault("tools", [look])
    return Agent(AGENT, ScriptedModel(steps), task_type=TASK_TYPE, hooks=rig.hooks, **kwargs)


def check_segment(rig: Rig, run_span: ReadableSpan, result: RunResult, turns: int) -> None:
    """The run span's attributes, and a well-formed tree of `turns` turns under it."""
    attrs = run_span.attributes or {}
    assert attrs[n.GEN_AI_OPERATION_NAME] == n.OP_INVOKE_AGENT
    assert attrs[n.GEN_AI_PROVIDER_NAME] == "scripted"
    assert attrs[n.GEN_AI_AGENT_NAME] == AGENT
    assert attrs[n.GEN_AI_REQUEST_MODEL] == "scripted"
    assert attrs[n.GEN_AI_CONVERSATION_ID] == result.run_id
    assert attrs[n.AGENT_TASK_TYPE] == TASK_TYPE
    assert attrs[n.STOP_REASON] == str(result.reason)
    assert attrs[n.STOP_VERIFIED] is result.verified
    assert attrs[n.AGENT_TURNS] == result.turns
    assert attrs[n.GEN_AI_USAGE_INPUT_TOKENS] == result.input_tokens
    assert attrs[n.GEN_AI_USAGE_OUTPUT_TOKENS] == result.output_tokens
    assert attrs[n.AGENT_COST_USD] == pytest.approx(result.cost_usd)
    assert attrs.get(n.STOP_LIMIT) == (str(result.limit) if result.limit else None)
    is_error = result.reason is StopReason.ERROR
    assert (run_span.status.status_code is StatusCode.ERROR) is is_error
    turn_spans = rig.children(run_span, n.SPAN_TURN)
    assert [(s.attributes or {})[n.AGENT_TURN_INDEX] for s in turn_spans] == list(
        range(result.turns - turns + 1, result.turns + 1)
    )
    for turn in turn_spans:
        assert n.AGENT_TURN_SIGNAL in (turn.attributes or {})
        assert turn.end_time and run_span.end_time and turn.end_time <= run_span.end_time
        for child in rig.children(turn):
            assert child.name.startswith((n.SPAN_CHAT + " ", n.SPAN_EXECUTE_TOOL + " ")), child.name
    assert run_span.context.trace_id == int(result.trace_id or "0", 16)


def check_stop_metrics(rig: Rig, result: RunResult, segment_cost: float) -> None:
    """One stop of the result's reason, and the histograms observed with the run's totals."""
    reason = str(result.reason)
    limit = str(result.limit) if result.limit else n.NO_LIMIT
    assert rig.value("agent_stops_total", stop_reason=reason, stop_limit=limit) == 1
    assert rig.value("agent_run_turns_count", stop_reason=reason) == 1
    assert rig.value("agent_run_turns_sum", stop_reason=reason) == result.turns
    assert rig.value("agent_run_active_seconds_count", stop_reason=reason) == 1
    assert rig.value("agent_run_active_seconds_sum", stop_reason=reason) == pytest.approx(
        result.active_seconds
    )
    tokens = result.input_tokens + result.output_tokens
    assert rig.value("agent_run_tokens_sum", stop_reason=reason) == tokens
    assert rig.value("agent_cost_usd_total", stop_reason=reason) == pytest.approx(segment_cost)
    assert rig.value("agent_runs_started_total") == 1


def single_segment(rig: Rig, result: RunResult, reason: StopReason, turns: int) -> ReadableSpan:
    assert result.reason is reason
    (run_span,) = rig.runs()
    assert run_span.parent is None
    check_segment(rig, run_span, result, turns)
    check_stop_metrics(rig, result, result.cost_usd)
    others = [r for r in StopReason if r is not reason]
    assert all(rig.value("agent_run_turns_count", stop_reason=str(r)) == 0 for r in others)
    return run_span


def test_success_after_a_rejected_done(rig: Rig) -> None:
    looked_twice = predicate(lambda ctx: len(ctx.calls) >= 2, "look at both files")
    steps = [
        [say("reading"), call("look", path="a")],
        [finish("done", "all read")],
        [call("look", path="b")],
        [finish("done", "all read now")],
    ]
    result = build(rig, steps, verifiers=[looked_twice]).run("read the files")
    run_span = single_segment(rig, result, StopReason.SUCCESS, turns=4)
    assert result.verified and (run_span.attributes or {})[n.STOP_VERIFIED] is True
    turns = rig.children(run_span, n.SPAN_TURN)
    signals = [(t.attributes or {})[n.AGENT_TURN_SIGNAL] for t in turns]
    assert signals == ["tool_use", "done_rejected", "tool_use", "success"]
    verify_events = [e for t in turns for e in t.events if e.name == n.EVENT_VERIFY]
    assert [(e.attributes or {})[n.AGENT_VERIFY_PASSED] for e in verify_events] == [False, True]
    assert list((verify_events[0].attributes or {})[n.AGENT_VERIFY_FAILURES]) == ["look at both files"]
    assert [c.name for c in rig.children(turns[0])] == ["chat scripted", "execute_tool look"]
    tool_span = rig.children(turns[0])[1]
    assert (tool_span.attributes or {})[n.GEN_AI_TOOL_NAME] == "look"
    assert (tool_span.attributes or {})[n.GEN_AI_TOOL_CALL_ID] == "toolu_001_1"
    chat = rig.children(turns[0])[0].attributes or {}
    assert chat[n.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_use",)
    assert chat[n.GEN_AI_RESPONSE_ID] == "msg_001"
    assert chat[n.GEN_AI_USAGE_INPUT_TOKENS] > 0
    assert rig.value("agent_verify_rejections_total") == 1
    assert rig.value("agent_tool_calls_total", tool="look", outcome="ok") == 2
    assert rig.value("agent_tool_calls_total", tool="look", outcome="error") == 0
    gen_ai = {
        "gen_ai_operation_name": "chat",
        "gen_ai_provider_name": "scripted",
        "gen_ai_request_model": "scripted",
    }
    # the model metrics carry the run's agent and task type (rig.value adds them) beside the GenAI labels
    assert rig.value("gen_ai_client_token_usage_count", **gen_ai, gen_ai_token_type="input") == 4
    assert (
        rig.value("gen_ai_client_token_usage_sum", **gen_ai, gen_ai_token_type="output")
        == result.output_tokens
    )
    assert rig.value("gen_ai_client_operation_duration_seconds_count", **gen_ai, error_type="") == 4


def test_limit_names_the_budget(rig: Rig) -> None:
    agent = Agent(
        AGENT,
        ScriptedModel(then=lambda turn: [call("look", path=f"p{turn}")]),
        tools=[look],
        task_type=TASK_TYPE,
        hooks=rig.hooks,
        budget=Budget(max_turns=2),
    )
    result = agent.run("read forever")
    single_segment(rig, result, StopReason.LIMIT, turns=2)
    assert rig.value("agent_stops_total", stop_reason="limit", stop_limit="seconds") == 0
    assert rig.value("agent_budget_limit", limit="turns") == 2
    assert rig.value("agent_budget_limit", limit="seconds") == 600


def test_gave_up(rig: Rig) -> None:
    result = build(rig, [[finish("give_up", "no access")]]).run("read the vault")
    single_segment(rig, result, StopReason.GAVE_UP, turns=1)


def test_no_progress(rig: Rig) -> None:
    result = build(rig, [[call("look", path="x")]] * 3).run("read x")
    single_segment(rig, result, StopReason.NO_PROGRESS, turns=3)
    assert rig.value("agent_tool_calls_total", tool="look", outcome="ok") == 3


def test_need_help_suspends_and_counts_as_pending(rig: Rig) -> None:
    result = build(rig, [[finish("need_help", "which file?")]]).run("read a file")
    single_segment(rig, result, StopReason.NEED_HELP, turns=1)
    assert result.trace_id and result.snapshot and result.snapshot.span_id
    assert rig.value("agent_help_pending") == 1
    assert rig.value("agent_help_oldest_pending_seconds") >= 0


def test_help_timeout_records_the_expired_wait(rig: Rig) -> None:
    agent = build(rig, [[finish("need_help", "which file?")]])
    first = agent.run("read a file")
    assert first.snapshot and first.suspension
    late = first.suspension.deadline + 5
    result = asyncio.run(agent.aexpire(first.snapshot, now=late))
    assert result.reason is StopReason.HELP_TIMEOUT
    first_span, second = rig.runs()
    check_segment(rig, second, result, turns=0)
    assert [link.context.span_id for link in second.links] == [first_span.context.span_id]
    (wait,) = rig.children(second, n.SPAN_HUMAN_WAIT)
    assert (wait.attributes or {})[n.AGENT_HUMAN_WAIT_OUTCOME] == "expired"
    s = first.suspension
    assert wait.start_time == int(s.suspended_at * 1e9)
    assert wait.end_time == int(s.deadline * 1e9)  # the wait for a person ended at the deadline
    check_stop_metrics(rig, result, 0.0)
    assert rig.value("agent_human_wait_seconds_count", outcome="expired") == 1
    waited = s.deadline - s.suspended_at  # not the 5 s the expiry came late
    assert rig.value("agent_human_wait_seconds_sum", outcome="expired") == pytest.approx(waited)
    assert result.waiting_seconds == pytest.approx(waited)  # the span and metric's wait (decide18)
    assert rig.value("agent_help_pending") == 0


def test_cancelled_by_the_caller(rig: Rig) -> None:
    stop = threading.Event()

    @tool
    def halt() -> str:
        """Stop everything."""
        stop.set()
        return "stopping"

    agent = build(rig, [[call("halt")]], tools=[halt])
    result = agent.run("stop", cancel=stop)
    single_segment(rig, result, StopReason.CANCELLED, turns=1)
    assert rig.value("agent_tool_calls_total", tool="halt", outcome="ok") == 1


def test_error_marks_the_run_and_the_call(rig: Rig) -> None:
    result = build(rig, [ModelError("boom", error_type="bad_request")]).run("anything")
    run_span = single_segment(rig, result, StopReason.ERROR, turns=1)
    assert run_span.status.status_code is StatusCode.ERROR
    assert (run_span.attributes or {})[n.ERROR_TYPE] == "bad_request"
    (turn,) = rig.children(run_span, n.SPAN_TURN)
    (chat,) = rig.children(turn, n.SPAN_CHAT)
    assert (chat.attributes or {})[n.ERROR_TYPE] == "bad_request"
    assert chat.status.status_code is StatusCode.ERROR
    labels = {
        "gen_ai_operation_name": "chat",
        "gen_ai_provider_name": "scripted",
        "gen_ai_request_model": "scripted",
    }
    failed = rig.value("gen_ai_client_operation_duration_seconds_count", **labels, error_type="bad_request")
    assert failed == 1


def test_tool_failures_and_timeouts_are_outcomes(rig: Rig) -> None:
    @tool
    def broken() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    @tool(timeout=0.05)
    async def slow() -> str:
        """Never in time."""
        await asyncio.sleep(5)
        return "late"

    steps = [[call("broken")], [call("slow")], [finish("give_up", "tools are down")]]
    build(rig, steps, tools=[broken, slow]).run("use the tools")
    assert rig.value("agent_tool_calls_total", tool="broken", outcome="error") == 1
    assert rig.value("agent_tool_calls_total", tool="slow", outcome="timeout") == 1
    tool_spans = [s for s in rig.spans() if s.name.startswith(n.SPAN_EXECUTE_TOOL)]
    assert sorted((s.attributes or {})[n.ERROR_TYPE] for s in tool_spans) == ["RuntimeError", "timeout"]


def test_resume_links_segments_and_records_the_wait(rig: Rig) -> None:
    steps = [[call("look", path="a")], [finish("need_help", "a or b?")], [finish("done", "read a")]]
    agent = build(rig, steps)
    first = agent.run("read the right file")
    assert first.snapshot and first.suspension and first.trace_id
    answered_at = first.suspension.suspended_at + 120
    second = asyncio.run(agent.aresume(first.snapshot, "a", now=answered_at))
    assert second.reason is StopReason.SUCCESS
    span1, span2 = rig.runs()
    check_segment(rig, span1, first, turns=2)
    check_segment(rig, span2, second, turns=2)  # the suspended turn 2 completes, then turn 3
    assert (span2.attributes or {})[n.GEN_AI_CONVERSATION_ID] == first.run_id
    assert (span2.attributes or {})[n.AGENT_SEGMENT] == 2
    (link,) = span2.links
    assert link.context.trace_id == span1.context.trace_id
    assert link.context.span_id == span1.context.span_id
    assert first.snapshot.span_id == f"{span1.context.span_id:016x}"
    (wait,) = rig.children(span2, n.SPAN_HUMAN_WAIT)
    assert wait.start_time == int(first.suspension.suspended_at * 1e9)
    assert wait.end_time == int(answered_at * 1e9)
    assert (wait.attributes or {})[n.AGENT_HUMAN_WAIT_OUTCOME] == "answered"
    assert rig.value("agent_runs_started_total") == 1
    assert rig.value("agent_stops_total", stop_reason="need_help", stop_limit="none") == 1
    assert rig.value("agent_stops_total", stop_reason="success", stop_limit="none") == 1
    assert rig.value("agent_human_wait_seconds_sum", outcome="answered") == pytest.approx(120)
    assert rig.value("agent_human_wait_seconds_bucket", outcome="answered", le="120.0") == 1
    assert rig.value("agent_help_pending") == 0
    assert rig.value("agent_cost_usd_total", stop_reason="need_help") == pytest.approx(first.cost_usd)
    spent_after = second.cost_usd - first.cost_usd
    assert rig.value("agent_cost_usd_total", stop_reason="success") == pytest.approx(spent_after)
    assert rig.value("agent_run_turns_sum", stop_reason="success") == 3  # the run's total, not the segment's
    turns = [s.attributes or {} for s in rig.spans() if s.name == n.SPAN_TURN]
    assert [(t[n.AGENT_TURN_INDEX], t.get(n.AGENT_TURN_CONTINUED, False)) for t in turns] == [
        (1, False), (2, False), (2, True), (3, False),
    ]  # fmt: skip
    assert sum(not t.get(n.AGENT_TURN_CONTINUED) for t in turns) == second.turns  # counted from spans: once


def test_a_turn_cancelled_before_its_reply_and_resumed_is_counted_once_from_spans(rig: Rig) -> None:
    """A cancellation mid model call: the turn is not counted, and its retry in the resumed segment
    has the same index and `agent.turn.continued`, so turns counted from spans equal the run's."""
    hang = asyncio.Event()

    class Hangs:
        name, provider = "scripted", "scripted"

        def __init__(self) -> None:
            self.inner, self.calls = ScriptedModel([[call("look", path="a")], [finish("done", "read")]]), 0

        async def complete(self, request: ModelRequest) -> ModelReply:
            self.calls += 1
            if self.calls == 2:
                hang.set()
                await asyncio.Event().wait()
            return await self.inner.complete(request)

    agent = Agent(AGENT, Hangs(), tools=[look], task_type=TASK_TYPE, hooks=rig.hooks)

    async def cancelled() -> RunResult:
        task = asyncio.create_task(agent.arun("read"))
        await hang.wait()
        task.cancel()
        return await task

    first = asyncio.run(cancelled())
    assert (first.reason, first.turns) == (StopReason.CANCELLED, 1)
    kept = Snapshot.from_json(first.snapshot.to_json())  # as a store keeps it
    second = Agent(AGENT, Hangs().inner, tools=[look], task_type=TASK_TYPE, hooks=rig.hooks).resume(kept)
    assert (second.reason, second.turns) == (StopReason.SUCCESS, 2), second.note
    turns = [s.attributes or {} for s in rig.spans() if s.name == n.SPAN_TURN]
    assert [(t[n.AGENT_TURN_INDEX], t.get(n.AGENT_TURN_CONTINUED, False)) for t in turns] == [
        (1, False), (2, False), (2, True),
    ]  # fmt: skip
    assert sum(not t.get(n.AGENT_TURN_CONTINUED) for t in turns) == second.turns  # counted from spans: once


def test_approved_tool_runs_under_the_resumed_segment(rig: Rig) -> None:
    @tool(needs_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    steps = [[call("delete", path="old.log")], [finish("done", "deleted")]]
    agent = build(rig, steps, tools=[delete])
    first = agent.run("clean up")
    assert first.reason is StopReason.NEED_HELP and first.snapshot
    second = agent.resume(first.snapshot, approved=True)
    assert second.reason is StopReason.SUCCESS
    _, span2 = rig.runs()
    (wait,) = rig.children(span2, n.SPAN_HUMAN_WAIT)
    assert (wait.attributes or {})[n.AGENT_HUMAN_WAIT_PENDING_TOOL] == "delete"
    completed_turn = rig.children(span2, n.SPAN_TURN)[0]  # the suspended turn, completed
    (tool_span,) = rig.children(completed_turn, n.SPAN_EXECUTE_TOOL)
    assert (tool_span.attributes or {})[n.GEN_AI_TOOL_NAME] == "delete"
    assert rig.value("agent_tool_calls_total", tool="delete", outcome="ok") == 1


def test_every_dashboard_series_exists_from_the_first_run(rig: Rig) -> None:
    build(rig, [[call("look", path="a")], [finish("give_up", "nothing to do")]]).run("nothing")
    for reason in StopReason:
        limits = ["turns", "seconds", "tokens", "cost"] if reason is StopReason.LIMIT else ["none"]
        for limit in limits:
            assert rig.value("agent_stops_total", stop_reason=str(reason), stop_limit=limit) >= 0
        for metric in ("agent_run_turns_count", "agent_run_active_seconds_count", "agent_run_tokens_count"):
            assert rig.value(metric, stop_reason=str(reason)) >= 0
        assert rig.value("agent_cost_usd_total", stop_reason=str(reason)) >= 0
    for outcome in ("answered", "expired"):
        assert rig.value("agent_human_wait_seconds_count", outcome=outcome) == 0
    for outcome in ("ok", "error", "timeout"):
        assert rig.value("agent_tool_calls_total", tool="look", outcome=outcome) >= 0
    assert rig.value("agent_verify_rejections_total") == 0
    assert rig.value("agent_help_pending") == 0
    assert rig.value("agent_help_oldest_pending_seconds") == 0
    for signal in ("traces", "metrics"):
        assert rig.registry.get_sample_value("agent_telemetry_export_failures_total", {"signal": signal}) == 0
    exposed = {s.name for m in rig.registry.collect() for s in m.samples}
    assert exposed >= n.EXPOSED_METRICS, n.EXPOSED_METRICS - exposed


def test_a_raising_hook_never_fails_the_run(rig: Rig) -> None:
    class Exploding:
        def run_started(self, info: Any) -> Any:
            return _Raiser()

    class _Raiser:
        trace_id = span_id = None

        def __getattr__(self, name: str) -> Callable[..., None]:
            def boom(*args: Any) -> None:
                raise RuntimeError(f"{name} broke")

            return boom

    steps = [[call("look", path="a")], [finish("done", "ok")]]
    plain = Agent(AGENT, ScriptedModel(steps), tools=[look], task_type=TASK_TYPE).run("t", run_id="r1")
    hooks = CompositeHooks((Exploding(), rig.hooks))
    watched = Agent(AGENT, ScriptedModel(steps), tools=[look], task_type=TASK_TYPE, hooks=hooks).run(
        "t", run_id="r1"
    )
    assert (watched.reason, watched.turns, watched.output) == (plain.reason, plain.turns, plain.output)
    assert rig.value("agent_stops_total", stop_reason="success", stop_limit="none") == 1


def test_a_limit_stop_continued_with_more_budget_is_marked_and_counted_once(rig: Rig) -> None:
    steps = [[call("look", path=str(i))] for i in range(3)] + [[finish("done", "read")]]
    agent = build(rig, steps, budget=Budget(max_turns=2))
    first = agent.run("read three")
    assert first.reason is StopReason.LIMIT and first.snapshot is not None
    second = agent.resume(first.snapshot, more=Extension(turns=5))
    assert second.reason is StopReason.SUCCESS
    span1, span2 = rig.runs()
    assert n.AGENT_BUDGET_EXTENDED not in (span1.attributes or {})
    assert (span2.attributes or {})[n.AGENT_BUDGET_EXTENDED] is True
    assert rig.value("agent_stops_total", stop_reason="limit", stop_limit="turns") == 1
    resumed = rig.value("agent_runs_resumed_total", stop_reason="limit", stopped_ago="1h")
    assert resumed == 1  # the limit was not its end
    assert rig.value("agent_budget_limit", limit="turns") == 7  # the ceiling the run now has


def test_chat_spans_carry_server_tool_uses_rate_limits_and_the_first_chunk_time(rig: Rig) -> None:
    """What the Anthropic adapter reads off a streamed reply reaches the chat span and the metrics."""

    class Streamed:
        provider, name = "anthropic", "claude-sonnet-5-5"

        async def complete(self, request: ModelRequest) -> ModelReply:
            limits = {
                "anthropic-ratelimit-requests-remaining": "49",
                "anthropic-fast-output-tokens-remaining": "0",
                "retry-after": "3",
            }
            return ModelReply(
                [{"type": "tool_use", "id": "t1", "name": "finish", "input": {"kind": "done", "note": "ok"}}],
                input_tokens=10,
                output_tokens=5,
                stop_reason="tool_use",
                time_to_first_token=0.25,
                server_tool_use={"web_search_requests": 2},
                extra={"rate_limit": limits},
            )

    Agent(AGENT, Streamed(), task_type=TASK_TYPE, hooks=rig.hooks).run("search")
    (chat,) = [s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT)]
    attrs = chat.attributes or {}
    assert attrs[f"{n.SERVER_TOOL_USE_PREFIX}web_search_requests"] == 2
    assert attrs[f"{n.RATE_LIMIT_PREFIX}requests-remaining"] == "49"
    assert attrs[f"{n.RATE_LIMIT_PREFIX}retry-after"] == "3"
    assert attrs[f"{n.RATE_LIMIT_PREFIX}fast-output-tokens-remaining"] == "0"  # fast mode's own limit
    assert attrs[n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] == 0.25
    first_chunk = {"gen_ai_operation_name": "chat", "gen_ai_provider_name": "anthropic"}
    first_chunk["gen_ai_request_model"] = "claude-sonnet-5-5"
    assert rig.value("gen_ai_client_operation_time_to_first_chunk_seconds_sum", **first_chunk) == 0.25


def test_a_run_whose_price_is_unknown_is_counted_and_its_cost_left_out(rig: Rig) -> None:
    agent = Agent(
        AGENT,
        ScriptedModel([[finish("done", "ok")]], name="mystery-model"),
        task_type=TASK_TYPE,
        hooks=rig.hooks,
    )
    result = agent.run("t")
    assert result.cost_usd is None
    assert rig.value("agent_cost_unknown_total") == 1
    assert rig.value("agent_cost_usd_total", stop_reason="success") == 0  # not a made-up $0 spend either
    (run,) = rig.runs()
    assert n.AGENT_COST_USD not in (run.attributes or {})


def test_a_refusal_is_counted_by_its_stop_cause_and_named_on_the_run_span(rig: Rig) -> None:
    from agent.models.scripted import reply

    refused = reply(say("I can't help with that."), stop_reason="refusal")
    agent = Agent(
        AGENT, ScriptedModel([refused, [finish("done", "x")]]), task_type=TASK_TYPE, hooks=rig.hooks
    )
    result = agent.run("t")
    assert (result.reason, str(result.cause)) == (StopReason.GAVE_UP, "refusal")
    stops = {"stop_reason": "gave_up", "stop_limit": "none"}
    assert rig.value("agent_stops_total", **stops, stop_cause="refusal") == 1
    gave_up = rig.registry.get_sample_value(
        "agent_stops_total", {**rig.labels, **stops, "stop_cause": "agent"}
    )
    assert not gave_up  # a refusal is not the agent giving up
    (run,) = rig.runs()
    assert (run.attributes or {})[n.STOP_CAUSE] == "refusal"


@tool
async def slow_look(path: str) -> str:
    """Read a file, slowly."""
    await asyncio.sleep(0.05)
    return path


def test_each_call_span_ends_when_its_call_ends_not_with_its_turn(rig: Rig) -> None:
    steps = [[call("slow_look", path="a"), call("slow_look", path="b")], [finish("done", "ok")]]
    build(rig, steps, tools=[slow_look]).run("look twice")
    (run_span,) = rig.runs()
    turn = rig.children(run_span, n.SPAN_TURN)[0]
    chat, first, second = rig.children(turn)
    assert chat.name.startswith(n.SPAN_CHAT) and first.name.startswith(n.SPAN_EXECUTE_TOOL)
    ends = [s.end_time or 0 for s in (chat, first, second)]
    starts = [s.start_time or 0 for s in (chat, first, second)]
    assert ends[0] <= starts[1] and ends[1] <= starts[2]  # one after another: no tool time in the chat
    assert (second.end_time or 0) - (second.start_time or 0) >= 50_000_000  # its own 50 ms
    assert (turn.start_time or 0) <= starts[0] and ends[2] <= (turn.end_time or 0)
