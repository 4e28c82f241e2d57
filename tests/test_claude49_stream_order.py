"""A stream whose events break the API's order is a reply that could not be read (`malformed_reply`:
retried, what the call used recorded), not one the SDK's accumulation put together anyway. Two
messages in one stream (a proxy that joined two answers) were read as one: the second's usage
replaced the first's (the first call's 1,000 input tokens went uncharged) and the first's tool call
ran with the second's stop reason. A block begun at an index already taken had its call's input
streamed onto the text block there: the call ran with no input and the text went back to the API
carrying an `input`; a call's input streamed as text was dropped, and the call ran with none.
Events before `message_start` were dropped, and the run went on as if the model had said nothing."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from messages_api import MessagesAPI, Response, events_of, message, streamed, text, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason, tool
from agent.errors import TransientModelError
from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelReply, ModelRequest

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
Events = list[tuple[str, Any]]

FIRST = events_of(
    message(tool_use("search", {"q": "x"}, id="toolu_first"), input_tokens=1_000, output_tokens=50)
)
SECOND = events_of(message(text("second"), input_tokens=2_000, output_tokens=7), id="msg_second")


def search_run(*responses: Response) -> tuple[Any, MessagesAPI, list[dict[str, Any]]]:
    """A run whose agent has a `search` tool (its calls recorded), against `responses`."""
    searched: list[dict[str, Any]] = []

    @tool
    def search(q: str = "") -> str:
        """Search."""
        searched.append({"q": q})
        return "found"

    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
        agent = Agent("order", model, tools=[search], budget=Budget(max_turns=4, max_seconds=60), retry=FAST)
        return agent.run("Do the task."), api, searched


def complete(response: Response, timeout: float = 10.0) -> ModelReply:
    with MessagesAPI(response) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url, timeout=timeout)
        request = ModelRequest.of_messages("", [{"role": "user", "content": "hi"}], [], 256)
        return asyncio.run(model.complete(request))


TWO_MESSAGES: dict[str, Events] = {
    "one after the other": FIRST + SECOND,
    "the second begun inside the first": FIRST[:1] + SECOND[:1] + FIRST[1:],
}


@pytest.mark.parametrize("case", TWO_MESSAGES)
def test_two_messages_in_one_stream_are_retried_never_read_as_one(case: str) -> None:
    result, api, searched = search_run(streamed(*TWO_MESSAGES[case]), message(DONE, input_tokens=100))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2  # retried
    assert searched == []  # the first message's call is never run
    assert result.input_tokens == 1_000 + 100  # the broken call's input counted, not the second's 2,000


def at_index(events: Events, old: int, new: int) -> Events:
    """`events` with the block events of index `old` moved to index `new`."""
    moved = copy.deepcopy(events)
    for _, data in moved:
        if isinstance(data, dict) and data.get("index") == old:
            data["index"] = new
    return moved


TEXT_THEN_CALL = events_of(message(text("Searching."), tool_use("search", {"q": "real"}, id="toolu_real")))


@pytest.mark.parametrize("index", [0, 2])
def test_a_block_begun_at_another_index_than_the_next_is_retried_never_run(index: int) -> None:
    result, api, searched = search_run(streamed(*at_index(TEXT_THEN_CALL, 1, index)), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    assert searched == []  # not run with the input of its start ({}), nor with another block's


# A block, and a delta for it of another type's: a call's input on a text block (it went back to the API
# on the text), a call's input sent as text (dropped: the call ran with none), a thinking on a text.
MISMATCHED: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "input on a text": (text("Searching."), {"type": "input_json_delta", "partial_json": "{}"}),
    "text on a call": (tool_use("search", id="toolu_t"), {"type": "text_delta", "text": '{"q": "x"}'}),
    "thinking on a text": (text("Hm."), {"type": "thinking_delta", "thinking": "secret"}),
}


@pytest.mark.parametrize("case", MISMATCHED)
def test_a_delta_for_a_block_of_another_type_is_a_malformed_reply(case: str) -> None:
    block, delta = MISMATCHED[case]
    events = [e for e in events_of(message(block)) if e[0] != "content_block_delta"]
    stop = next(i for i, (kind, _) in enumerate(events) if kind == "content_block_stop")
    events.insert(stop, ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    with pytest.raises(TransientModelError) as caught:
        complete(streamed(*events))
    assert caught.value.error_type == "malformed_reply"
    assert f"a {delta['type']} was streamed to block 0, a {block['type']} block" in str(caught.value)


def test_a_block_streamed_before_message_start_is_a_malformed_reply() -> None:
    events = events_of(message(text("Said before the message began.")))
    blocks = [e for e in events if e[0].startswith("content_block")]
    rest = [e for e in events if not e[0].startswith("content_block")]
    with pytest.raises(TransientModelError) as caught:
        complete(streamed(*blocks, *rest))
    assert caught.value.error_type == "malformed_reply"
    assert "before message_start" in str(caught.value)


def test_a_well_ordered_stream_with_pings_and_events_of_a_later_api_still_reads_whole() -> None:
    events = events_of(message(text("one"), tool_use("search", {"q": "x"}, id="toolu_x"), text("two")))
    noise = [("ping", {"type": "ping"}), ("future_event", {"type": "future_event", "index": 7})]
    mixed = [e for event in events for e in (event, *noise)]
    reply = complete(streamed(*mixed))
    assert reply.content == [
        text("one"),
        {"type": "tool_use", "id": "toolu_x", "name": "search", "input": {"q": "x"}},
        text("two"),
    ]
