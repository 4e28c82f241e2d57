"""A model's tool names and call ids on spans with content capture off (the auditT review).

A model may call a tool that does not exist, and a model (or a hostile server, or a foreign framework
observed by Endstate) chooses the name and id of each call. Both went onto the `execute_tool` span
raw: a secret a prompt injection put in a made-up tool name was exported with content capture off,
and a 10 kB name, or one with line breaks, named a span. The metrics already count such a name as
"other"; the spans now keep a configured tool's name, a made-up name redacted and only when it looks
like a name (else "other"), and a call id as a provider's id is shown (bounded, escaped). A reply's
model with a lone surrogate (JSON's `\\ud800`) was dropped from the chat span by the OTLP encoder, an
error logged.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import Agent, RunResult, StopReason, tool
from agent.hooks import RunInfo
from agent.models import ScriptedModel, call, finish
from agent.models.base import ModelReply, ModelRequest
from telemetry import TracingHooks
from telemetry import names as n
from telemetry.redact import REDACTED

KEY = "sk-ant-api03-PLANTEDsecretKEY0123456789"


@tool
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def tool_spans(steps: list[Any]) -> list[ReadableSpan]:
    """The `execute_tool` spans of a run of `steps`, content capture off (the default)."""
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent("probe", ScriptedModel(steps), task_type="t", hooks=TracingHooks(provider), tools=[look])
    result = agent.run("read a")
    assert result.reason is StopReason.SUCCESS
    provider.shutdown()
    spans = exporter.get_finished_spans()
    return sorted(
        (s for s in spans if s.name.startswith(n.SPAN_EXECUTE_TOOL)), key=lambda s: s.start_time or 0
    )


def with_id(block: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {**block, "id": call_id}


def everything(span: ReadableSpan) -> str:
    return span.name + repr(dict(span.attributes or {}))


def test_a_made_up_tool_name_holding_a_secret_is_not_exported_with_capture_off() -> None:
    (span,) = tool_spans([[call(KEY, path="a")], [finish("done", "read a")]])
    assert KEY not in everything(span)
    assert (span.attributes or {})[n.GEN_AI_TOOL_NAME] == REDACTED
    assert span.name == f"{n.SPAN_EXECUTE_TOOL} {REDACTED}"


def test_a_huge_or_multiline_tool_name_does_not_name_a_span() -> None:
    steps = [[call("x" * 10_000)], [call("look\nforged: yes")], [call("a b")], [finish("done", "ok")]]
    spans = tool_spans(steps)
    assert [(s.attributes or {})[n.GEN_AI_TOOL_NAME] for s in spans] == [n.TOOL_OTHER] * 3
    assert all(len(s.name) < 100 for s in spans)


def test_configured_and_plain_made_up_names_are_kept() -> None:
    spans = tool_spans([[call("look", path="a"), call("serach", q="a")], [finish("done", "read a")]])
    assert [(s.attributes or {})[n.GEN_AI_TOOL_NAME] for s in spans] == ["look", "serach"]
    assert [s.name for s in spans] == [f"{n.SPAN_EXECUTE_TOOL} look", f"{n.SPAN_EXECUTE_TOOL} serach"]


def test_a_call_id_the_model_chose_is_bounded_and_escaped() -> None:
    hostile = "toolu_\x1b[31m\n" + "y" * 20_000
    (span,) = tool_spans([[with_id(call("look", path="a"), hostile)], [finish("done", "read a")]])
    shown = str((span.attributes or {})[n.GEN_AI_TOOL_CALL_ID])
    assert shown.startswith("toolu_")
    assert len(shown) <= 128
    assert "\x1b" not in shown and "\n" not in shown


def test_a_reply_model_with_a_lone_surrogate_is_kept_and_encodes() -> None:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run = TracingHooks(provider).run_started(RunInfo("r1", "probe", "t", "model", "anthropic", "task"))
    run.turn_started(1)
    run.model_started(ModelRequest("", [], [], 100), 1)
    run.model_ended(ModelReply([], 3, 1, model="model-\ud800"), None)
    run.turn_ended(1, StopReason.SUCCESS)
    run.run_ended(RunResult("r1", "probe", "t", StopReason.SUCCESS, turns=1))
    provider.shutdown()
    (chat,) = [s for s in exporter.get_finished_spans() if s.name.startswith(n.SPAN_CHAT)]
    assert (chat.attributes or {})[n.GEN_AI_RESPONSE_MODEL] == "model-\\ud800"
    encode_spans([chat]).SerializeToString()  # logged an error and dropped the attribute
