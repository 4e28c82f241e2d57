"""review25: a foreign run's call to another model than the run's (`ModelRequest.model`, or the model
its reply names, `CALL_MODEL`) is spanned under that model's name escaped as UTF-8 carries it, as the
run's own model is: a lone surrogate there failed the OTLP batch, every other run's spans in it lost."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import RunInfo, RunResult, StopReason
from agent.models import ModelRequest
from agent.models.base import CALL_MODEL, ModelReply
from telemetry import TracingHooks

SURROGATE = "\ud800"


def test_a_call_to_another_model_named_with_no_utf8_text_leaves_the_batch_exportable() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks = TracingHooks(provider)
    run = hooks.run_started(RunInfo("r1", "agent", "default", "main-model", "anthropic", "task"))
    run.turn_started(1)
    run.model_started(ModelRequest("", [], [], 100, model=f"asked-{SURROGATE}"), 1)
    run.model_ended(ModelReply([], 3, 1), None)
    run.model_started(ModelRequest("", [], [], 100), 1)
    run.model_ended(ModelReply([], 3, 1, extra={CALL_MODEL: f"told-{SURROGATE}"}), None)
    run.turn_ended(1, StopReason.SUCCESS)
    run.run_ended(RunResult("r1", "agent", "default", StopReason.SUCCESS, turns=1))
    provider.shutdown()
    spans = exporter.get_finished_spans()
    encode_spans(spans).SerializeToString()  # raised UnicodeEncodeError for the whole batch
    chats = {s.name: s.attributes["gen_ai.request.model"] for s in spans if s.name.startswith("chat ")}
    assert chats == {"chat asked-\\ud800": "asked-\\ud800", "chat told-\\ud800": "told-\\ud800"}
