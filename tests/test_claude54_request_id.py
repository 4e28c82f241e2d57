"""claude54: the id of the HTTP request behind each model reply (what Anthropic's, or Amazon's, support
asks for about a slow or strange reply) is on the reply and on its chat span, beside the message id.
Only an error quoted it before: a successful call's was kept nowhere. Through the real SDK against the
local Messages API server: the Claude API's `request-id` header, Amazon Bedrock's `x-amzn-requestid`,
Vertex AI's `request-id`; both ways the adapter reads a stream (its own, and the SDK's stream helper);
and a hostile server's header or message id, huge or full of control characters, bounded and escaped."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from typing import Any

import anthropic
import pytest
from messages_api import MessagesAPI, Response, dropped, error, message, stream_error, text, tool_use
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import agent.models.anthropic as adapter
from agent import Agent, Budget, RetryPolicy, StopReason, tool
from agent.models.anthropic import AnthropicModel
from agent.models.base import MOST_ID_CHARS, ModelReply, ModelRequest
from telemetry import TracingHooks
from telemetry import names as n

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
TEST_ID = re.compile(r"req_test_\d{4}")  # what the local server sends as `request-id`
# A header no real API sends: an escape sequence that retitles a terminal, C1 controls (CSI), a DEL,
# and thousands of characters.
HOSTILE = "\x1b]0;pwned\x07" + "A" * 9_000 + "\x9b2J\x7f"


@tool
def look(path: str) -> str:
    """Look at a file."""
    return f"{path}: fine"


def ask() -> ModelRequest:
    return ModelRequest.of_messages("", [{"role": "user", "content": "hi"}], [], 256)


def complete(model: AnthropicModel, client: Any = None) -> ModelReply:
    """One call of `model`; `client`, the SDK client given to it, is closed after it (its owner's)."""

    async def call() -> ModelReply:
        async with model:
            try:
                return await model.complete(ask())
            finally:
                if client is not None:
                    await client.close()

    return asyncio.run(call())


def chat_spans(*responses: Response) -> list[ReadableSpan]:
    """The chat spans of a run of two turns (a tool call, then finish) against `responses`."""
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
        budget = Budget(max_turns=4, max_seconds=60)
        hooks = TracingHooks(provider)
        result = Agent("ids", model, tools=[look], budget=budget, retry=FAST, hooks=hooks).run(
            "Look at a.txt."
        )
    provider.shutdown()
    assert result.reason is StopReason.SUCCESS, result.note
    spans = [s for s in exporter.get_finished_spans() if s.name == f"{n.SPAN_CHAT} {MODEL}"]
    return sorted(spans, key=lambda s: s.start_time or 0)


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def bounded(value: str) -> bool:
    """Short, and every character one a terminal shows as itself (escapes are written out)."""
    return 0 < len(value) <= MOST_ID_CHARS and value.isprintable() and value.isascii()


# -- the Claude API ------------------------------------------------------------------------------


def test_each_chat_span_carries_its_calls_request_id_and_message_id() -> None:
    spans = chat_spans(message(tool_use("look", {"path": "a.txt"})), message(DONE))
    assert len(spans) == 2
    request_ids = [attributes(s).get(n.ANTHROPIC_REQUEST_ID) for s in spans]
    assert all(isinstance(i, str) and TEST_ID.fullmatch(i) for i in request_ids), request_ids
    assert len(set(request_ids)) == 2  # one HTTP request each
    message_ids = [attributes(s).get(n.GEN_AI_RESPONSE_ID) for s in spans]
    assert message_ids == ["msg_test_0001", "msg_test_0002"]


def test_the_reply_carries_the_request_id_the_api_sent() -> None:
    with MessagesAPI(message(text("hi"))) as api:
        reply = complete(AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url))
    assert TEST_ID.fullmatch(reply.request_id), reply.request_id
    assert reply.response_id == "msg_test_0001"


@pytest.mark.parametrize("sdk", ["own reading", "the SDK's stream helper"])
def test_both_ways_of_reading_the_stream_keep_the_request_id(
    sdk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if sdk != "own reading":  # an SDK without `accumulate_event`: its `messages.stream()` reads it
        monkeypatch.setattr(adapter, "_sdk_stream", None)
    with MessagesAPI(message(text("hi"))) as api:
        reply = complete(AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url))
    assert TEST_ID.fullmatch(reply.request_id), reply.request_id


# -- other platforms --------------------------------------------------------------------------


def test_a_bedrock_reply_carries_amazons_request_id() -> None:
    # Amazon Bedrock names its request `x-amzn-requestid`: what AWS support asks for.
    amazon = "5e3c8f8a-1c2b-4d5e-9f00-0123456789ab"
    with MessagesAPI(message(text("hi"), headers={"x-amzn-requestid": amazon})) as api:
        client = anthropic.AsyncAnthropicBedrock(
            aws_access_key="AKIAIOSFODNN7EXAMPLE",
            aws_secret_key="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            aws_region="us-east-1",
            base_url=api.url,
            max_retries=0,
        )
        reply = complete(
            AnthropicModel("global.anthropic.claude-haiku-4-5-20251001-v1:0", client=client), client
        )
    assert api.bedrock, "the call went to Bedrock's InvokeModel"
    assert reply.request_id == amazon


def test_a_vertex_ai_reply_carries_its_request_id() -> None:
    # Vertex AI passes Anthropic's `request-id` on (`req_vrtx_...`).
    with MessagesAPI(message(text("hi")), validate=False) as api:
        client = anthropic.AsyncAnthropicVertex(
            region="global", project_id="acme", access_token="t", base_url=api.url
        )
        reply = complete(AnthropicModel("claude-haiku-4-5@20251001", client=client), client)
    assert api.requests[0].path.endswith(":streamRawPredict")
    assert TEST_ID.fullmatch(reply.request_id), reply.request_id


# -- a hostile server ----------------------------------------------------------------------------


def test_a_hostile_request_id_reaches_neither_the_reply_nor_the_span_raw() -> None:
    spans = chat_spans(
        message(tool_use("look", {"path": "a.txt"}), headers={"request-id": HOSTILE}), message(DONE)
    )
    shown = attributes(spans[0])[n.ANTHROPIC_REQUEST_ID]
    assert bounded(shown), shown[:200]
    assert "\\x1b]0;pwned\\x07" in shown  # escaped, not dropped: an operator still sees what came
    assert TEST_ID.fullmatch(attributes(spans[1])[n.ANTHROPIC_REQUEST_ID])


def test_a_hostile_message_id_reaches_no_span_raw() -> None:
    first = message(tool_use("look", {"path": "a.txt"}))
    assert first.body is not None
    hostile = dataclasses.replace(first, body={**first.body, "id": "msg_" + HOSTILE})
    spans = chat_spans(hostile, message(DONE))
    shown = attributes(spans[0])[n.GEN_AI_RESPONSE_ID]
    assert bounded(shown) and shown.startswith("msg_\\x1b]0;pwned"), shown[:200]


# -- a failed call ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [error(529, "Overloaded"), error(500), stream_error(), dropped()],
    ids=["overloaded", "server error", "an error event mid-stream", "a stream broken off"],
)
def test_a_failed_calls_chat_span_carries_the_request_id_of_the_reply_that_failed(failure: Response) -> None:
    # Retried and then answered: the failed attempt's span says which request failed, beside its error.
    spans = chat_spans(failure, message(tool_use("look", {"path": "a.txt"})), message(DONE))
    assert len(spans) == 3
    failed = attributes(spans[0])
    assert failed.get(n.ERROR_TYPE), failed
    assert TEST_ID.fullmatch(str(failed.get(n.ANTHROPIC_REQUEST_ID))), failed
    ids = {attributes(s)[n.ANTHROPIC_REQUEST_ID] for s in spans}
    assert len(ids) == 3  # each attempt its own request


def test_a_hostile_request_id_of_a_failed_call_reaches_no_span_raw() -> None:
    spans = chat_spans(error(529, "Overloaded", headers={"request-id": HOSTILE}), message(DONE))
    shown = attributes(spans[0])[n.ANTHROPIC_REQUEST_ID]
    assert bounded(shown) and "\\x1b]0;pwned" in shown, shown[:200]  # the server's own id may come first
