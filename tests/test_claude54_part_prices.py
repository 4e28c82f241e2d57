"""claude54: the parts of a call's usage (`usage.iterations`: a server-side fallback's attempts, an
advisor's answer) were each priced at the model it names, as if that model had been asked: a server
naming a cheap model in them had the whole call priced at it, under the cost ceiling. A reply's own
model is priced by the model asked (the dearer of the two when they differ); a part is now priced so
too, unless the request named its model: a model of its `fallbacks` list, its advisor tool's model.
Through the real SDK against the local Messages API server."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, Response, fallback_block, iteration, message, tool_use

from agent import Agent, Budget, PriceTable, RetryPolicy, StopReason, tool
from agent.models.anthropic import AnthropicModel
from agent.models.base import BILLED_BY_MODEL, NAMED_UNASKED, ModelReply

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
ASKED, CHEAP = "claude-opus-4-6", "claude-haiku-4-5"  # $5 / $25 and $1 / $5 per million tokens
DONE = tool_use("finish", {"kind": "done", "note": "ok"})


@tool
def look(path: str) -> str:
    """Look at a file."""
    return f"{path}: fine"


def opus(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * 5 + output_tokens * 25) / 1e6


def haiku(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * 1 + output_tokens * 5) / 1e6


def fell_back(*content: dict[str, Any], named: str = CHEAP, declined: str = ASKED) -> Response:
    """A reply whose usage says `declined` declined after 1,000 input tokens and 50 output, and `named`
    answered with 2,000 and 100 (a server-side fallback), its own model `named` too."""
    parts = [
        iteration("message", 1_000, 50, model=declined),
        iteration("fallback_message", 2_000, 100, model=named),
    ]
    usage = {"iterations": parts}
    return message(*content, input_tokens=3_000, output_tokens=150, model=named, usage=usage)


def run(*replies: Response, budget: Budget | None = None, **options: Any) -> Any:
    with MessagesAPI(*replies) as api:
        model = AnthropicModel(ASKED, api_key="sk-ant-test", base_url=api.url, **options)
        budget = budget or Budget(max_turns=4, max_seconds=60)
        return Agent("parts", model, tools=[look], budget=budget, retry=FAST).run("Look at a.txt.")


def test_a_cheaper_model_named_in_every_iteration_is_priced_as_the_model_asked() -> None:
    # No fallback was asked for: the parts' cheaper model is a server's word, priced as the reply's
    # own model is, at the dearer of it and the model asked.
    result = run(fell_back(DONE, declined=CHEAP))
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(3_000, 150))


def test_a_cost_ceiling_is_not_evaded_by_iterations_naming_a_cheaper_model() -> None:
    # Priced at Haiku, the first reply cost $0.00375, under the $0.01 ceiling, and the run went on.
    budget = Budget(max_turns=4, max_seconds=60, max_cost_usd=0.01)
    result = run(fell_back(tool_use("look", {"path": "a.txt"}), declined=CHEAP), message(DONE), budget=budget)
    assert (result.reason, result.limit) == (StopReason.LIMIT, "cost"), result.note
    assert result.cost_usd == pytest.approx(opus(3_000, 150))


def test_a_fallback_the_request_asked_for_by_default_is_priced_at_the_dearer_model() -> None:
    # `"default"` leaves the fallback model to the API: the request names none, so none is trusted.
    result = run(fell_back(DONE), extra_body={"fallbacks": "default"})
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(1_000, 50) + opus(2_000, 100))


def test_a_fallback_model_the_request_named_is_priced_at_its_own_price() -> None:
    result = run(fell_back(DONE), extra_body={"fallbacks": [{"model": CHEAP}]})
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(1_000, 50) + haiku(2_000, 100))


def test_a_dated_id_of_a_fallback_model_the_request_named_is_that_model() -> None:
    result = run(fell_back(DONE, named=f"{CHEAP}-20251001"), extra_body={"fallbacks": [{"model": CHEAP}]})
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(1_000, 50) + haiku(2_000, 100))


def test_a_part_naming_a_model_other_than_the_fallback_the_request_named_is_priced_as_asked() -> None:
    # The request named Claude Sonnet 4.5 as its fallback; the reply says Haiku answered.
    result = run(fell_back(DONE), extra_body={"fallbacks": [{"model": "claude-sonnet-4-5"}]})
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(3_000, 150))


def advised(named: str) -> Response:
    advice = iteration("advisor_message", 40_000, 1_500, model=named)
    return message(DONE, input_tokens=10, output_tokens=5, usage={"iterations": [advice]})


ADVISOR = {"type": "advisor_20260301", "name": "advisor", "model": CHEAP}


def test_an_advisors_answer_naming_a_model_no_advisor_tool_names_is_priced_as_asked() -> None:
    result = run(advised(CHEAP))
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(10, 5) + opus(40_000, 1_500))


def test_an_advisors_answer_is_priced_at_the_model_its_advisor_tool_names() -> None:
    result = run(advised(CHEAP), server_tools=[ADVISOR])
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(10, 5) + haiku(40_000, 1_500))


def test_a_part_naming_a_dearer_model_than_asked_is_priced_at_the_dearer() -> None:
    result = run(fell_back(DONE, named=ASKED, declined="claude-opus-4-1"))  # $15 / $75
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx((1_000 * 15 + 50 * 75) / 1e6 + opus(2_000, 100))


def test_only_a_part_the_adapter_marked_is_priced_as_asked_so_a_recorded_reply_prices_as_it_did() -> None:
    # A reply recorded before the mark (a Temporal history, replayed) keeps the price it had then.
    parts = [
        {"input_tokens": 1_000, "output_tokens": 50, "model": CHEAP},
        {"input_tokens": 2_000, "output_tokens": 100, "model": CHEAP},
    ]
    recorded = ModelReply([], 3_000, 150, model=CHEAP, extra={BILLED_BY_MODEL: parts})
    marked = ModelReply(
        [], 3_000, 150, model=CHEAP, extra={BILLED_BY_MODEL: [p | {NAMED_UNASKED: True} for p in parts]}
    )
    prices = PriceTable()
    assert prices.cost_of(ASKED, recorded) == pytest.approx(haiku(3_000, 150))
    assert prices.cost_of(ASKED, marked) == pytest.approx(opus(3_000, 150))


def test_an_attempt_said_to_have_declined_is_billed_when_the_request_asked_for_no_fallback() -> None:
    # Without `fallbacks` no fallback can happen: an attempt "declined before any output" in a category
    # not billed is the server's word too, and left a call's input out of the cost ceiling.
    parts = [
        iteration("message", 1_000, 0, model=ASKED),
        iteration("fallback_message", 2_000, 100, model=CHEAP),
    ]
    reply = message(
        fallback_block(ASKED, CHEAP, "cyber"),
        DONE,
        input_tokens=2_000,
        output_tokens=100,
        model=CHEAP,
        usage={"iterations": parts},
    )
    result = run(reply)
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(3_000, 100))
    asked = run(reply, extra_body={"fallbacks": [{"model": CHEAP}]})  # asked for: the API's rule holds
    assert asked.cost_usd == pytest.approx(haiku(2_000, 100))
