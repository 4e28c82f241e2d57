"""Cache breakpoints go only on blocks whose type takes one, through the real `anthropic` SDK against the
local Messages API server: a paused reply sent back to go on (`pause_turn`) is the request's last
message, and its last block may be one the API refuses a `cache_control` on (an `mcp_tool_listing`,
which the API asks to have back unchanged) or one of a type the SDK does not know yet."""

from __future__ import annotations

import typing
from typing import Any

from anthropic import types
from anthropic.types import beta
from messages_api import MessagesAPI, Response, message, text, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models import anthropic as adapter

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
LISTING: dict[str, Any] = {
    "type": "mcp_tool_listing",
    "mcp_server_name": "tickets",
    "tools": [{"name": "open_ticket", "input_schema": {"type": "object"}}],
}
LATER: dict[str, Any] = {"type": "holo_note", "data": "Eo8BCioIAhgB"}  # a type a later API may add


def run(*responses: Response) -> tuple[Any, MessagesAPI]:
    with MessagesAPI(*responses) as api:
        model = adapter.AnthropicModel("claude-sonnet-4-5", api_key="sk-test", base_url=api.url)
        agent = Agent("paused", model, budget=Budget(max_turns=5, max_seconds=60), retry=FAST)
        return agent.run("Open a ticket."), api


def test_a_paused_reply_ending_with_an_mcp_tool_listing_is_sent_back_unchanged() -> None:
    result, api = run(message(text("Listing the tools."), LISTING, stop_reason="pause_turn"), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    sent = api.bodies[1]["messages"][-1]
    assert sent["role"] == "assistant"
    assert sent["content"][1] == LISTING  # no cache_control: the API refuses one there
    assert sent["content"][0]["cache_control"] == {"type": "ephemeral"}  # the breakpoint before it


def test_a_paused_reply_ending_with_a_block_of_a_later_type_is_sent_back_as_the_api_gave_it() -> None:
    result, api = run(message(text("Working."), LATER, stop_reason="pause_turn"), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert api.bodies[1]["messages"][-1]["content"] == [
        {"type": "text", "text": "Working.", "cache_control": {"type": "ephemeral"}},
        LATER,
    ]


def _members(union: Any) -> list[Any]:
    origin = typing.get_origin(union)
    if origin is typing.Annotated:
        return _members(typing.get_args(union)[0])
    if origin is typing.Union:
        return [m for arg in typing.get_args(union) for m in _members(arg)]
    return [union]


def test_the_types_that_take_a_breakpoint_are_those_whose_sdk_request_type_has_cache_control() -> None:
    """A guard for an SDK upgrade: a new block type that takes a breakpoint, or one that no longer does."""
    takes = set()
    for union in (types.ContentBlockParam, beta.BetaContentBlockParam):
        for param in _members(union):
            if hasattr(param, "__required_keys__"):  # a TypedDict: a request type, not a reply's
                hints = typing.get_type_hints(param)
                if "cache_control" in hints:
                    takes |= set(typing.get_args(hints["type"]))
    assert takes == adapter._BREAKPOINT_TYPES
    assert {"thinking", "redacted_thinking", "fallback", "mcp_tool_listing"}.isdisjoint(takes)
