"""A cost budget stops a run at its ceiling, not one call past it.

A run's cost is a float sum of its calls' prices, which drifts below the exact sum: ten calls of $0.01
add to 0.09999999999999999, so a $0.10 ceiling let an eleventh call through and the run spent $0.11
(its reported cost, rounded to the micro-dollar, read $0.100000 while it went on). Now a cost within a
billionth of the ceiling has reached it.
"""

from __future__ import annotations

import pytest

from agent import Agent, Budget, StopReason, tool
from agent.budget import Spent
from agent.models.price import Price
from agent.models.scripted import ScriptedModel, call, reply
from agent.prices import PriceTable
from agent.result import LimitKind


@tool
def look(page: int) -> str:
    """Look at a page."""
    return f"page {page}"


@pytest.mark.parametrize(("ceiling", "calls"), [(0.03, 3), (0.06, 6), (0.1, 10), (0.3, 30)])
def test_calls_of_one_cent_stop_at_the_ceiling_exactly(ceiling: float, calls: int) -> None:
    steps = [reply(call("look", page=i), input_tokens=10_000, output_tokens=0) for i in range(calls + 2)]
    model = ScriptedModel(steps)
    prices = PriceTable({"scripted": Price(1.0, 1.0)})  # $1 a million tokens: 10,000 tokens a cent

    result = Agent(
        "a", model, tools=[look], budget=Budget(max_turns=100, max_cost_usd=ceiling), prices=prices
    ).run("t")

    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.COST)
    assert len(model.requests) == calls and result.cost_usd == ceiling


def test_a_cost_under_the_ceiling_by_more_than_drift_goes_on() -> None:
    budget = Budget(max_cost_usd=0.1)
    assert budget.exceeded(_spent(0.09999999999999999)) is LimitKind.COST
    assert budget.exceeded(_spent(0.0999999)) is None  # a tenth of a micro-dollar left is room
    assert Budget(max_cost_usd=1e-6).exceeded(_spent(0.0)) is None


def _spent(cost: float) -> Spent:
    spent = Spent()
    spent.cost_usd = cost
    return spent
