"""A reply that could not be read, or whose stream broke off, names its request id (claude53).

Anthropic's support traces a call by the `request-id` header of its response, and an error status
already quoted it. A 200 reply whose body could not be read (a `malformed_reply`) or whose stream
broke off mid-way did not, though both had the header: the run's note and the log lines that quote
the error gave nothing to trace the call by. Runs go through the real `anthropic` SDK against a
local Messages API server, which numbers each request's id (`req_test_0001`, ...).
"""

from __future__ import annotations

import pytest
from messages_api import MessagesAPI, dropped, malformed

from agent import Agent, RetryPolicy, StopReason
from agent.models import anthropic as adapter
from agent.models.anthropic import AnthropicModel

TWICE = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)


FAILING = {"bad_event": malformed("bad_event"), "cut_short": malformed("cut_short"), "dropped": dropped()}


@pytest.mark.parametrize("failing", FAILING.values(), ids=FAILING.keys())
def test_a_200_reply_that_fails_names_the_request_id_of_its_last_attempt(failing: object) -> None:
    with MessagesAPI(then=failing) as api:  # type: ignore[arg-type]
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test", base_url=api.url)
        result = Agent("traced", model, retry=TWICE).run("Say hello.")
    assert result.reason is StopReason.ERROR, result.note
    assert len(api.requests) == 2
    assert "(request-id req_test_0002)" in (result.note or ""), result.note


def test_the_request_id_quoted_is_cut_and_shown_as_text() -> None:
    # The header comes from the server: a long one is cut, an escape sequence is not sent to a terminal.
    request_id = adapter._request_id
    said = request_id({"request-id": "req_\x1b[2J" + "x" * 300})
    assert "\x1b" not in said and len(said) < 160
    assert request_id({}) == request_id(None) == request_id({"request-id": "  "}) == ""
