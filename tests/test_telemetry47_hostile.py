"""Telemetry under hostile data, configuration and collectors (the telemetry47 review)."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import Agent, StopReason, tool
from agent.models import ScriptedModel, call, finish
from telemetry import Redactor, TracingHooks
from telemetry import names as n
from telemetry.redact import READ_PAST_CUT, REDACTED

KEY = "sk-ant-api03-PLANTEDsecretKEY0123456789"
HUGE = 2_000_000


class CountingRedactor(Redactor):
    """A redactor that notes the length of every text it reads."""

    def redact(self, text: str) -> str:
        READ.append(len(text))
        return super().redact(text)


READ: list[int] = []


@tool
def dump(path: str) -> str:
    """Dump a file."""
    return f"key {KEY} " + "x" * HUGE + KEY


def test_a_huge_tool_argument_and_result_are_read_only_as_far_as_their_spans_keep_them() -> None:
    """Content capture read every character of a tool's result and arguments to redact it (and the
    history's, at each model call), though a span keeps 4,000: a 5 MB result held the run 5 s a span."""
    READ.clear()
    spans, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    hooks = TracingHooks(provider, capture_content=True, redact=CountingRedactor())
    steps = [[call("dump", path="p" * HUGE)], [finish("done", "ok")]]
    agent = Agent("dumper", ScriptedModel(steps), tools=[dump], hooks=hooks)
    assert agent.run("dump").reason is StopReason.SUCCESS
    kept = [str(v) for s in spans.get_finished_spans() for v in (s.attributes or {}).values()]
    (result,) = [s for s in spans.get_finished_spans() if s.name == f"{n.SPAN_EXECUTE_TOOL} dump"]
    assert str((result.attributes or {})[n.GEN_AI_TOOL_CALL_RESULT]).startswith(f"key {REDACTED} xxx")
    assert not any(KEY in text for text in kept)
    assert max(READ) <= Redactor().max_chars + READ_PAST_CUT
