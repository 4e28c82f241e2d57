"""The Claude Code CLI sends one assistant message per content block, all with the reply's message id
and its usage (and no stop reason), Claude's text first. A model call's captured output holds the
reply's text and its tool call, whichever fragment they came in; the call is one model call, its tokens
counted once, each tool call one tool span, timed from when the CLI says the model asked for it (the
tool may run at once). Before, only the first fragment's blocks were in the output (a text block
first, as Claude writes: no tool call at all), and a reply asking for tools said `end_turn`. A
parallel call after the first in one reply has its span and joins the output
(tests/test_claude42_cli_parallel_calls.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from integrations_support import FakeCLI, StreamingMessagesAPI, assistant, result, tool_result, tool_use
from messages_api import message, text
from messages_api import tool_use as api_tool_use
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import StopReason
from agent.integrations import claude_agent_sdk as claude
from telemetry import TracingHooks
from telemetry import names as n

TASK = "probe41g"
SAYS = {"type": "text", "text": "Reading both."}


def traced(run: Any) -> tuple[Any, list[ReadableSpan]]:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    res = run(TracingHooks(provider, capture_content=True))
    return res, list(exporter.get_finished_spans())


def chats(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name.startswith(n.SPAN_CHAT)), key=lambda s: s.start_time or 0)


def output_of(span: ReadableSpan) -> dict[str, Any]:
    (out,) = json.loads(str((span.attributes or {})[n.GEN_AI_OUTPUT_MESSAGES]))
    return dict(out)


def test_every_fragment_of_a_reply_is_in_its_calls_output_counted_once() -> None:
    lines = [
        assistant("m1", SAYS),
        assistant("m1", tool_use("c1", "Read", {"path": "a"})),
        assistant("m1", tool_use("c2", "Read", {"path": "b"})),
        tool_result("c1", "A"),
        tool_result("c2", "B"),
        assistant("m2", {"type": "text", "text": "done"}),
        result(result="done", usage=None),  # no totals: the run's tokens are the calls' sums
    ]
    res, spans = traced(lambda h: claude.run("go", transport=FakeCLI(lines), hooks=h, task_type=TASK))
    assert (res.reason, res.output, res.turns) == (StopReason.SUCCESS, "done", 2)
    assert (res.input_tokens, res.output_tokens) == (20, 10)  # each reply's usage once, not per fragment
    first, last = chats(spans)
    out = output_of(first)
    assert [p.get("content") for p in out["parts"] if p["type"] == "text"] == ["Reading both."]
    asked = [(p["id"], json.loads(p["arguments"])) for p in out["parts"] if p["type"] == "tool_call"]
    assert asked[0] == ("c1", {"path": "a"})
    assert out["finish_reason"] == "tool_use"  # as a native run says the API's
    assert (first.attributes or {})[n.GEN_AI_USAGE_INPUT_TOKENS] == 10
    assert output_of(last)["finish_reason"] == "end_turn"
    assert (
        sorted(s.name for s in spans if s.name.startswith(n.SPAN_EXECUTE_TOOL)) == ["execute_tool Read"] * 2
    )


@pytest.mark.slow
def test_the_real_clis_fragments_make_one_call_holding_its_text_and_tool_call(tmp_path: Path) -> None:
    env = {
        "ANTHROPIC_API_KEY": "test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    work = message(text("Running it."), api_tool_use("Bash", {"command": "sleep 0.3; echo ok"}))
    with StreamingMessagesAPI(work, message(text("ran it"))) as api:
        opts = claude.ClaudeAgentOptions(
            env=env | {"ANTHROPIC_BASE_URL": api.url, "HOME": str(tmp_path / "home")},
            cwd=str(tmp_path),
            model="claude-sonnet-4-5",
            allowed_tools=["Bash"],
            max_turns=5,
        )
        res, spans = traced(lambda h: claude.run("run it", options=opts, hooks=h, task_type=TASK))
    assert (res.reason, res.output, res.turns) == (StopReason.SUCCESS, "ran it", 2)
    first, _ = chats(spans)
    out = output_of(first)
    assert [p["type"] for p in out["parts"]] == ["text", "tool_call"] and out["finish_reason"] == "tool_use"
    (tool,) = [s for s in spans if s.name == "execute_tool Bash"]
    assert (tool.end_time or 0) - (
        tool.start_time or 0
    ) >= 250_000_000  # the tool's run, not 0: timed as it ran
