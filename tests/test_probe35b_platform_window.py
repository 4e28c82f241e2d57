"""Amazon Bedrock refuses a prompt longer than the model's window in words of its own: a 400
`ValidationException` whose body is `{"message": "Input is too long for requested model."}` (seen
with Claude on Bedrock: anthropics/claude-code#760 and #8637, claude-agent-sdk-python#431). The
adapter knew only the Claude API's words ("prompt is too long", "exceed context limit"), so such a
run ended `error`/`bad_request` at once instead of having the history policy shrink the prompt.
Inside a Bedrock stream the same refusal is an exception event (`validationException`), which the
SDK's Bedrock client gives as an `error` event of that type: it was retried as a server error, then
ended the run `error`."""

from __future__ import annotations

import json

import pytest
from messages_api import MessagesAPI, Response, events_of, message, streamed, text, tool_use

from agent import Agent, Budget, LimitKind, RetryPolicy, StopReason, tool
from agent.models.anthropic import AnthropicModel

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
BEDROCK_TOO_LONG = Response(
    400, {"message": "Input is too long for requested model."}, {"x-amzn-errortype": "ValidationException"}
)


def in_stream(code: str, words: str) -> Response:
    """A Bedrock stream's exception as the SDK's Bedrock client gives it (`_stream_decoder`)."""
    began = events_of(message(text("partial")), model=MODEL)[:2]
    return streamed(*began, ("error", {"type": "error", "error": {"type": code, "message": words}}))


IN_STREAM_TOO_LONG = in_stream("validationException", "Input is too long for requested model.")


@tool
def read(page: int) -> str:
    """Read one page of a long document."""
    return f"page {page}: " + "lorem ipsum " * 1_700


def agent_for(api: MessagesAPI) -> Agent:
    model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
    return Agent("reader", model, tools=[read], budget=Budget(max_turns=10, max_seconds=60), retry=FAST)


def test_with_nothing_left_to_shrink_it_is_the_context_limit_not_an_error() -> None:
    with MessagesAPI(BEDROCK_TOO_LONG) as api:
        result = agent_for(api).run("Read the pages.")
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.CONTEXT), result.note
    assert "Input is too long for requested model" in result.note


@pytest.mark.parametrize("too_long", [BEDROCK_TOO_LONG, IN_STREAM_TOO_LONG], ids=["status", "in_stream"])
def test_either_way_bedrock_says_it_the_history_policy_shrinks_the_prompt(too_long: Response) -> None:
    reads = [message(tool_use("read", {"page": i}), input_tokens=None) for i in range(5)]
    with MessagesAPI(*reads, too_long, message(DONE)) as api:
        result = agent_for(api).run("Read the pages.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 7
    assert "was cleared to save context" in json.dumps(api.bodies[6]["messages"])


def test_bedrocks_throttling_inside_a_stream_is_a_rate_limit_retried() -> None:
    with MessagesAPI(in_stream("throttlingException", "Too many requests"), message(DONE)) as api:
        result = agent_for(api).run("Read the pages.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    with MessagesAPI(*[in_stream("throttlingException", "Too many requests")] * 2) as api:
        result = agent_for(api).run("Read the pages.")
    assert result.reason is StopReason.ERROR and result.error_type == "rate_limit", result.note
