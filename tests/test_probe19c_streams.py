"""A stream that a broken endpoint or a proxy stopped short, yet closed as if whole: through the real
`anthropic` SDK against the local Messages API server, a whole run each."""

from __future__ import annotations

from typing import Any

from messages_api import MessagesAPI, Response, events_of, message, streamed, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason, tool
from agent.models.anthropic import AnthropicModel

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)
PAID: list[dict[str, Any]] = []
DONE = tool_use("finish", {"kind": "done", "note": "paid"})
PAY = tool_use("pay", {"to": "acme", "cents": 125000, "memo": "invoice 7"}, id="toolu_PAY")


@tool
def pay(to: str, cents: int = 0, memo: str = "") -> str:
    """Pay an amount (its arguments beyond `to` are optional)."""
    PAID.append({"to": to, "cents": cents, "memo": memo})
    return "paid"


def run(*responses: Response) -> tuple[Any, MessagesAPI]:
    PAID.clear()
    with MessagesAPI(*responses) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-test", base_url=api.url)
        budget = Budget(max_turns=5, max_seconds=30)
        return Agent("payer", model, tools=[pay], budget=budget, retry=FAST).run("Pay acme."), api


def _input_cut_at(events: list[tuple[str, Any]], text: str) -> list[tuple[str, Any]]:
    """`events` with the call's streamed input replaced by `text`, the rest of the stream as it was."""
    deltas = [i for i, (name, _) in enumerate(events) if name == "content_block_delta"]
    piece = {"type": "input_json_delta", "partial_json": text}
    cut = ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": piece})
    return [*events[: deltas[0]], cut, *events[deltas[-1] + 1 :]]


def test_a_call_whose_streamed_input_stops_before_its_json_ends_is_never_run_but_retried() -> None:
    short = _input_cut_at(events_of(message(PAY)), '{"to": "acme", "cents": 12')  # then tool_use, stop
    result, api = run(streamed(*short), message(PAY), message(DONE))
    assert PAID == [{"to": "acme", "cents": 125000, "memo": "invoice 7"}]  # never {"cents": 12}
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 3
    assert api.bodies[1] == api.bodies[0]  # the same request again: the cut reply was not kept


def test_a_stream_closed_without_its_message_delta_is_retried_and_its_output_counted() -> None:
    whole = events_of(message(PAY, output_tokens=400))
    no_delta = [event for event in whole if event[0] != "message_delta"]  # no stop reason, no count
    result, api = run(streamed(*no_delta), message(PAY), message(DONE))
    assert len(PAID) == 1  # run once, from the whole reply
    assert result.reason is StopReason.SUCCESS, result.note
    assert api.bodies[1] == api.bodies[0]
    assert result.output_tokens > 2 * 5 + 1  # its output estimated from what it streamed, not 1


def test_a_call_cut_by_max_tokens_still_becomes_a_note_not_a_retry() -> None:
    cut = message(PAY, stop_reason="max_tokens")
    short = _input_cut_at(events_of(cut), '{"to": "acme", "cents": 12')
    result, api = run(streamed(*short), message(DONE))
    assert PAID == []
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    assert "was cut off and was not run" in str(api.bodies[1]["messages"][1])


def test_a_call_of_a_block_type_the_sdk_does_not_know_cut_by_max_tokens_becomes_a_note() -> None:
    # An MCP connector call streams its input like tool_use; the SDK leaves its input to the adapter.
    mcp = {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "lookup", "server_name": "wiki", "input": {}}
    events = events_of(message(mcp, stop_reason="max_tokens"))
    start = next(i for i, (kind, _) in enumerate(events) if kind == "content_block_start")
    piece = {"type": "input_json_delta", "partial_json": '{"query": "caf'}
    cut = ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": piece})
    result, api = run(streamed(*events[: start + 1], cut, *events[start + 1 :]), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2  # not retried as unreadable: the API would cut it off again
    assert "was cut off and was not run" in str(api.bodies[1]["messages"][1])


def test_a_call_cut_by_the_time_budget_is_charged_no_more_output_than_its_max_tokens() -> None:
    # A proxy (or a broken endpoint) streams far more text than the request's max_tokens allows; the
    # API bills at most max_tokens of output, so a cut call's estimate stops there.
    start = events_of(message(DONE))[0]
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x" * 4000}}
    stall = [("ping", {"type": "ping"})] * 400
    flood = Response(
        200,
        None,
        events=(start, ("content_block_start", block), *[("content_block_delta", delta)] * 10, *stall),
        stream_delay=0.01,
    )
    with MessagesAPI(flood) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-test", base_url=api.url)
        budget = Budget(max_turns=5, max_seconds=1.5)
        result = Agent("writer", model, tools=[pay], budget=budget, max_tokens=100).run("Write.")
    assert result.reason is StopReason.LIMIT and result.limit == "seconds", result.note
    assert result.output_tokens == 100  # 10,000 tokens streamed, at 4 characters a token


def test_a_refusal_that_cuts_a_call_short_still_ends_the_run_at_once_as_gave_up() -> None:
    # A streaming refusal stops the reply where it was, a call's input half written maybe.
    refused = message(PAY, stop_reason="refusal", stop_details={"type": "refusal", "category": "cyber"})
    short = _input_cut_at(events_of(refused), '{"to": "acme", "cents": 12')
    result, api = run(streamed(*short), message(DONE))
    assert result.reason is StopReason.GAVE_UP and result.cause == "refusal", result.note
    assert PAID == [] and len(api.requests) == 1  # no further paid call
