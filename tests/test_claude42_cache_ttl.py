"""Cache writes of a model asked for the 1-hour cache (`cache="1h"`: every breakpoint asks for it) are
priced at the 1-hour rate (2x input) when the usage does not split them by TTL (a gateway or platform
that leaves `usage.cache_creation` out), as when it does. Before, such writes were priced at the
5-minute rate (1.25x), so the run's cost, and the cost budget, understated every cache write."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, Response, events_of, message, streamed, text, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

DONE = tool_use("finish", {"kind": "done", "note": "ok"})
SPLIT = {"cache_creation": {"ephemeral_1h_input_tokens": 1_000, "ephemeral_5m_input_tokens": 0}}
# Haiku 4.5: $1 input, $5 output; 10 input, 1,000 cache reads (0.1x), 1,000 writes, 5 output
READS_AND_REST = (10 * 1.0 + 1_000 * 0.1 + 5 * 5.0) / 1e6
AN_HOUR, FIVE_MINUTES = 1_000 * 2.0 / 1e6, 1_000 * 1.25 / 1e6


def cost(cache: Any, *responses: Response) -> float | None:
    with MessagesAPI(*responses) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-test", base_url=api.url, cache=cache)
        retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
        result = Agent("ttl", model, budget=Budget(max_turns=2), retry=retry).run("Go.")
    assert result.reason is StopReason.SUCCESS, result.note
    return result.cost_usd


def cached(usage: dict[str, Any] | None = None, *content: Any) -> Response:
    return message(
        *(content or (DONE,)),
        input_tokens=10,
        output_tokens=5,
        cache_creation_input_tokens=1_000,
        cache_read_input_tokens=1_000,
        usage=usage,
    )


@pytest.mark.parametrize("usage", [None, SPLIT])
def test_an_hours_cache_writes_cost_twice_the_input_split_by_ttl_or_not(usage: Any) -> None:
    assert cost("1h", cached(usage)) == pytest.approx(READS_AND_REST + AN_HOUR)


def test_five_minutes_cache_writes_cost_a_quarter_more_than_input() -> None:
    assert cost("5m", cached()) == pytest.approx(READS_AND_REST + FIVE_MINUTES)


def test_what_the_usage_splits_is_taken_as_it_says() -> None:
    said = {"cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 1_000}}
    assert cost("1h", cached(said)) == pytest.approx(READS_AND_REST + FIVE_MINUTES)


def test_a_call_cut_off_with_an_hours_cache_writes_is_charged_at_the_hours_rate() -> None:
    events = events_of(cached(None, text("partial " * 10)))
    began = [e for e in events if e[0] in ("message_start", "content_block_start", "content_block_delta")]
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    plain = message(DONE, input_tokens=10, output_tokens=5)
    spent = cost("1h", streamed(*began, ("error", overloaded)), plain)
    assert spent is not None
    assert spent > AN_HOUR + 1_000 * 0.1 / 1e6
