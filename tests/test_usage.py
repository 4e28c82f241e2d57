"""`Usage`: one value for tokens and cost, used by the result, the store's record and the recorder."""

from __future__ import annotations

import json

import pytest

import agent
from agent import (
    Approval,
    Budget,
    HelpPolicy,
    Price,
    PriceTable,
    RunResult,
    StopReason,
    Usage,
    observe_run,
    tool,
)
from agent.models.base import ModelReply
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import PendingAction, Suspension

KNOWN = Usage(100, 20, cache_read_tokens=60, cache_write_tokens=30, cost_usd=0.5)


@pytest.mark.parametrize(
    ("a", "b", "total"),
    [
        (Usage(), Usage(), Usage()),
        (KNOWN, KNOWN, Usage(200, 40, 120, 60, 1.0)),
        (KNOWN, Usage(1, 2, cost_usd=None), Usage(101, 22, 60, 30, None)),  # unknown absorbs
        (Usage(1, 2, cost_usd=None), KNOWN, Usage(101, 22, 60, 30, None)),
        (Usage(cost_usd=None), Usage(cost_usd=None), Usage(cost_usd=None)),
    ],
)
def test_adding_two_usages_gives_a_usage_and_an_unknown_cost_stays_unknown(
    a: Usage, b: Usage, total: Usage
) -> None:
    assert a + b == total
    assert sum([a, b], Usage()) == total


def test_a_usage_is_a_frozen_value_with_a_flat_form() -> None:
    with pytest.raises(AttributeError):
        KNOWN.cost_usd = 1.0  # type: ignore[misc]
    assert KNOWN.tokens == 120 and KNOWN.cost_known and not Usage(cost_usd=None).cost_known
    assert Usage.from_flat(KNOWN.flat()) == KNOWN
    assert Usage.from_flat({"input_tokens": 3, "cost_usd": None}) == Usage(3, cost_usd=None)
    assert Usage.from_flat({}) == Usage()
    assert agent.Usage is Usage and "Usage" in agent.__all__


def test_a_result_keeps_its_flat_dict_exactly_and_reads_its_usage_as_before() -> None:
    pending = PendingAction("c1", "wire", {"amount": 5})
    result = RunResult(
        "r", "a", "t", StopReason.NEED_HELP, turns=2, usage=Usage(5, 3, 1, 1, None),
        suspension=Suspension("q?", 10.0, 5.0, pending),
    )  # fmt: skip
    assert (result.input_tokens, result.output_tokens, result.cost_usd) == (5, 3, None)
    assert result.to_dict() == {  # as version 1 wrote it, key for key and in order
        "run_id": "r", "agent": "a", "task_type": "t", "reason": "need_help", "limit": None,
        "cause": None, "output": "", "note": "", "summary": "", "verified": False, "turns": 2,
        "input_tokens": 5, "output_tokens": 3, "cost_usd": None, "active_seconds": 0.0,
        "waiting_seconds": 0.0, "verifier_failures": [], "last_text": "", "error_type": None,
        "trace_id": None,
        "suspension": {
            "question": "q?", "deadline": 10.0, "suspended_at": 5.0,
            "pending": {"tool_use_id": "c1", "name": "wire", "arguments": {"amount": 5}}, "call_id": "",
        },
    }  # fmt: skip
    assert list(result.to_dict())[10:14] == ["turns", "input_tokens", "output_tokens", "cost_usd"]
    json.dumps(result.to_dict())


@tool(needs_approval=True)
def wire(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


def test_a_runs_usage_sums_its_calls_with_their_cache_tokens_over_segments() -> None:
    replies = [
        ModelReply([call("wire", amount=5) | {"id": "t1"}], 1000, 10, "tool_use", "m", "a",
                   cache_read_input_tokens=600, cache_creation_input_tokens=300),
        ModelReply([finish("done", "paid") | {"id": "t2"}], 1100, 20, "tool_use", "m", "b",
                   cache_read_input_tokens=900, cache_creation_input_tokens=100),
    ]  # fmt: skip
    price = Price(input_per_mtok=3.0, output_per_mtok=15.0)

    def build(turns: list[ModelReply]) -> agent.Agent:
        model = ScriptedModel([[]], name="m")
        model.complete = _replaying(turns)  # type: ignore[method-assign]
        return agent.Agent(
            name="payer", model=model, tools=[wire], prices=PriceTable({"m": price}),
            budget=Budget(max_turns=5, max_seconds=60), help=HelpPolicy(wait_seconds=60),
        )  # fmt: skip

    waiting = build(replies[:1]).run("pay")
    assert waiting.usage == Usage(1000, 10, 600, 300, round(price.cost_of(replies[0]), 6))
    assert waiting.snapshot is not None
    done = build(replies[1:]).resume(waiting.snapshot, Approval())
    expected = Usage(2100, 30, 1500, 400, round(price.cost_of(replies[0]) + price.cost_of(replies[1]), 6))
    assert done.reason is StopReason.SUCCESS and done.usage == expected


def _replaying(replies: list[ModelReply]):  # type: ignore[no-untyped-def]
    left = list(replies)

    async def complete(request: object) -> ModelReply:
        return left.pop(0)

    return complete


def test_a_home_grown_run_adds_its_calls_usage_and_an_unpriced_call_makes_it_unknown() -> None:
    with observe_run(None, agent="home", task_type="t") as run:
        with run.model_call() as m:
            m.reply(input_tokens=10, output_tokens=2, cost_usd=0.25)
        with run.model_call() as m:
            m.reply(input_tokens=5, output_tokens=1, cost_usd=0.5)
        priced = run.succeed("ok")
    assert priced.usage == Usage(15, 3, cost_usd=0.75)
    with observe_run(None, agent="home", task_type="t") as run:
        with run.model_call() as m:
            m.reply(input_tokens=10, output_tokens=2, cost_usd=0.25)
        with run.model_call() as m:
            m.reply(input_tokens=5, output_tokens=1)  # no price: the run's cost is unknown
        unknown = run.succeed("ok")
    assert unknown.usage == Usage(15, 3, cost_usd=None) and unknown.to_dict()["cost_usd"] is None
