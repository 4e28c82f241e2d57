"""A tool call whose streamed input holds a number JSON cannot carry back (`1e999`, which Python
reads as infinity; `NaN`) is a malformed reply, retried, never run: before, the call was kept, and
the next request could not be written, so the run ended `error` with no second call sent."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, Response, events_of, message, streamed, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason, tool

RAN: list[Any] = []


@tool
def write(path: str, body: str) -> str:
    """Write a file."""
    RAN.append((path, body))
    return "written"


def with_input(partial_json: str) -> Response:
    """A reply calling `write`, its input streamed as exactly `partial_json`."""
    events = []
    for event, data in events_of(message(tool_use("write", {"path": "a", "body": "b"}))):
        if event == "content_block_delta":
            if any(e == "content_block_delta" for e, _ in events):
                continue
            data = {**data, "delta": {"type": "input_json_delta", "partial_json": partial_json}}
        events.append((event, data))
    return streamed(*events)


@pytest.mark.parametrize("number", ["1e999", "-1e999", "NaN", "Infinity"])
def test_a_call_whose_input_holds_a_number_json_cannot_carry_is_retried_not_run(number: str) -> None:
    from agent.models.anthropic import AnthropicModel

    RAN.clear()
    done = tool_use("finish", {"kind": "done", "note": "ok"})
    with MessagesAPI(with_input(f'{{"path": "a", "body": {number}}}'), message(done)) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-test", base_url=api.url)
        retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
        result = Agent("big", model, tools=[write], budget=Budget(max_turns=4), retry=retry).run("Go.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert RAN == []
    assert len(api.requests) == 2
    assert result.input_tokens == 20  # the malformed reply's call was paid: counted
