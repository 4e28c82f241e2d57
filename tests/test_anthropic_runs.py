"""Whole runs through the real `anthropic` SDK against a local Messages API server: every way the
API can answer ends in a named stop, with the number of paid calls asserted."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from messages_api import MessagesAPI, error, message, text, tool_use

from agent import Agent, Budget, HistoryPolicy, LimitKind, StopCause, StopReason, tool
from agent.models.anthropic import AnthropicModel

MODEL = "claude-haiku-4-5"  # a 200k context window in the model table
WINDOW = 200_000
PAGE = "lorem ipsum " * 1_700  # about 20,400 characters: some 5,100 tokens


@tool
def read(page: int) -> str:
    """Read one page of a long document."""
    return f"page {page}: {PAGE}"


def script(pages: int = 60) -> list[object]:
    turns = [
        message(tool_use("read", {"page": i}), stop_reason="tool_use", input_tokens=None)
        for i in range(pages)
    ]
    finish = tool_use("finish", {"kind": "done", "note": "read it all"})
    return [*turns, message(finish, stop_reason="tool_use", input_tokens=None)]


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI(*script(), context_window=WINDOW) as server:  # type: ignore[arg-type]
        yield server


def reader(api: MessagesAPI, history: HistoryPolicy) -> Agent:
    model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
    return Agent(
        "reader", model, tools=[read], history=history, budget=Budget(max_turns=80, max_seconds=None)
    )


def test_sixty_turns_of_big_results_succeed_inside_a_200k_window_under_the_default_policy(
    api: MessagesAPI,
) -> None:
    result = reader(api, HistoryPolicy()).run("Read the whole document, one page a turn.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.turns == 61
    assert len(api.requests) == 61  # the policy acted before the API refused: no prompt was too long


def test_with_the_policy_off_the_same_run_stops_at_the_context_limit_not_an_error(api: MessagesAPI) -> None:
    result = reader(api, HistoryPolicy.off()).run("Read the whole document, one page a turn.")
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.CONTEXT)
    assert "prompt is too long" in result.note
    assert result.turns < 60


def run_with(*responses: object, budget: Budget | None = None) -> tuple[object, MessagesAPI]:
    with MessagesAPI(*responses) as api:  # type: ignore[arg-type]
        model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
        agent = Agent("t", model, tools=[read], budget=budget or Budget(max_turns=10, max_seconds=None))
        return agent.run("Read page 1."), api


DONE = tool_use("finish", {"kind": "done", "note": "read"})


def test_a_refusal_ends_the_run_at_once_as_gave_up_cause_refusal() -> None:
    result, api = run_with(message(text("I can't help with that."), stop_reason="refusal"), message(DONE))
    assert (result.reason, result.cause) == (StopReason.GAVE_UP, StopCause.REFUSAL)  # type: ignore[attr-defined]
    assert len(api.requests) == 1  # no further paid call


def test_pause_turn_sends_the_paused_reply_back_in_the_same_turn() -> None:
    paused = message(text("Searching..."), stop_reason="pause_turn")
    result, api = run_with(paused, message(DONE, stop_reason="tool_use"))
    assert result.reason is StopReason.SUCCESS  # type: ignore[attr-defined]
    assert (result.turns, len(api.requests)) == (1, 2)  # type: ignore[attr-defined]
    assert api.bodies[1]["messages"][-1]["role"] == "assistant"  # the paused reply, sent back


def test_max_tokens_without_a_call_asks_the_model_to_go_on() -> None:
    cut = message(text("The first half of the answer"), stop_reason="max_tokens")
    result, api = run_with(cut, message(DONE, stop_reason="tool_use"))
    assert result.reason is StopReason.SUCCESS  # type: ignore[attr-defined]
    assert len(api.requests) == 2
    assert "cut off at max_tokens" in api.bodies[1]["messages"][-1]["content"][-1]["text"]


def test_a_retry_after_longer_than_the_time_left_stops_at_the_seconds_limit_at_once() -> None:
    busy = error(429, "rate limited", headers={"retry-after": "60"})
    result, api = run_with(busy, message(DONE), budget=Budget(max_turns=10, max_seconds=30))
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.SECONDS)  # type: ignore[attr-defined]
    assert "retry-after" in result.note  # type: ignore[attr-defined]
    assert len(api.requests) == 1  # no retry that would only meet another 429


def _reads_then(last: object, pages: int = 5) -> list[object]:
    reads = [message(tool_use("read", {"page": i}), input_tokens=None) for i in range(pages)]
    return [*reads, last, message(DONE)]


FULL = message(text("Page 4 says"), stop_reason="model_context_window_exceeded", input_tokens=None)


def test_a_reply_that_fills_the_window_shrinks_the_history_and_the_run_goes_on() -> None:
    with MessagesAPI(*_reads_then(FULL)) as api:  # type: ignore[arg-type]
        result = reader(api, HistoryPolicy()).run("Read the pages.")
    assert result.reason is StopReason.SUCCESS and result.turns == 7
    assert len(api.requests) == 7  # no call lost, none repeated
    after = json.dumps(api.bodies[6]["messages"])
    assert "was cleared to save context" in after  # the policy shrank what the next call carries
    assert "cut off" in api.bodies[6]["messages"][-1]["content"][-1]["text"]  # and the model goes on


def test_a_reply_that_fills_the_window_with_the_policy_off_stops_at_the_context_limit() -> None:
    with MessagesAPI(*_reads_then(FULL)) as api:  # type: ignore[arg-type]
        result = reader(api, HistoryPolicy.off()).run("Read the pages.")
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.CONTEXT)
    assert "model_context_window_exceeded" in result.note
    assert len(api.requests) == 6  # the full reply was the last paid call


def test_a_prompt_the_api_refuses_as_too_long_is_shrunk_and_sent_again_in_the_same_turn() -> None:
    too_long = error(400, "prompt is too long: 210000 tokens > 200000 maximum")
    with MessagesAPI(*_reads_then(too_long)) as api:  # type: ignore[arg-type]
        result = reader(api, HistoryPolicy()).run("Read the pages.")
    assert (
        result.reason is StopReason.SUCCESS and result.turns == 6
    )  # the refused call was no turn of its own
    assert len(api.requests) == 7
    assert "was cleared to save context" in json.dumps(api.bodies[6]["messages"])
    assert "was cleared" not in json.dumps(api.bodies[5]["messages"])


def test_the_time_budget_cuts_a_streaming_call_and_the_run_counts_its_tokens() -> None:
    slow = message(text("word " * 400), input_tokens=1234, output_tokens=500, stream_delay=0.2)  # 10 s
    result, api = run_with(slow, message(DONE), budget=Budget(max_turns=10, max_seconds=2.0))
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.SECONDS)  # type: ignore[attr-defined]
    assert "cut off when the time budget ran out" in result.note  # type: ignore[attr-defined]
    assert len(api.requests) == 1
    assert result.input_tokens == 1234  # type: ignore[attr-defined]  # the cut call's tokens, counted
    assert 0 < result.output_tokens < 500  # type: ignore[attr-defined]
    assert result.cost_usd is not None and result.cost_usd > 0  # type: ignore[attr-defined]
