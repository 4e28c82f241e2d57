"""Fast mode on the current flagship: Anthropic's fast-mode page lists it on Claude Fable 5.2, Claude
Mythos 5.2 and Claude Opus 5.5, so each row prices a fast call (2x every token price, as Opus 5.5's
$8 / $40 is 2x its $4 / $20), and a cost budget on a fast-mode agent of either may start."""

from __future__ import annotations

import pytest

from agent import Agent, Budget, PriceTable
from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelReply


@pytest.mark.parametrize("model", ["claude-fable-5-2", "claude-mythos-5-2"])
def test_a_fast_mode_call_costs_twice_every_token_price(model: str) -> None:
    reply = ModelReply(
        [], 12_000, 1_000, cache_read_input_tokens=8_000, cache_creation_input_tokens=2_000,
        extra={"speed": "fast"},
    )  # fmt: skip
    uncached = 12_000 - 8_000 - 2_000
    fast = (uncached * 16.0 + 2_000 * 16.0 * 1.25 + 8_000 * 0.40 + 1_000 * 80.0) / 1e6
    assert PriceTable().cost_of(model, reply) == pytest.approx(fast)
    standard = ModelReply([], 12_000, 1_000, cache_read_input_tokens=8_000, cache_creation_input_tokens=2_000)
    assert PriceTable().cost_of(model, standard) == pytest.approx(fast / 2)


@pytest.mark.parametrize("model", ["claude-fable-5-2", "claude-mythos-5-2"])
def test_a_cost_budget_takes_a_fast_mode_agent_on_the_flagship(model: str) -> None:
    chosen = AnthropicModel(model, api_key="sk-ant-test", extra_body={"speed": "fast"})
    agent = Agent("fast", chosen, budget=Budget(max_cost_usd=1.0))  # no ConfigError: the price is known
    assert agent.budget.max_cost_usd == 1.0
