"""Content capture modes of the GenAI conventions: on spans, as events, both, or neither."""

from __future__ import annotations

import json
from typing import Any

import pytest
from load_bounds import FLUSH_S
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from agent import Agent, StopReason, tool
from agent.models import ScriptedModel, call, finish, say
from telemetry import Telemetry
from telemetry import names as n
from telemetry.capture import Capture, capture_from_env

SAID = "Looking at the ledger now"
TASK = "Summarise the quarterly numbers"
OPT_IN = {n.ENV_SEMCONV_STABILITY_OPT_IN: "http, gen_ai_latest_experimental"}


@tool
def ledger(quarter: str) -> str:
    """Read the ledger."""
    return f"revenue of {quarter} was 42"


def run(env: dict[str, str]) -> tuple[Telemetry, list[Any], list[Any]]:
    """One run under `env`; its spans and its content events."""
    spans, events = InMemorySpanExporter(), InMemoryLogRecordExporter()
    telemetry = Telemetry.from_env(env, CollectorRegistry(), span_exporter=spans, log_exporter=events)
    steps = [[say(SAID), call("ledger", quarter="Q3")], [finish("done", "42")]]
    agent = Agent(
        "writer", ScriptedModel(steps), instructions="Be brief.", tools=[ledger], hooks=telemetry.hooks
    )
    assert agent.run(TASK).reason is StopReason.SUCCESS
    assert telemetry.shutdown(FLUSH_S)
    return telemetry, list(spans.get_finished_spans()), [r.log_record for r in events.get_finished_logs()]


def span_content(spans: list[Any]) -> str:
    return " ".join(str(v) for s in spans for v in (s.attributes or {}).values())


@pytest.mark.parametrize(
    ("value", "on_spans", "as_events"),
    [
        ("NO_CONTENT", False, False),
        ("SPAN_ONLY", True, False),
        ("event_only", False, True),
        ("SPAN_AND_EVENT", True, True),
    ],
)
def test_each_capture_mode_puts_content_where_it_says(value: str, on_spans: bool, as_events: bool) -> None:
    _, spans, events = run({n.ENV_CAPTURE_CONTENT: value, **OPT_IN})
    assert (TASK in span_content(spans)) is on_spans
    assert (SAID in span_content(spans)) is on_spans
    chats = [s for s in spans if s.name.startswith(n.SPAN_CHAT)]
    assert len(events) == (len(chats) if as_events else 0)  # one event per model call
    for event, chat in zip(events, sorted(chats, key=lambda s: s.start_time or 0), strict=False):
        assert event.event_name == n.EVENT_INFERENCE_DETAILS
        attributes = dict(event.attributes or {})
        assert json.loads(attributes[n.GEN_AI_INPUT_MESSAGES])[0]["parts"][0]["content"] == TASK
        assert json.loads(attributes[n.GEN_AI_SYSTEM_INSTRUCTIONS])[0]["content"] == "Be brief."
        assert json.loads(attributes[n.GEN_AI_OUTPUT_MESSAGES])[0]["role"] == "assistant"
        assert attributes[n.GEN_AI_OPERATION_NAME] == n.OP_CHAT
        assert event.trace_id == chat.context.trace_id  # the event belongs to its chat span
        assert event.span_id == chat.context.span_id
    if as_events:
        said = json.loads(dict(events[0].attributes or {})[n.GEN_AI_OUTPUT_MESSAGES])[0]["parts"][0]
        assert said == {"type": "text", "content": SAID}


@pytest.mark.parametrize("value", ["SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT"])
def test_the_modes_need_the_semconv_opt_in(value: str, caplog: pytest.LogCaptureFixture) -> None:
    _, spans, events = run({n.ENV_CAPTURE_CONTENT: value})
    assert TASK not in span_content(spans) and events == []
    assert "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental" in caplog.text


@pytest.mark.parametrize(
    ("env", "mode"),
    [
        ({}, n.CAPTURE_NO_CONTENT),
        ({n.ENV_CAPTURE_CONTENT: "false"}, n.CAPTURE_NO_CONTENT),
        ({n.ENV_CAPTURE_CONTENT: "true"}, n.CAPTURE_SPAN_ONLY),  # the older switch, no opt-in needed
        ({n.ENV_CAPTURE_CONTENT: "TRUE", **OPT_IN}, n.CAPTURE_SPAN_ONLY),
        ({n.ENV_CAPTURE_CONTENT: "1", **OPT_IN}, n.CAPTURE_NO_CONTENT),
        ({n.ENV_CAPTURE_CONTENT: "span_and_event", **OPT_IN}, n.CAPTURE_SPAN_AND_EVENT),
        (
            {n.ENV_CAPTURE_CONTENT: "SPAN_ONLY", n.ENV_SEMCONV_STABILITY_OPT_IN: "gen_ai"},
            n.CAPTURE_NO_CONTENT,
        ),
    ],
)
def test_capture_values(env: dict[str, str], mode: str) -> None:
    assert capture_from_env(env) == Capture(mode)


def test_events_without_anywhere_to_send_them_are_refused_once(caplog: pytest.LogCaptureFixture) -> None:
    env = {n.ENV_CAPTURE_CONTENT: "EVENT_ONLY", **OPT_IN}
    telemetry = Telemetry.from_env(env, CollectorRegistry(), span_exporter=InMemorySpanExporter())
    assert telemetry.logger_provider is None
    assert caplog.text.count("asks for events") == 1
    telemetry.shutdown()
