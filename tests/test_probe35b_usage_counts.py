"""A stream whose usage is missing where the API always gives it is a reply that could not be read
(`malformed_reply`: retried, what the broken call used recorded), not a count of nothing. A
`message_delta` without its output count (the SDK's `MessageDeltaUsage.output_tokens` is required)
had the reply kept with 0 output tokens, its cost short by all of its output; a `message_start`
without usage ended the run at once as `error` with "AttributeError: 'NoneType' object ..."."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from messages_api import MessagesAPI, Response, events_of, message, streamed, text, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

MODEL = "claude-haiku-4-5"  # $1 input, $5 output per million tokens
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
LONG = message(text("word " * 400), DONE, input_tokens=1_000, output_tokens=900)  # 2,000 characters
Events = list[tuple[str, Any]]


def event(events: Events, name: str) -> dict[str, Any]:
    return next(data for kind, data in events if kind == name)


def broken(change: Callable[[Events], object]) -> Response:
    events = copy.deepcopy(events_of(LONG, model=MODEL))
    change(events)
    return streamed(*events)


def run(*responses: Response) -> tuple[Any, MessagesAPI]:
    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
        agent = Agent("usage", model, budget=Budget(max_turns=4, max_seconds=60), retry=FAST)
        return agent.run("Do the task."), api


NO_OUTPUT_COUNT: dict[str, Callable[[Events], object]] = {
    "empty usage": lambda events: event(events, "message_delta").update(usage={}),
    "null output": lambda events: event(events, "message_delta")["usage"].update(output_tokens=None),
}


def no_input_count(events: Events) -> None:
    event(events, "message_start")["message"]["usage"]["input_tokens"] = None
    event(events, "message_delta")["usage"].pop("input_tokens")


@pytest.mark.parametrize("case", NO_OUTPUT_COUNT)
def test_a_message_delta_without_its_output_count_is_a_malformed_reply_whose_output_is_estimated(
    case: str,
) -> None:
    result, api = run(broken(NO_OUTPUT_COUNT[case]), message(DONE, input_tokens=100, output_tokens=7))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2  # retried
    assert result.input_tokens == 1_000 + 100
    assert result.output_tokens >= 2_000 // 4 + 7  # the broken call's output, estimated from its text


UNREADABLE_STARTS: dict[str, Callable[[Events], object]] = {
    "no usage": lambda events: event(events, "message_start")["message"].pop("usage"),
    "usage no object": lambda events: event(events, "message_start")["message"].update(usage=True),
    "model no string": lambda events: event(events, "message_start")["message"].update(model=1.5),
    "id no string": lambda events: event(events, "message_start")["message"].update(id=["msg"]),
}


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")  # the SDK's, reading it
@pytest.mark.parametrize("case", UNREADABLE_STARTS)
def test_an_unreadable_message_start_is_a_malformed_reply_retried_not_an_adapter_crash(case: str) -> None:
    no_usage = broken(UNREADABLE_STARTS[case])
    result, api = run(no_usage, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    result, _ = run(no_usage, no_usage, no_usage)
    assert result.reason is StopReason.ERROR and result.error_type == "malformed_reply", result.note
    assert "could not be read" in result.note and "message_start" in result.note


def test_a_reply_whose_usage_never_gives_the_input_count_is_a_malformed_reply_not_free_input() -> None:
    result, api = run(broken(no_input_count), message(DONE, input_tokens=100, output_tokens=7))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    assert result.output_tokens == 900 + 7  # the broken call's output was counted: it is kept


NOT_COUNTS: dict[str, Callable[[Events], object]] = {
    "input a string": lambda events: event(events, "message_delta")["usage"].update(input_tokens="x"),
    "input an object": lambda events: event(events, "message_delta")["usage"].update(input_tokens={}),
    "1h writes a string": lambda events: event(events, "message_start")["message"]["usage"].update(
        cache_creation={"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": "x"}
    ),
    "searches a string": lambda events: event(events, "message_delta")["usage"].update(
        server_tool_use={"web_search_requests": "x", "web_fetch_requests": 0}
    ),
}


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")  # the SDK's, reading it
@pytest.mark.parametrize("case", NOT_COUNTS)
def test_a_usage_count_that_is_no_count_is_a_malformed_reply_not_a_type_error_ending_the_run(
    case: str,
) -> None:
    result, api = run(broken(NOT_COUNTS[case]), message(DONE, input_tokens=100, output_tokens=7))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2


@pytest.mark.parametrize("field", ["id", "model"])
def test_a_gateway_that_leaves_out_the_id_or_model_is_read_as_naming_none(field: str) -> None:
    left_out = broken(lambda events: event(events, "message_start")["message"].pop(field))
    result, api = run(left_out)
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 1
    assert result.cost_usd == pytest.approx((1_000 * 1 + 900 * 5) / 1e6)  # priced as the model asked for
