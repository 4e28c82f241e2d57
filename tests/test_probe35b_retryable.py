"""Client middleware (SDK 2.16) asks for an attempt to be retried by raising `anthropic.RetryableError`
(or an error caused by one): the SDK's retry policy retries it. The adapter turns the SDK's retries off
and retries in the loop instead, but took such an error for a permanent `api_error`: the run ended
`error` at the first one."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})


class TokenNotReady(Exception):
    """A middleware's own error, raised from a `RetryableError` (the SDK walks the cause chain)."""


def raising(failures: int, wrapped: bool) -> Any:
    """Middleware that asks for a retry on its first `failures` attempts, then lets them through."""
    seen = {"attempts": 0}

    async def middleware(request: Any, call_next: Any) -> Any:
        seen["attempts"] += 1
        if seen["attempts"] <= failures:
            asked = anthropic.RetryableError("the token is being refreshed")
            if wrapped:
                raise TokenNotReady("no token yet") from asked
            raise asked
        return await call_next(request)

    return middleware


def run(failures: int, wrapped: bool = False) -> tuple[Any, MessagesAPI]:
    async def go(api: MessagesAPI) -> Any:
        middleware = [raising(failures, wrapped)]
        async with anthropic.AsyncAnthropic(
            base_url=api.url, api_key="sk-ant-test", middleware=middleware
        ) as client:
            agent = Agent("middleware", AnthropicModel(MODEL, client=client), retry=FAST)
            return await agent.arun("Do the task.")

    with MessagesAPI(message(DONE)) as api:
        return asyncio.run(go(api)), api


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_retry_middleware_asks_for_is_made_by_the_loop(wrapped: bool) -> None:
    result, api = run(failures=1, wrapped=wrapped)
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 1


def test_retries_asked_for_past_the_policy_end_the_run_as_error_saying_so() -> None:
    result, api = run(failures=5)
    assert result.reason is StopReason.ERROR and result.error_type == "retryable", result.note
    assert "after 3 attempts" in result.note and "the token is being refreshed" in result.note
    assert len(api.requests) == 0
