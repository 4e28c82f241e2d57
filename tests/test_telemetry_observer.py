"""One self-guarded observer for spans and metrics; the counters other parts feed; GenAI durations."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from agent import Agent, ModelError, RunInfo, StopReason, tool
from agent.hooks import RunObserver, guard
from agent.models import ScriptedModel, call, finish
from telemetry import MetricsHooks, TelemetryHooks, TracingHooks
from telemetry import names as n

INFO = RunInfo("run-1", "probe", "triage", "m", "p", "task", tools=("look",))


@tool
def look(path: str) -> str:
    """Read a file."""
    return path


@tool
def broken(path: str) -> str:
    """Always fails."""
    raise ValueError("nope")


def rig() -> tuple[TelemetryHooks, InMemorySpanExporter, CollectorRegistry]:
    exporter, registry = InMemorySpanExporter(), CollectorRegistry()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return TelemetryHooks(MetricsHooks(registry), TracingHooks(provider)), exporter, registry


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    found = registry.get_sample_value(name, labels)
    assert found is not None, f"no series {name}{labels}"
    return found


def test_the_telemetry_observer_reaches_the_loop_unwrapped() -> None:
    hooks, _, _ = rig()
    observer = guard(hooks, INFO)
    assert type(observer).__name__ == "_RunTelemetry" and observer.guarded
    assert observer.trace_id  # the span part's ids, for the result


def test_the_span_observer_guards_itself_so_the_loop_calls_it_unwrapped() -> None:
    """Spans alone (`TracingHooks` as an agent's hooks) reach the loop as they are, with no wrapper
    of guards around them, and so do the turn hooks of the telemetry observer: no call between."""
    hooks, _, _ = rig()
    assert hooks.tracing is not None
    spans = guard(hooks.tracing, INFO)
    assert type(spans).__name__ == "_RunTrace" and spans.guarded
    observer = guard(hooks, INFO)
    assert observer.turn_started.__self__ is observer._spans  # type: ignore[attr-defined]


def test_a_failing_span_part_is_logged_and_the_run_and_its_metrics_go_on(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each hook of the span part guards itself: one raising at every turn's end is logged, and the
    run, its span and its metrics go on."""
    hooks, exporter, registry = rig()

    def fail(*args: Any) -> None:
        raise RuntimeError("span bug")

    monkeypatch.setattr("telemetry.tracing._RunTrace._span_of", fail)  # a turn's chat and tool spans
    steps = [[call("look", path="a")], [finish("done", "ok")]]
    result = Agent("probe", ScriptedModel(steps), tools=[look], hooks=hooks).run("t")
    assert result.reason is StopReason.SUCCESS
    assert "telemetry hook turn_ended (spans) failed" in caplog.text
    assert [s.name for s in exporter.get_finished_spans() if s.name.startswith(n.SPAN_INVOKE_AGENT)]
    labels = {"agent": "probe", "task_type": "default", "tool": "look", "outcome": n.TOOL_OK}
    assert value(registry, "agent_tool_calls_total", **labels) == 1


def test_a_failing_metrics_part_is_logged_and_the_run_and_its_spans_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hooks, exporter, _ = rig()

    class Failing(RunObserver):
        def tool_ended(self, *args: Any) -> None:
            raise RuntimeError("metrics bug")

    hooks.metrics.run_started = lambda info: Failing()  # type: ignore[method-assign]
    steps = [[call("look", path="a")], [finish("done", "ok")]]
    result = Agent("probe", ScriptedModel(steps), tools=[look], hooks=hooks).run("t")
    assert result.reason is StopReason.SUCCESS
    assert "telemetry hook tool_ended (metrics) failed" in caplog.text
    assert any(s.name.startswith(n.SPAN_INVOKE_AGENT) for s in exporter.get_finished_spans())


def test_a_failing_metrics_part_spares_the_spans_of_the_same_hook() -> None:
    """One `try` held both parts: metrics raising in model_ended or tool_ended skipped the span
    part, so the chat span lost its reply (usage, finish reason) and the tool span its outcome
    (both were ended as interrupted)."""
    hooks, exporter, _ = rig()

    class Failing(RunObserver):
        def model_ended(self, *args: Any) -> None:
            raise RuntimeError("metrics bug")

        def tool_ended(self, *args: Any) -> None:
            raise RuntimeError("metrics bug")

    hooks.metrics.run_started = lambda info: Failing()  # type: ignore[method-assign]
    steps = [[call("look", path="a")], [finish("done", "ok")]]
    Agent("probe", ScriptedModel(steps), tools=[look], hooks=hooks).run("t")
    spans = exporter.get_finished_spans()
    chats = [s for s in spans if s.name.startswith(n.OP_CHAT)]
    tools = [s for s in spans if s.name.startswith(n.OP_EXECUTE_TOOL)]
    assert len(chats) == 2 and len(tools) == 1
    for span in chats + tools:
        assert (span.attributes or {}).get(n.ERROR_TYPE) != n.ERROR_INTERRUPTED, span.name
    assert all((s.attributes or {}).get(n.GEN_AI_USAGE_INPUT_TOKENS) for s in chats)


def test_a_resumed_segment_is_counted_by_the_reason_it_resumes() -> None:
    registry = CollectorRegistry()
    metrics = MetricsHooks(registry)
    metrics.run_started(INFO)
    labels = {"agent": "probe", "task_type": "triage"}
    assert (
        value(registry, "agent_runs_resumed_total", **labels, stop_reason="need_help", stopped_ago="1h") == 0
    )
    metrics.run_started(
        RunInfo("run-1", "probe", "triage", "m", "p", "t", segment=2, resumed_from="cancelled")
    )
    metrics.run_started(
        RunInfo("run-2", "probe", "triage", "m", "p", "t", segment=2, resumed_from="need_help")
    )
    unknown = {**labels, "stopped_ago": "unknown"}  # these RunInfos say nothing of when it stopped
    assert value(registry, "agent_runs_resumed_total", **unknown, stop_reason="cancelled") == 1
    assert value(registry, "agent_runs_resumed_total", **unknown, stop_reason="need_help") == 1
    assert value(registry, "agent_runs_started_total", **labels) == 1  # a resumed run starts no new run


def test_success_audits_and_review_labels_are_counted() -> None:
    registry = CollectorRegistry()
    metrics = MetricsHooks(registry)
    metrics.run_started(INFO)
    labels = {"agent": "probe", "task_type": "triage"}
    for outcome in (n.AUDIT_CONFIRMED, n.AUDIT_FALSE_SUCCESS, n.AUDIT_ERROR):
        assert value(registry, "agent_success_audits_total", **labels, outcome=outcome) == 0
    metrics.record_success_audit("probe", "triage", n.AUDIT_FALSE_SUCCESS)
    assert value(registry, "agent_success_audits_total", **labels, outcome="false_success") == 1
    with pytest.raises(ValueError, match="confirmed"):
        metrics.record_success_audit("probe", "triage", "maybe")
    metrics.record_review_label("probe", "triage", "wrong_tool")
    metrics.record_review_label("probe", "triage", "free text, not a name")
    assert value(registry, "agent_review_labels_total", **labels, label="wrong_tool") == 1
    assert value(registry, "agent_review_labels_total", **labels, label="other") == 1


def test_agent_and_tool_durations_follow_the_genai_conventions() -> None:
    hooks, _, registry = rig()
    steps = [
        [call("look", path="a"), call("broken", path="b")],
        [call("look", path="c")],
        [finish("done", "ok")],
    ]
    Agent("probe", ScriptedModel(steps), tools=[look, broken], hooks=hooks).run("t")
    Agent("probe", ScriptedModel([ModelError("down", error_type="overloaded")] * 9), hooks=hooks).run("t")
    tool_ok = {"gen_ai_operation_name": "execute_tool", "gen_ai_tool_name": "look", "error_type": ""}
    assert value(registry, "gen_ai_execute_tool_duration_seconds_count", **tool_ok) == 2
    failed = {**tool_ok, "gen_ai_tool_name": "broken", "error_type": "ValueError"}
    assert value(registry, "gen_ai_execute_tool_duration_seconds_count", **failed) == 1
    agent = {
        "gen_ai_operation_name": "invoke_agent",
        "gen_ai_provider_name": "scripted",
        "gen_ai_agent_name": "probe",
        "gen_ai_request_model": "scripted",
    }
    assert value(registry, "gen_ai_invoke_agent_duration_seconds_count", **agent, error_type="") == 1
    assert (
        sum(
            s.value
            for m in registry.collect()
            if m.name == "gen_ai_invoke_agent_duration_seconds"
            for s in m.samples
            if s.name.endswith("_count") and s.labels["error_type"] not in ("",)
        )
        == 1
    )  # the run that ended `error`, under its error type


def test_a_span_part_failing_at_the_end_leaves_no_span_open_and_the_callers_context_current() -> None:
    """A redactor that raises on the stop note failed `run_ended` before the run span ended: the span
    was never exported, and the run's context stayed current in the caller's thread, so the next run
    there became a child of the first. Calls' spans failing left their turn span open the same way."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def redact(text: str) -> str:
        if "model call failed" in text:  # the stop note
            raise RuntimeError("redactor bug")
        return text

    hooks = TelemetryHooks(MetricsHooks(CollectorRegistry()), TracingHooks(provider, True, redact))
    before = otel_trace.get_current_span()
    steps = [[call("look", path="a")], ModelError("bad request", error_type="invalid_request")]
    result = Agent("probe", ScriptedModel(steps), tools=[look], hooks=hooks).run("t")
    assert result.reason is StopReason.ERROR and "model call failed" in result.note
    assert otel_trace.get_current_span() is before  # the caller's context, current again
    runs = [s for s in exporter.get_finished_spans() if s.name.startswith(n.SPAN_INVOKE_AGENT)]
    assert len(runs) == 1 and runs[0].parent is None
    Agent("probe", ScriptedModel([[finish("done", "ok")]]), hooks=hooks).run("t")
    runs = [s for s in exporter.get_finished_spans() if s.name.startswith(n.SPAN_INVOKE_AGENT)]
    assert len(runs) == 2 and runs[1].parent is None  # a root of its own, not a child of the first


def test_a_call_span_failing_still_ends_its_turn_span(monkeypatch: pytest.MonkeyPatch) -> None:
    hooks, exporter, _ = rig()

    def fail(*args: Any) -> None:
        raise RuntimeError("span bug")

    monkeypatch.setattr("telemetry.tracing._RunTrace._span_of", fail)
    steps = [[call("look", path="a")], [finish("done", "ok")]]
    Agent("probe", ScriptedModel(steps), tools=[look], hooks=hooks).run("t")
    turns = [s for s in exporter.get_finished_spans() if s.name == n.SPAN_TURN]
    assert len(turns) == 2
