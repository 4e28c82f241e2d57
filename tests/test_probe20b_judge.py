"""A judge model's verdict in a shape the verdict tool's schema does not allow (the API does not hold a
non-strict tool to it): its reasons as one string, or as no list at all, are still its reasons."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel
from agent.models.scripted import ScriptedModel, finish
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
