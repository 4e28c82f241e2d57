"""A `retry-after` in HTTP-date form that no clock can hold (a year past 9999: a broken proxy, a
fuzzer) is no wait the API asked for: the call is retried with the policy's backoff, as after a
`retry-after` of "soon", instead of the adapter raising `ValueError` and the run ending as error."""

from __future__ import annotations

import pytest
from messages_api import MessagesAPI, error, message, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel, retry_after

FAR = "Wed, 21 Oct 99999 07:28:00 GMT"  # the form of an HTTP date, a year no datetime holds
DONE = tool_use("finish", {"kind": "done", "note": "done"})


@pytest.mark.parametrize("value", [FAR, "Mon, 01 Jan 10000 00:00:00 GMT", "Mon, 01 Jan 10000 00:00:00"])
def test_an_http_date_past_any_clock_is_no_retry_after(value: str) -> None:
    assert retry_after({"retry-after": value}) is None


def test_a_run_whose_429_names_a_date_past_any_clock_retries_with_the_backoff_and_succeeds() -> None:
    busy = error(429, "rate limited", headers={"retry-after": FAR})
    with MessagesAPI(busy, message(DONE)) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-test", base_url=api.url)
        retry = RetryPolicy(base_delay=0.0, jitter=False)  # the backoff, not the header, sets the wait
        agent = Agent("t", model, retry=retry, budget=Budget(max_turns=5, max_seconds=None))
        result = agent.run("Do the task.")
        assert result.reason is StopReason.SUCCESS, result.note
        assert len(api.requests) == 2  # the 429, then the retry that succeeded
