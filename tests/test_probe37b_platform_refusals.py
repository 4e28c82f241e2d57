"""A refusal before any output costs $0 on the Claude API (its release notes: "On the Claude API, you
are no longer billed for a request when it returns stop_reason: "refusal" without Claude having
generated any output"). Vertex AI, Amazon Bedrock and Microsoft Foundry bill Claude calls by rules
of their own and do not say they follow it: through their SDK clients such a refusal was priced $0
too. It is priced as any call there (its cost may be high, never low); on the Claude API the rule
holds as before."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anthropic
import pytest
from messages_api import MessagesAPI, message

from agent import Agent, Budget, RunResult, StopReason
from agent.models.anthropic import AnthropicModel

DETAILS = {"type": "refusal", "category": "cyber", "explanation": "declined"}
REFUSED = message(stop_reason="refusal", stop_details=DETAILS, input_tokens=1_000, output_tokens=0)
SONNET = (1_000 * 3) / 1e6  # Claude Sonnet 4.5: $3 input per million tokens
HAIKU = (1_000 * 1) / 1e6  # Claude Haiku 4.5: $1


def vertex(url: str) -> tuple[str, Any]:
    # In region `global`, priced at the Claude API's list price (the cost is known).
    client = anthropic.AsyncAnthropicVertex(
        region="global", project_id="acme", access_token="t", base_url=url
    )
    return "claude-sonnet-4-5@20250929", client


def foundry(url: str) -> tuple[str, Any]:
    return "claude-haiku-4-5", anthropic.AsyncAnthropicFoundry(api_key="k", base_url=url)


def claude_api(url: str) -> tuple[str, Any]:
    return "claude-haiku-4-5", anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=url)


def refused_on(platform: Callable[[str], tuple[str, Any]]) -> RunResult:
    async def run(url: str) -> RunResult:
        name, client = platform(url)
        async with client:
            model = AnthropicModel(name, client=client)
            return await Agent("p", model, budget=Budget(max_turns=2, max_seconds=30)).arun("go")

    with MessagesAPI(REFUSED, validate=False) as api:
        result = asyncio.run(run(api.url))
    assert result.reason is StopReason.GAVE_UP and result.cause == "refusal", result.note
    assert result.input_tokens == 1_000
    return result


@pytest.mark.parametrize(
    ("platform", "price"), [(vertex, SONNET), (foundry, HAIKU)], ids=["vertex", "foundry"]
)
def test_a_refusal_before_any_output_on_a_platform_billing_by_its_own_rules_is_priced_as_any_call(
    platform: Callable[[str], tuple[str, Any]], price: float
) -> None:
    assert refused_on(platform).cost_usd == pytest.approx(price)


def test_on_the_claude_api_it_still_costs_nothing() -> None:
    assert refused_on(claude_api).cost_usd == 0.0
