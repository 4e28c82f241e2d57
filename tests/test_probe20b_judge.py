"""A judge model's verdict in a shape the verdict tool's schema does not allow (the API does not hold a
non-strict tool to it): its reasons as one string, or as no list at all, are still its reasons."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from messages_api import MessagesAPI, message, tool_use

from agent import (
    Agent,
    Budget,
    ConfigError,
    Price,
    PriceTable,
    RetryPolicy,
    RunContext,
    StopReason,
    all_of,
    predicate,
)
from agent.context import CallRecord
from agent.models.anthropic import AnthropicModel
from agent.models.scripted import ScriptedModel, call, finish
from agent.verify import VERDICT_TOOL, evaluator

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=False)


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI() as server:
        yield server


def judged(api: MessagesAPI, reasons: Any) -> Any:
    """A run whose first `done` the judge rejects, giving `reasons`, and whose second it accepts."""
    api.enqueue(
        message(tool_use(VERDICT_TOOL, {"passed": False, "reasons": reasons})),
        message(tool_use(VERDICT_TOOL, {"passed": True, "reasons": []})),
    )
    judge_model = AnthropicModel("claude-haiku-5-5", api_key="sk-ant-test", base_url=api.url)
    judge = evaluator(judge_model, "Cites a source", retry=FAST)
    model = ScriptedModel([[finish("done", "the margin is 12%")], [finish("done", "12%, per the 10-K")]])
    agent = Agent("researcher", model, verifiers=[judge], budget=Budget(max_turns=5))
    return agent.run("Find the margin.")


def test_one_reason_given_as_a_string_goes_back_whole(api: MessagesAPI) -> None:
    result = judged(api, "No source is cited for 12%")
    assert (result.reason, result.turns) == (StopReason.SUCCESS, 2)
    assert result.verifier_failures == ("No source is cited for 12%",)  # not one failure per letter


@pytest.mark.parametrize("reasons", [5, {"source": "missing"}, None])
def test_reasons_that_are_no_list_are_a_rejection_not_the_runs_error(api: MessagesAPI, reasons: Any) -> None:
    result = judged(api, reasons)
    assert (result.reason, result.turns) == (StopReason.SUCCESS, 2), result.note
    assert len(result.verifier_failures) == 1


# -- a judge made wrong, or hidden in all_of ---------------------------------------------------------


def test_a_judge_given_a_model_name_instead_of_a_model_is_refused_when_made() -> None:
    with pytest.raises(
        ConfigError, match=r"EvaluatorVerifier needs a model to judge with, .* not 'claude-haiku-4-5'"
    ):
        evaluator("claude-haiku-4-5", "Cites a source")  # type: ignore[arg-type]


def unpriced_judge() -> ScriptedModel:
    return ScriptedModel([[call(VERDICT_TOOL, passed=True, reasons=[])]], name="in-house-judge")


def test_a_judge_inside_all_of_needs_a_price_under_a_cost_budget_as_one_outside_does() -> None:
    checks = all_of(evaluator(unpriced_judge(), "Cites a source"), predicate(lambda ctx: True, "never"))
    model = ScriptedModel([[finish("done", "12%")]], name="claude-haiku-4-5")
    with pytest.raises(ConfigError, match="cost budget but no price for model 'in-house-judge'"):
        Agent("researcher", model, verifiers=[checks], budget=Budget(max_cost_usd=1.0))


def test_a_priced_judge_inside_all_of_is_charged_to_the_run() -> None:
    checks = all_of(evaluator(unpriced_judge(), "Cites a source"), predicate(lambda ctx: True, "never"))
    model = ScriptedModel([[finish("done", "12%")]], name="claude-haiku-4-5")
    prices = PriceTable({"in-house-judge": Price(1.0, 5.0)})
    agent = Agent("researcher", model, verifiers=[checks], budget=Budget(max_cost_usd=1.0), prices=prices)
    result = agent.run("Find the margin.")
    assert result.reason is StopReason.SUCCESS
    assert result.usage.cost_usd is not None and result.usage.cost_usd > 0


def test_a_judge_shown_no_calls_is_shown_none() -> None:
    judge = evaluator(unpriced_judge(), "Cites a source", recent_calls=0)
    ctx = RunContext("r", "researcher", "Find the margin.", "research", note="12%")
    ctx.calls.append(CallRecord("read_page", {"url": "http://secret.internal/"}, "salary table"))
    brief = judge.brief(ctx)
    assert (
        "<tool_calls>\n(none)\n</tool_calls>" in brief and "salary table" not in brief
    )  # [-0:] was every call


@pytest.mark.parametrize("options", [{"recent_calls": -1}, {"max_tokens": 0}, {"result_chars": 1.5}])
def test_judge_options_out_of_range_are_refused_when_made(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="EvaluatorVerifier"):
        evaluator(unpriced_judge(), "Cites a source", **options)
