"""A reply a server-side fallback served (its usage's iterations name a `fallback_message`) is priced
part by model. The parts split the reply's own usage, so what the usage says of the whole call holds
for them too: its web searches ($10 per 1,000) were dropped from its cost, and its fast mode (`speed`
"fast") priced at the standard rates, while the same reply served by one model paid both."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, iteration, message, tool_use

from agent import Agent, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel, web_search

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
SEARCHES = {"server_tool_use": {"web_search_requests": 3, "web_fetch_requests": 0}}


def cost_of_run(requested: str, answered: str, usage: dict[str, Any]) -> float | None:
    """The cost of a run whose one reply `requested` declined after 1,000 input tokens and 50 output,
    and `answered` (the fallback) finished with 2,000 and 100 (one model served it all when they are
    the same); `usage` adds to the reply's usage."""
    parts = [
        iteration("message", 1_000, 50, model=requested),
        iteration("fallback_message", 2_000, 100, model=answered),
    ]
    usage = usage if requested == answered else usage | {"iterations": parts}
    reply = message(DONE, input_tokens=3_000, output_tokens=150, model=answered, usage=usage)
    with MessagesAPI(reply) as api:
        model = AnthropicModel(
            requested,
            api_key="sk-ant-test",
            base_url=api.url,
            server_tools=[web_search()],
            extra_body={"fallbacks": [{"model": answered}]},  # the fallback the request names
        )
        result = Agent("fallback", model, retry=FAST).run("Look it up.")
    assert result.reason is StopReason.SUCCESS, result.note
    return result.cost_usd


def test_the_web_searches_of_a_reply_a_fallback_served_are_charged_once() -> None:
    tokens = (1_000 * 5 + 50 * 25 + 2_000 * 1 + 100 * 5) / 1e6  # Opus 4.6, then Haiku 4.5
    assert cost_of_run("claude-opus-4-6", "claude-haiku-4-5", SEARCHES) == pytest.approx(tokens + 3 * 0.01)


def test_a_reply_a_fallback_served_costs_as_one_model_serving_it_all_when_both_cost_alike() -> None:
    one_model = cost_of_run("claude-opus-4-6", "claude-opus-4-6", SEARCHES | {"speed": "fast"})
    fell_back = cost_of_run("claude-opus-4-7", "claude-opus-4-6", SEARCHES | {"speed": "fast"})
    fast = (1_000 * 30 + 50 * 150 + 2_000 * 30 + 100 * 150) / 1e6  # both: $30 in, $150 out in fast mode
    assert one_model == pytest.approx(fast + 3 * 0.01)
    assert fell_back == pytest.approx(one_model)


def test_fast_mode_on_a_fallback_model_with_no_fast_price_costs_unknown_not_the_standard_price() -> None:
    assert cost_of_run("claude-opus-4-6", "claude-haiku-4-5", {"speed": "fast"}) is None
