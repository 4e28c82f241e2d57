"""What the API's usage says is counted when it is a count, and a cost is unknown, never false, when
it is not: an input count no call could have (10**18 tokens, below 2**63), a negative or missing input
count in `message_start`; and a stream that an SSE `error` event ends still counts what the API said
it took. Before, 10**18 input tokens were priced as given (a false cost, and a run stopped `limit` by
a budget it never used), a call whose input count was no count was charged $0 with its cost known,
and the tokens of a stream an `error` event ended were not counted at all.

The real SDK against the local Messages API server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from messages_api import MessagesAPI, Response, error, events_of, iteration, message, streamed, text, tool_use

from agent import Agent, Budget, RetryPolicy, RunResult, StopReason
from agent.models.anthropic import AnthropicModel

MODEL = "claude-haiku-4-5"
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)


def run(*responses: Response, budget: Budget | None = None) -> tuple[RunResult, int]:
    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
        agent = Agent("counts", model, budget=budget or Budget(max_turns=3), retry=RETRY)
        result = agent.run("Go.")
    return result, len(api.requests)


def good() -> Response:
    return message(DONE, input_tokens=1_000, output_tokens=5)


@pytest.mark.parametrize("count", [10**18, 10**12, 2**62])
def test_an_input_count_no_call_could_have_is_no_cost_nor_a_budget_spent(count: int) -> None:
    absurd = message(DONE, input_tokens=count, output_tokens=5)
    budget = Budget(max_turns=3, max_tokens=100_000, max_cost_usd=5.0)
    result, calls = run(absurd, good(), budget=budget)
    assert result.reason is StopReason.SUCCESS, result.note
    assert calls == 2  # the reply with the absurd count is malformed: asked again
    assert result.cost_usd is None  # a call whose input is unknown: the run's cost is unknown
    assert result.input_tokens < 100_000


def events_with_start_usage(usage: dict[str, Any]) -> list[tuple[str, Any]]:
    """A whole reply's events whose usage (in message_start and message_delta) is `usage`."""
    events = events_of(message(DONE, input_tokens=1_000, output_tokens=5))
    start = json.loads(json.dumps(events[0][1]))
    start["message"]["usage"] = usage | {"output_tokens": 1}
    delta = json.loads(json.dumps(events[-2][1]))
    delta["usage"] = {k: v for k, v in usage.items()} | {"output_tokens": 5}
    return [("message_start", start), *events[1:-2], ("message_delta", delta), events[-1]]


@pytest.mark.parametrize(
    "usage", [{"input_tokens": -5}, {}, {"input_tokens": None}, {"input_tokens": 10**15}]
)
def test_a_call_whose_input_count_is_no_count_has_an_unknown_cost_not_a_known_one(
    usage: dict[str, Any],
) -> None:
    result, calls = run(streamed(*events_with_start_usage(usage)), good())
    assert result.reason is StopReason.SUCCESS, result.note
    assert calls == 2
    assert result.cost_usd is None
    assert result.input_tokens == 1_000  # the good call's; the other's is not known


def test_a_good_run_still_has_a_known_cost() -> None:
    result, calls = run(good())
    assert (result.reason, calls, result.input_tokens) == (StopReason.SUCCESS, 1, 1_000)
    assert result.cost_usd is not None and result.cost_usd > 0


def cut_by_error_event(input_tokens: int) -> Response:
    """A stream that began (message_start counting `input_tokens`, some text) and that the API ended
    with an `error` event (overloaded mid-way)."""
    events = events_of(message(text("partial " * 50), input_tokens=input_tokens, output_tokens=5))
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    began = [e for e in events if e[0] in ("message_start", "content_block_start", "content_block_delta")]
    return streamed(*began, ("error", body))


def test_the_tokens_of_a_stream_an_error_event_ended_are_counted() -> None:
    result, calls = run(cut_by_error_event(50_000), good())
    assert result.reason is StopReason.SUCCESS, result.note
    assert calls == 2
    assert result.input_tokens == 51_000  # the input the API said it took, then the good call's
    assert 5 < result.output_tokens <= 5 + 200  # the text streamed before the error, estimated
    assert result.cost_usd is not None and result.cost_usd > 0.05  # 51k tokens of Haiku 4.5 ($1/MTok)


def test_an_error_event_before_any_message_start_counts_nothing() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    result, calls = run(streamed(("error", body)), good())
    assert (result.reason, calls, result.input_tokens) == (StopReason.SUCCESS, 2, 1_000)
    assert result.cost_usd is not None


def test_a_stream_error_event_that_retrying_will_not_fix_still_counts_its_tokens() -> None:
    events = events_of(message(text("partial"), input_tokens=7_000, output_tokens=5))
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    result, calls = run(streamed(events[0], ("error", body)), error(500))
    assert result.reason is StopReason.ERROR
    assert calls == 1
    assert result.input_tokens == 7_000


@pytest.mark.parametrize("uses", [10**15, 1_001])
def test_a_count_of_web_searches_no_call_makes_is_no_cost_of_trillions(uses: int) -> None:
    absurd = message(
        DONE, input_tokens=1_000, output_tokens=5, usage={"server_tool_use": {"web_search_requests": uses}}
    )
    result, calls = run(absurd, good(), budget=Budget(max_turns=3, max_cost_usd=5.0))
    assert result.reason is StopReason.SUCCESS, result.note
    assert calls == 2  # malformed: asked again
    assert result.cost_usd is not None and result.cost_usd < 0.01


def test_a_call_that_searched_the_web_is_charged_for_each_search() -> None:
    searched = message(
        DONE, input_tokens=1_000, output_tokens=5, usage={"server_tool_use": {"web_search_requests": 3}}
    )
    result, calls = run(searched)
    assert (result.reason, calls) == (StopReason.SUCCESS, 1)
    assert result.cost_usd == pytest.approx((1_000 * 1.0 + 5 * 5.0) / 1e6 + 3 * 0.01)


@pytest.mark.parametrize("count", [10**18, -5, "many"])
def test_an_iteration_count_no_call_could_have_is_no_cost_nor_a_count(count: Any) -> None:
    steps = [iteration("compaction", count, 50), iteration("message", 1_000, 5)]
    absurd = message(DONE, input_tokens=1_000, output_tokens=5, usage={"iterations": steps})
    result, calls = run(absurd, good())
    assert result.reason is StopReason.SUCCESS, result.note
    assert calls == 2  # malformed: asked again
    assert result.input_tokens < 100_000
    assert result.cost_usd is not None and result.cost_usd < 0.01


def test_a_compaction_the_api_billed_apart_is_still_counted() -> None:
    steps = [iteration("compaction", 100, 50), iteration("message", 1_000, 5)]
    result, calls = run(message(DONE, input_tokens=1_000, output_tokens=5, usage={"iterations": steps}))
    assert (result.reason, calls, result.input_tokens) == (StopReason.SUCCESS, 1, 1_100)


def test_a_compaction_may_write_more_than_the_agents_max_tokens() -> None:
    steps = [iteration("compaction", 150_000, 8_000), iteration("message", 1_000, 5)]
    long_summary = message(DONE, input_tokens=1_000, output_tokens=5, usage={"iterations": steps})
    with MessagesAPI(long_summary) as api:
        model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
        result = Agent("small", model, budget=Budget(max_turns=2), retry=RETRY, max_tokens=256).run("Go.")
    assert (result.reason, len(api.requests)) == (StopReason.SUCCESS, 1), result.note
    assert result.input_tokens == 151_000
