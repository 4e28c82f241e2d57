"""Content capture on: a secret is redacted in every form it reaches a span, also when JSON would
escape it (a quote, a backslash, a non-ASCII letter in it) in a tool's arguments or in a tool
result made of blocks (probe17b). DESIGN.md: "secrets are redacted"."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import Agent, StopReason, tool
from agent.content import SearchResult, ToolOutput
from agent.models import ScriptedModel, call, finish
from telemetry import Redactor, TracingHooks, _content
from telemetry import names as n
from telemetry.redact import REDACTED

# A database password as people choose them: a quote, a backslash, letters JSON writes as \u00e4.
SECRET = 'pässwört"\\Wv7kP9q'
CORE = "Wv7kP9q"  # in every escaped form of SECRET: found only where the secret leaked
REDACT = Redactor.from_env({"DB_PASSWORD": SECRET, n.ENV_REDACT_ENV: "DB_PASSWORD"})


def test_a_secret_json_would_escape_is_redacted_in_arguments_and_block_results() -> None:
    assert CORE not in _content.value_json({"dsn": f"postgres on {SECRET}"}, REDACT)
    assert CORE not in _content.value_json({"nested": [{"v": SECRET}], SECRET: 1}, REDACT)
    assert CORE not in _content.value_json([{"type": "text", "text": f"it said {SECRET}"}], REDACT)
    assert json.loads(_content.value_json({"q": f"a {SECRET} b"}, REDACT)) == {"q": f"a {REDACTED} b"}


def test_ordinary_arguments_are_written_as_before() -> None:
    args = {"b": "x ä", "a": [1, 2.5, None, True]}
    assert _content.value_json(args, REDACT) == json.dumps(args, sort_keys=True)


@tool
def query(sql: str, dsn: str) -> ToolOutput:
    """Run a query."""
    return ToolOutput(f"rows for {sql}; connected with {SECRET}", SearchResult("db", "rows", [SECRET]))


def test_a_run_with_content_capture_leaks_no_escaped_secret() -> None:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks = TracingHooks(provider, capture_content=True, redact=REDACT)
    steps = [[call("query", sql="select 1", dsn=f"db:{SECRET}@host")], [finish("done", "ok")]]
    result = Agent("probe", ScriptedModel(steps), tools=[query], hooks=hooks).run("count rows")
    assert result.reason is StopReason.SUCCESS
    provider.shutdown()
    spans = exporter.get_finished_spans()
    bags = [s.attributes or {} for s in spans] + [e.attributes or {} for s in spans for e in s.events]
    text = " ".join(str(v) for bag in bags for v in bag.values())
    assert "select 1" in text and REDACTED in text  # content is captured
    assert CORE not in text
