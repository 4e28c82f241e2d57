"""The evaluator verifier: a second model (Claude, through the real SDK and the local server) judges done."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from messages_api import MessagesAPI, error, message, text, tool_use

from agent import Agent, Budget, ConfigError, PriceTable, RetryPolicy, RunContext, TransientModelError
from agent.models.anthropic import AnthropicModel
from agent.models.scripted import ScriptedModel, call, finish
from agent.tools import tool
from agent.verify import VERDICT_TOOL, EvaluatorVerifier, evaluator, verdict

JUDGE = "claude-haiku-5-5"
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=False)
CRITERIA = ("The report names the failing test", "The fix is committed")


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI() as server:
        yield server


def judge(api: MessagesAPI, **options: Any) -> EvaluatorVerifier:
    model = AnthropicModel(JUDGE, api_key="sk-ant-test", base_url=api.url)
    return evaluator(model, *CRITERIA, retry=FAST, **options)


def says(passed: bool, *reasons: str, **usage: int) -> Any:
    return message(tool_use(VERDICT_TOOL, {"passed": passed, "reasons": list(reasons)}), **usage)


def ctx(note: str = "fixed test_login; committed abc123") -> RunContext:
    return RunContext("run-1", "fixer", "Fix the failing test.", "ci", note=note)


@tool
def run_tests() -> str:
    """Run the tests."""
    return "1 failed: test_login"


def test_the_judge_rejects_then_accepts_and_the_agent_hears_why(api: MessagesAPI) -> None:
    api.enqueue(says(False, "The fix is not committed: no commit in the tool calls"), says(True))
    agent_model = ScriptedModel(
        [
            [call("run_tests")],
            [finish("done", "test_login fails; fixed it")],
            [finish("done", "test_login fixed and committed as abc123")],
        ]
    )
    agent = Agent("fixer", agent_model, tools=[run_tests], verifiers=[judge(api)], budget=Budget(max_turns=5))
    result = agent.run("Fix the failing test.")

    assert (result.reason, result.verified, result.turns) == ("success", True, 3)
    assert result.verifier_failures == ("The fix is not committed: no commit in the tool calls",)
    rejected = agent_model.requests[2].messages[-1]["content"][0]
    assert rejected["is_error"] and "Criterion not met: The fix is not committed" in rejected["content"]
    first_brief = api.bodies[0]["messages"][0]["content"][0]["text"]
    assert "1. The report names the failing test" in first_brief and "2. The fix is committed" in first_brief
    assert "test_login fails; fixed it" in first_brief
    assert "run_tests({}) -> 1 failed: test_login" in first_brief
    assert [t["name"] for t in api.bodies[0]["tools"]] == [VERDICT_TOOL]


def test_each_judge_call_is_charged_to_the_run(api: MessagesAPI) -> None:
    api.enqueue(says(True, input_tokens=900, output_tokens=40, cache_read_input_tokens=100))
    context = ctx()
    assert judge(api)(context) == []
    (charge,) = context.charges
    assert charge.model == JUDGE
    assert (charge.reply.input_tokens, charge.reply.output_tokens, charge.reply.cache_read_input_tokens) == (
        1000,
        40,
        100,
    )
    cost = PriceTable().cost_of(charge.model, charge.reply)
    assert cost == pytest.approx((900 * 0.10 + 100 * 0.01 + 40 * 0.50) / 1e6)


def test_a_judge_failing_for_a_moment_is_retried_and_charged_once(api: MessagesAPI) -> None:
    api.enqueue(error(529, "Overloaded"), says(True))
    context = ctx()
    assert judge(api)(context) == []
    assert len(api.requests) == 2 and len(context.charges) == 1


def test_a_judge_that_keeps_failing_ends_the_run_as_error(api: MessagesAPI) -> None:
    api.then = error(529, "Overloaded")
    with pytest.raises(TransientModelError):
        judge(api)(ctx())
    agent = Agent(
        "fixer",
        ScriptedModel([[finish("done", "fixed")]]),
        verifiers=[judge(api)],
        budget=Budget(max_turns=3),
    )
    result = agent.run("Fix it.")
    assert (result.reason, result.error_type) == ("error", "verifier_error")


def test_a_judge_asked_to_wait_past_the_longest_retry_after_ends_the_run_at_once(api: MessagesAPI) -> None:
    """A retry-after of a day (a broken proxy) is not slept through, as the run's own model calls."""
    api.enqueue(error(529, "Overloaded", headers={"retry-after": "86400"}), says(True))
    agent = Agent(
        "fixer",
        ScriptedModel([[finish("done", "fixed")]]),
        verifiers=[evaluator(AnthropicModel(JUDGE, api_key="sk-ant-test", base_url=api.url), *CRITERIA)],
        budget=Budget(max_turns=3),  # no time budget: nothing else would cut the wait
    )
    result = agent.run("Fix it.")
    assert (result.reason, result.error_type) == ("error", "verifier_error")
    assert "retry-after" in result.note and "86400" in result.note
    assert len(api.requests) == 1


@pytest.mark.parametrize(
    ("blocks", "expected"),
    [
        ([tool_use(VERDICT_TOOL, {"passed": True, "reasons": []})], []),
        ([tool_use(VERDICT_TOOL, {"passed": False, "reasons": ["a", " "]})], ["a"]),
        ([tool_use(VERDICT_TOOL, {"passed": False, "reasons": []})], ["rejected the result without"]),
        ([text('Verdict: {"passed": false, "reasons": ["no commit"]}')], ["no commit"]),
        ([text("Looks fine to me!")], ["gave no verdict (it said: Looks fine to me!)"]),
        ([tool_use(VERDICT_TOOL, {"passed": "yes"})], ["gave no verdict"]),
    ],
)
def test_verdicts_are_read_from_the_tool_call_or_json_text(
    blocks: list[dict[str, Any]], expected: list[str]
) -> None:
    from agent.models.base import ModelReply

    reasons = verdict(ModelReply(blocks))
    assert len(reasons) == len(expected)
    assert all(e in r for e, r in zip(expected, reasons, strict=True))


def test_an_evaluator_needs_criteria() -> None:
    with pytest.raises(ConfigError, match="needs criteria"):
        evaluator(ScriptedModel())
    with pytest.raises(ConfigError, match="needs criteria"):
        EvaluatorVerifier(ScriptedModel(), "one string")  # type: ignore[arg-type]


def test_a_judge_cut_off_before_its_verdict_ends_the_run_error_saying_the_fix(api: MessagesAPI) -> None:
    """A judge that thinks spent its output on thinking and stopped at max_tokens with no verdict: the
    agent cannot fix that (each `finish` is cut off the same way and billed), so the run ends `error`
    naming the setting to raise, instead of telling the agent "no verdict, finish again" until a limit."""
    cut = {"type": "thinking", "thinking": "Let me weigh each criterion in turn", "signature": "sig"}
    api.enqueue(message(cut, stop_reason="max_tokens", output_tokens=64), says(True))
    agent_model = ScriptedModel([[finish("done", "fixed")], [finish("done", "fixed")]])
    agent = Agent("fixer", agent_model, verifiers=[judge(api, max_tokens=64)], budget=Budget(max_turns=5))
    result = agent.run("Fix the failing test.")

    assert result.reason == "error"
    assert "cut off at max_tokens=64 before its verdict" in result.note
    assert "raise EvaluatorVerifier's max_tokens" in result.note
    assert len(api.bodies) == 1 and api.bodies[0]["max_tokens"] == 64


def test_a_judge_has_room_to_think_by_default(api: MessagesAPI) -> None:
    api.enqueue(says(True))
    assert judge(api)(ctx()) == []
    assert api.bodies[0]["max_tokens"] == 4096
