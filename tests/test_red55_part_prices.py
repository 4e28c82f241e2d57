"""red55: a model the request named for one kind of usage part does not vouch for another kind.

Before: the models a request names (the model asked, its `fallbacks` list's, its advisor tool's) were one
set, trusted for every part of a reply's usage. A request with a cheap advisor (Haiku advising Opus) had a
server-side fallback's parts a hostile server said Haiku ran priced at Haiku, though the request asked for
no fallback to Haiku; and a request with a cheap fallback had an advisor's answer said to be by that model
priced at it. A fallback's parts are now trusted only for the model asked and its `fallbacks` list's, an
advisor's answer (a part billed apart) only for the model asked and its advisor tool's.
Through the real SDK against the local Messages API server."""

from __future__ import annotations

import pytest
from messages_api import message, tool_use
from test_claude54_part_prices import ADVISOR, ASKED, CHEAP, DONE, advised, fell_back, haiku, opus, run

from agent import Budget, StopReason
from agent.models.anthropic import models_named


def test_a_fallback_said_to_be_by_the_advisors_model_is_priced_as_the_model_asked() -> None:
    result = run(fell_back(DONE, declined=CHEAP), server_tools=[ADVISOR])
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(3_000, 150))


def test_the_cost_ceiling_holds_against_a_fallback_said_to_be_by_the_advisors_model() -> None:
    budget = Budget(max_turns=4, max_seconds=60, max_cost_usd=0.01)  # $0.00375 at Haiku's price
    looked = fell_back(tool_use("look", {"path": "a.txt"}), declined=CHEAP)
    result = run(looked, message(DONE), server_tools=[ADVISOR], budget=budget)
    assert (result.reason, result.limit) == (StopReason.LIMIT, "cost"), result.note


def test_an_advisors_answer_said_to_be_by_a_fallback_model_is_priced_as_the_model_asked() -> None:
    result = run(advised(CHEAP), extra_body={"fallbacks": [{"model": CHEAP}]})
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(10, 5) + opus(40_000, 1_500))


def test_each_kind_of_part_still_trusts_its_own_named_model() -> None:
    both = {"extra_body": {"fallbacks": [{"model": CHEAP}]}, "server_tools": [ADVISOR]}
    assert run(advised(CHEAP), **both).cost_usd == pytest.approx(opus(10, 5) + haiku(40_000, 1_500))
    assert run(fell_back(DONE), **both).cost_usd == pytest.approx(opus(1_000, 50) + haiku(2_000, 100))


@pytest.mark.parametrize(
    "fallbacks",
    ["default", "", {"model": CHEAP}, [None, 3, {"model": 5}, {"model": ""}, {}], 7, None],
    ids=["default", "blank", "dict", "odd-entries", "number", "none"],
)
def test_odd_fallbacks_shapes_name_no_model_and_never_crash(fallbacks: object) -> None:
    named = models_named(ASKED, [{"type": "advisor_20260301", "name": "advisor"}], {"fallbacks": fallbacks})
    assert set().union(*named.values()) == {ASKED}


DEAR_ADVISOR = {"type": "advisor_20260301", "name": "advisor", "model": "claude-opus-4-1"}  # $15 / $75


def opus_4_1(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * 15 + output_tokens * 75) / 1e6


def test_an_advisors_answer_said_to_be_by_a_cheap_model_costs_at_least_the_advisor_asked() -> None:
    # Before: priced at the dearer of Haiku and the model asked (Opus 4.6), under the Opus 4.1 advisor asked.
    result = run(advised(CHEAP), server_tools=[DEAR_ADVISOR])
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(opus(10, 5) + opus_4_1(40_000, 1_500))


def test_an_advisors_answer_by_the_advisor_asked_is_priced_at_it() -> None:
    result = run(advised("claude-opus-4-1"), server_tools=[DEAR_ADVISOR])
    assert result.cost_usd == pytest.approx(opus(10, 5) + opus_4_1(40_000, 1_500))


def test_an_unasked_part_billed_apart_costs_at_least_the_model_asked_when_the_advisor_is_cheaper() -> None:
    result = run(advised("claude-sonnet-4-5"), server_tools=[ADVISOR])  # Haiku advising Opus
    assert result.cost_usd == pytest.approx(opus(10, 5) + opus(40_000, 1_500))
