"""A stream that stalls while it keeps sending `ping` events (a keep-alive, no progress) never
trips the SDK's timeout, which bounds each read, not a call: with no `Budget.max_seconds` the run
waited for ever. A stream that shows no progress (nothing but pings) for the client's timeout is a
transient `timeout`, as a silent stall is; a stream whose events make progress is left alone."""

from __future__ import annotations

import asyncio

import pytest
from messages_api import MessagesAPI, Response, events_of, message, text

from agent.errors import TransientModelError
from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelRequest

PINGS = [("ping", {"type": "ping"})] * 400  # 20 s of keep-alives, 0.05 s apart


def call(response: Response, timeout: float) -> object:
    with MessagesAPI(response) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test", base_url=api.url, timeout=timeout)
        request = ModelRequest.of_messages("", [{"role": "user", "content": "hi"}], [], 256)
        return asyncio.run(model.complete(request))


def test_a_stream_of_nothing_but_pings_past_the_client_timeout_is_a_transient_timeout() -> None:
    events = events_of(message(text("late")))
    stalled = Response(200, None, events=(events[0], *PINGS, *events[1:]), stream_delay=0.05)
    with pytest.raises(TransientModelError) as caught:
        call(stalled, timeout=0.5)
    assert caught.value.error_type == "timeout"
    assert "no progress" in str(caught.value)


def test_a_stream_that_makes_progress_between_pings_is_read_whole() -> None:
    events = events_of(message(text("word " * 60)))  # eight text deltas, each after a ping
    paced = [
        e
        for event in events
        for e in ((event, ("ping", {"type": "ping"})) if event[0] == "content_block_delta" else (event,))
    ]
    reply = call(Response(200, None, events=tuple(paced), stream_delay=0.1), timeout=0.5)
    assert reply.content == [text("word " * 60)]  # type: ignore[attr-defined]
