"""A reply is whole at its `message_stop`. The SDK reads a stream on to the end of its body, so a
server (or proxy) that kept the connection open after it, sending `ping` keep-alives or nothing,
had the whole reply thrown away as a stalled stream once the client's read timeout passed: retried,
charged again, and, as it did so each time, the run ended as `error` (without a client timeout, it
waited until the run's time budget cut the call). What follows `message_stop` is read for a few
seconds at most (the end of the body comes at once from the API, and the connection is then
reused), then let go."""

from __future__ import annotations

import asyncio

from messages_api import MessagesAPI, Response, events_of, message, text, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelRequest

MODEL = "claude-haiku-4-5"
PINGS = (("ping", {"type": "ping"}),) * 400  # 20 s of keep-alives, 0.05 s apart
DONE = tool_use("finish", {"kind": "done", "note": "ok"})


def kept_open(response: Response) -> Response:
    """`response` streamed, then keep-alives for long after its `message_stop`."""
    return Response(200, None, events=(*events_of(response), *PINGS), stream_delay=0.05)


def test_a_reply_whose_stream_stays_open_after_message_stop_is_kept_whole() -> None:
    with MessagesAPI(kept_open(message(text("whole"), input_tokens=30, output_tokens=4))) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url, timeout=3.0)
        request = ModelRequest.of_messages("", [{"role": "user", "content": "hi"}], [], 256)
        reply = asyncio.run(model.complete(request))
    assert reply.content == [text("whole")]
    assert (reply.input_tokens, reply.output_tokens, reply.stop_reason) == (30, 4, "end_turn")


def test_a_run_against_a_server_that_keeps_each_stream_open_succeeds_without_retries() -> None:
    first = kept_open(message(text("Looking."), input_tokens=100, output_tokens=5))
    with MessagesAPI(first, kept_open(message(DONE, input_tokens=200, output_tokens=6))) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url, timeout=3.0)
        retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
        result = Agent("open", model, budget=Budget(max_turns=4, max_seconds=120), retry=retry).run("Do it.")
        assert result.reason is StopReason.SUCCESS, result.note
        assert len(api.requests) == 2  # one call a turn: nothing retried
    assert (result.input_tokens, result.output_tokens) == (300, 11)


def test_a_connection_broken_right_after_message_stop_leaves_the_reply_whole() -> None:
    events = events_of(message(input_tokens=30, output_tokens=2))  # no block: the drop comes after the stop
    drop_here = ("content_block_stop", {"type": "content_block_stop", "index": 0})  # never sent
    broken = Response(200, None, events=(*events, drop_here), malformed="dropped")
    with MessagesAPI(broken) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url, timeout=10.0)
        request = ModelRequest.of_messages("", [{"role": "user", "content": "hi"}], [], 256)
        reply = asyncio.run(model.complete(request))
    assert (reply.content, reply.input_tokens, reply.output_tokens) == ([], 30, 2)
