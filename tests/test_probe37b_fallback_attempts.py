"""What a reply a server-side fallback served counts and costs. Its usage's `iterations` list every
attempt: the declining model's (`message`) and the answering model's (`fallback_message`); its
top-level counts may give the answering attempt's alone. The run counts every attempt's tokens, and
bills each attempt as Anthropic bills a refusal: one that declined before any output (no output
tokens) is not billed unless its category, the `trigger` of its `fallback` block, is one Anthropic
bills (bio, frontier_llm, reasoning_extraction); one that wrote something is billed."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, fallback_block, iteration, message, text, tool_use

from agent import Agent, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
REQUESTED, SERVING = "claude-opus-4-6", "claude-haiku-4-5"  # $5/$25 and $1/$5 per million tokens
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
ANSWERED = (2_000 * 1 + 100 * 5) / 1e6


def run(declined_output: int, *content: dict[str, Any], declined_model: str = REQUESTED) -> Any:
    """A run whose one reply `REQUESTED` declined after 1,000 input tokens and `declined_output`
    output, and `SERVING` answered with 2,000 and 100: the top-level counts are the answer's."""
    parts = [
        iteration("message", 1_000, declined_output, model=declined_model),
        iteration("fallback_message", 2_000, 100, model=SERVING),
    ]
    reply = message(
        *content, DONE, input_tokens=2_000, output_tokens=100, model=SERVING, usage={"iterations": parts}
    )
    with MessagesAPI(reply) as api:
        asked = {"fallbacks": [{"model": SERVING}]}  # a fallback happens only when the request asks for it
        model = AnthropicModel(REQUESTED, api_key="sk-ant-test", base_url=api.url, extra_body=asked)
        result = Agent("fallback", model, retry=FAST).run("Do it.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert (result.input_tokens, result.output_tokens) == (3_000, 100 + declined_output)  # every attempt
    return result


@pytest.mark.parametrize("category", ["cyber", "general_harms", None])
def test_an_attempt_declined_before_any_output_in_an_unbilled_category_costs_nothing(
    category: str | None,
) -> None:
    assert run(0, fallback_block(REQUESTED, SERVING, category)).cost_usd == pytest.approx(ANSWERED)


@pytest.mark.parametrize("category", ["bio", "frontier_llm", "reasoning_extraction"])
def test_an_attempt_declined_before_any_output_in_a_billed_category_is_charged(category: str) -> None:
    assert run(0, fallback_block(REQUESTED, SERVING, category)).cost_usd == pytest.approx(
        ANSWERED + 1_000 * 5 / 1e6
    )


def test_an_attempt_declined_after_some_output_is_charged() -> None:
    cost = run(40, text("Here is"), fallback_block(REQUESTED, SERVING, "cyber"), text("Instead:")).cost_usd
    assert cost == pytest.approx(ANSWERED + (1_000 * 5 + 40 * 25) / 1e6)


def test_the_declining_attempt_is_found_by_its_dated_id_among_two_hops() -> None:
    # Two hops: the requested model (named by the alias the request gave; the iteration gives the
    # dated id) declined in a category not billed; a third model, with no iteration here, in one
    # billed. Which hop is whose is read from the model: not knowing would bill it.
    hops = (fallback_block(REQUESTED, SERVING, "cyber"), fallback_block("claude-sonnet-4-5", SERVING, "bio"))
    assert run(0, *hops, declined_model=f"{REQUESTED}-20260205").cost_usd == pytest.approx(ANSWERED)


def test_a_model_whose_id_begins_with_another_is_not_taken_for_it() -> None:
    # "claude-opus-4" (no such hop here) is not "claude-opus-4-6": the requested model's own hop, in a
    # category not billed, is the one read; a hop of claude-opus-4 in a billed one is not.
    hops = (fallback_block("claude-opus-4", SERVING, "bio"), fallback_block(REQUESTED, SERVING, "cyber"))
    assert run(0, *hops).cost_usd == pytest.approx(ANSWERED)
