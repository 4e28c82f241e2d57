"""The thinking tokens a reply's usage breaks out of its output
(`usage.output_tokens_details.thinking_tokens`, anthropic SDK 2.17) reach the chat span as the GenAI
conventions name them (`gen_ai.usage.reasoning.output_tokens`); the output count stays the billed total.
Whole runs through the real `anthropic` SDK against the local Messages API server."""

from __future__ import annotations

from typing import Any

from messages_api import MessagesAPI, Response, message, tool_use
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel
from telemetry import TracingHooks
from telemetry import names as n

MODEL = "claude-haiku-4-5"
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)


def chat_spans(*responses: Response) -> list[Any]:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
        agent = Agent("thinking", model, budget=Budget(max_turns=3), retry=FAST, hooks=TracingHooks(provider))
        result = agent.run("Think, then finish.")
    provider.shutdown()
    assert result.reason is StopReason.SUCCESS, result.note
    return [s for s in exporter.get_finished_spans() if s.name == f"{n.SPAN_CHAT} {MODEL}"]


def test_the_thinking_tokens_of_a_reply_are_on_its_chat_span() -> None:
    details = {"output_tokens_details": {"thinking_tokens": 40}}
    [chat] = chat_spans(message(DONE, output_tokens=55, usage=details))
    attributes = dict(chat.attributes or {})
    assert attributes[n.GEN_AI_USAGE_OUTPUT_TOKENS] == 55  # the billed total, thinking included
    assert attributes[n.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] == 40


def test_a_reply_without_the_breakdown_says_nothing_of_thinking_tokens() -> None:
    [chat] = chat_spans(message(DONE, output_tokens=55))
    assert n.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS not in dict(chat.attributes or {})


def test_a_breakdown_that_is_no_count_is_left_out() -> None:
    details = {"output_tokens_details": {"thinking_tokens": 99}}  # more than the output: no count of it
    [chat] = chat_spans(message(DONE, output_tokens=55, usage=details))
    assert n.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS not in dict(chat.attributes or {})
