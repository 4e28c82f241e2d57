"""A Claude Code CLI reply that asks for several tool calls (one assistant message per block) shows
every call in its model call's captured output, on the span and in the content event, while each
tool's span is still timed from when the CLI said the model asked for it to its result (the tool may
run at once). Before, only the first call was in the output: the call was recorded at its first tool
call, before the later fragments came."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from integrations_support import FakeCLI, assistant, result, tool_result, tool_use
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_probe41g_claude_fragments import SAYS, chats, output_of

from agent import StopReason
from agent.integrations import claude_agent_sdk as claude
from telemetry import TracingHooks
from telemetry import names as n
from telemetry.capture import Capture

TASK = "claude42"
PAUSE = 0.3  # seconds each tool runs: between its call's fragment and its result


class SlowCLI(FakeCLI):
    """The CLI's lines, with a pause before each tool result: the tool runs meanwhile."""

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        async for line in super().read_messages():
            if line.get("type") == "user":
                await asyncio.sleep(PAUSE)
            yield line


LINES = [
    assistant("m1", SAYS),
    assistant("m1", tool_use("c1", "Read", {"path": "a"})),
    assistant("m1", tool_use("c2", "Read", {"path": "b"})),
    assistant("m1", tool_use("c3", "Grep", {"pattern": "x"})),
    tool_result("c1", "A"),
    tool_result("c2", "B"),
    tool_result("c3", "C"),
    assistant("m2", {"type": "text", "text": "done"}),
    result(result="done", usage=None),
]


def traced(**hooks: Any) -> tuple[Any, list[ReadableSpan]]:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    h = TracingHooks(provider, **hooks)
    res = claude.run("go", transport=SlowCLI(list(LINES)), hooks=h, task_type=TASK)
    return res, list(exporter.get_finished_spans())


def asked(out: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (p["id"], p["name"], json.loads(p["arguments"])) for p in out["parts"] if p["type"] == "tool_call"
    ]


def test_every_call_of_a_reply_is_in_its_calls_captured_output_and_tools_keep_their_time() -> None:
    started = time.monotonic()
    res, spans = traced(capture_content=True)
    assert (res.reason, res.turns) == (StopReason.SUCCESS, 2)
    first, _ = chats(spans)
    out = output_of(first)
    assert asked(out) == [
        ("c1", "Read", {"path": "a"}),
        ("c2", "Read", {"path": "b"}),
        ("c3", "Grep", {"pattern": "x"}),
    ]
    assert [p.get("content") for p in out["parts"] if p["type"] == "text"] == ["Reading both."]
    assert out["finish_reason"] == "tool_use"
    tools = [s for s in spans if s.name.startswith(n.SPAN_EXECUTE_TOOL)]
    assert len(tools) == 3
    for tool in tools:  # each ran from its call to its result: not zero
        assert (tool.end_time or 0) - (tool.start_time or 0) >= PAUSE * 0.8 * 1e9
    assert (first.end_time or 0) <= min(t.start_time or 0 for t in tools) + 50_000_000
    assert time.monotonic() - started >= 3 * PAUSE


def test_the_content_event_shows_every_call_too() -> None:
    logs = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    res, _ = traced(capture_content=Capture(n.CAPTURE_EVENT_ONLY), logger_provider=provider)
    assert res.reason is StopReason.SUCCESS
    events = [
        r.log_record for r in logs.get_finished_logs() if r.log_record.event_name == n.EVENT_INFERENCE_DETAILS
    ]
    assert events
    (out,) = json.loads(str((events[0].attributes or {})[n.GEN_AI_OUTPUT_MESSAGES]))
    assert [c[0] for c in asked(out)] == ["c1", "c2", "c3"]
