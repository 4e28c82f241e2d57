"""A service tier the price table has no rule for (the SDK knows "standard", "priority" and "batch";
a later API may say another) costs unknown, never the standard price as if it were that tier."""

from __future__ import annotations

import logging

import pytest
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})


def test_a_call_an_unknown_service_tier_served_costs_unknown(caplog: pytest.LogCaptureFixture) -> None:
    reply = message(DONE, input_tokens=1_000, output_tokens=100, usage={"service_tier": "flex"})
    with MessagesAPI(reply) as api, caplog.at_level(logging.WARNING, logger="endstate"):
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test", base_url=api.url)
        result = Agent("tiers", model, retry=FAST).run("Do it.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd is None
    assert "'flex' service tier" in caplog.text
