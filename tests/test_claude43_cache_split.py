"""A streamed reply's cache writes split by TTL at `message_start` and grown at `message_delta`, through
the real `anthropic` SDK against the local Messages API server. The SDK keeps the first split and the
last total (its `message_delta` usage has no `cache_creation`): a server tool's later samplings write
more. The writes the split does not cover were priced at the 5-minute rate on a model whose every
breakpoint asks for the 1-hour cache, so the run's cost, and its cost budget, understated them."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, Response, events_of, message, streamed, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

DONE = tool_use("finish", {"kind": "done", "note": "ok"})
M = 1_000_000
INPUT = 3.0  # Sonnet 4.5's input price, $ per million tokens


def cost(cache: Any, response: Response) -> float | None:
    with MessagesAPI(response) as api:
        model = AnthropicModel("claude-sonnet-4-5", api_key="sk-test", base_url=api.url, cache=cache)
        retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
        result = Agent("split", model, budget=Budget(max_turns=2), retry=retry).run("Go.")
    assert result.reason is StopReason.SUCCESS, result.note
    return result.cost_usd


def grown(split: dict[str, int]) -> Response:
    """A reply whose `message_start` counts M cache writes, split as `split` says, and whose
    `message_delta` counts 3M in all (no split: the SDK's type for it has none)."""
    reply = message(DONE, input_tokens=0, output_tokens=0, cache_creation_input_tokens=3 * M)
    events = []
    for name, data in events_of(reply):
        if name == "message_start":
            usage = data["message"]["usage"] | {"cache_creation_input_tokens": M, "cache_creation": split}
            data = {**data, "message": {**data["message"], "usage": usage}}
        events.append((name, data))
    return streamed(*events)


def test_writes_past_the_first_split_are_priced_at_the_hour_every_breakpoint_asked_for() -> None:
    split = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": M}
    assert cost("1h", grown(split)) == pytest.approx(3 * INPUT * 2.0)


def test_what_the_split_says_is_five_minutes_stays_five_minutes() -> None:
    split = {"ephemeral_5m_input_tokens": M, "ephemeral_1h_input_tokens": 0}
    assert cost("1h", grown(split)) == pytest.approx(INPUT * 1.25 + 2 * INPUT * 2.0)
    assert cost("5m", grown(split)) == pytest.approx(3 * INPUT * 1.25)
