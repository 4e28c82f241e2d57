"""A refusal that arrives before any output (`stop_reason: "refusal"`, empty `content`) is not billed
unless its `stop_details.category` is one Anthropic bills ("bio", "frontier_llm",
"reasoning_extraction"; the refusals-and-fallback guide, "How refusals are billed"): its usage still
gives token counts, which the run counts, but its cost is $0, known. A refusal after some output bills
the input and the output streamed, as any reply."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, message, text

from agent import Agent, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
MODEL = "claude-haiku-4-5"  # $1 input, $5 output per million tokens
CHARGED = (1_000 * 1 + 20 * 5) / 1e6


def refused(*content: dict[str, Any], category: str | None) -> Any:
    details = {"type": "refusal", "category": category, "explanation": "declined"}
    with MessagesAPI(
        message(*content, stop_reason="refusal", stop_details=details, input_tokens=1_000, output_tokens=20)
    ) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
        result = Agent("refusals", model, retry=FAST).run("Do it.")
    assert result.reason is StopReason.GAVE_UP and result.cause == "refusal", result.note
    assert (result.input_tokens, result.output_tokens) == (1_000, 20)  # counted either way
    return result


@pytest.mark.parametrize("category", ["cyber", "general_harms", None])
def test_a_refusal_before_any_output_in_an_unbilled_category_costs_nothing(category: str | None) -> None:
    assert refused(category=category).cost_usd == 0.0


@pytest.mark.parametrize("category", ["bio", "frontier_llm", "reasoning_extraction"])
def test_a_refusal_before_any_output_in_a_billed_category_is_charged(category: str) -> None:
    assert refused(category=category).cost_usd == pytest.approx(CHARGED)


def test_a_refusal_after_some_output_is_charged() -> None:
    assert refused(text("Here is how"), category="cyber").cost_usd == pytest.approx(CHARGED)
