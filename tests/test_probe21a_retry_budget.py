"""A retry is a model call: the tokens and cost budgets are checked before it. A call that failed
mid-way (a broken stream) still used tokens, which the run is charged; once they use a budget up,
the run stops at that limit instead of paying for retries past it."""

from __future__ import annotations

import pytest

from agent import Agent, Budget, Price, PriceTable, RetryPolicy, TransientModelError
from agent.models.base import ModelReply, ModelRequest, record_cut_call


class BrokenStreams:
    """Each of the first `broken` calls streams 1,200 tokens and then breaks (as a 529 mid-stream
    does); the next one finishes."""

    provider = "test"
    name = "broken-streams"

    def __init__(self, broken: int) -> None:
        self.broken, self.calls = broken, 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        if self.calls <= self.broken:
            record_cut_call(ModelReply(content=[], input_tokens=400, output_tokens=800))
            raise TransientModelError("the stream broke: overloaded", error_type="overloaded")
        done = {"type": "tool_use", "id": "t1", "name": "finish", "input": {"kind": "done", "note": "ok"}}
        return ModelReply(content=[done], input_tokens=10, output_tokens=10, stop_reason="tool_use")


def _agent(model: BrokenStreams, budget: Budget) -> Agent:
    return Agent(
        name="retrier",
        model=model,
        budget=budget,
        retry=RetryPolicy(base_delay=0.001, max_delay=0.002),
        prices=PriceTable({"broken-streams": Price(1.0, 1.0)}),
    )


@pytest.mark.parametrize(
    ("budget", "limit"),
    [(Budget(max_tokens=1000), "tokens"), (Budget(max_cost_usd=0.001), "cost")],
)
def test_failed_calls_that_use_up_a_budget_stop_the_run_before_a_retry(budget: Budget, limit: str) -> None:
    model = BrokenStreams(broken=3)
    result = _agent(model, budget).run("do it")
    assert (result.reason, result.limit) == ("limit", limit)
    assert model.calls == 1  # no retry past the budget (it made 4 calls, used 3,620 tokens, and succeeded)
    assert result.input_tokens + result.output_tokens == 1200
    assert "the stream broke" in result.note


def test_retries_within_the_budget_still_happen() -> None:
    model = BrokenStreams(broken=2)
    result = _agent(model, Budget(max_tokens=10_000)).run("do it")
    assert (result.reason, model.calls) == ("success", 3)
    assert result.input_tokens + result.output_tokens == 2420
