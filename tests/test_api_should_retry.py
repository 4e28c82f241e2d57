"""The API's `x-should-retry: false` on a stream that began (its 200 headers) is heeded when the stream
then breaks or ends in an `error` event, as the SDK (2.17) heeds it for a body that failed after its
headers came: the call is not sent again. Whole runs through the real `anthropic` SDK against the
local Messages API server."""

from __future__ import annotations

import dataclasses

from messages_api import MessagesAPI, Response, dropped, message, stream_error, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
NO_RETRY = {"x-should-retry": "false"}


def run(*responses: Response) -> tuple[object, MessagesAPI]:
    with MessagesAPI(*responses) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test", base_url=api.url)
        agent = Agent("no-retry", model, budget=Budget(max_turns=4, max_seconds=60), retry=FAST)
        return agent.run("Do the task."), api


def test_a_broken_stream_whose_headers_say_do_not_retry_is_not_sent_again() -> None:
    broken = dataclasses.replace(dropped(), headers=NO_RETRY)
    result, api = run(broken, message(DONE))
    assert result.reason is StopReason.ERROR, result.note  # type: ignore[attr-defined]
    assert result.error_type == "connection"  # type: ignore[attr-defined]
    assert "x-should-retry" in result.note  # type: ignore[attr-defined]
    assert len(api.requests) == 1


def test_an_error_event_in_a_stream_whose_headers_say_do_not_retry_is_not_sent_again() -> None:
    failed = dataclasses.replace(stream_error("overloaded_error"), headers=NO_RETRY)
    result, api = run(failed, message(DONE))
    assert result.reason is StopReason.ERROR, result.note  # type: ignore[attr-defined]
    assert result.error_type == "overloaded"  # type: ignore[attr-defined]
    assert len(api.requests) == 1


def test_a_broken_stream_whose_headers_say_nothing_is_still_retried() -> None:
    result, api = run(dropped(), stream_error("overloaded_error"), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note  # type: ignore[attr-defined]
    assert len(api.requests) == 3
