"""A reply whose final usage gives an output count that is no count (negative, past 64 bits) is
malformed and retried, as before; the call it ends was still paid, so its input is counted and its
output estimated from the text streamed, as for a call cut off before its count. Before, the whole
call went uncounted (a warning said so) and the run reported a known cost that left it out."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, message, text, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel


@pytest.mark.parametrize("count", [-5, 10**30, 2**63])
def test_a_call_with_an_output_count_that_is_no_count_is_still_charged(
    count: Any, caplog: pytest.LogCaptureFixture
) -> None:
    done = tool_use("finish", {"kind": "done", "note": "ok"})
    bad = message(text("x" * 400), input_tokens=1_000, usage={"output_tokens": count})
    with MessagesAPI(bad, message(done, input_tokens=1_000, output_tokens=5)) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-test", base_url=api.url)
        retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
        result = Agent("counted", model, budget=Budget(max_turns=3), retry=retry).run("Go.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    assert result.input_tokens == 2_000  # both calls' input, the malformed one's too
    assert 5 + 100 <= result.output_tokens <= 5 + 200  # its output estimated from 400 characters
    assert "was not counted" not in caplog.text
