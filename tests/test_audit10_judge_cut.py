"""An evaluator's model call that the run's time budget cuts off mid-stream: its tokens count in the
run, as a cut call of the agent's own model does, and the call stops with the run instead of
streaming on (and billing) in a thread the run left behind. Through the real `anthropic` SDK
against the local Messages API server."""

from __future__ import annotations

from messages_api import MessagesAPI, message, text, tool_use

from agent import Agent, Budget, LimitKind, StopReason, tool
from agent.models.anthropic import AnthropicModel
from agent.verify import evaluator

MODEL = "claude-haiku-4-5"  # $1 input, $5 output per million tokens
DONE = tool_use("finish", {"kind": "done", "note": "read it all"})


@tool
def read(page: int) -> str:
    """Read one page."""
    return f"page {page}"


def test_a_judge_call_the_time_budget_cuts_is_charged_and_stopped() -> None:
    slow_verdict = message(text("Weighing the evidence. " * 400), input_tokens=5_000, stream_delay=0.5)
    done = message(DONE, input_tokens=100, output_tokens=7)
    with MessagesAPI(done) as api, MessagesAPI(slow_verdict) as judge:
        agent = Agent(
            "judged",
            AnthropicModel(MODEL, api_key="sk-test", base_url=api.url),
            tools=[read],
            budget=Budget(max_turns=5, max_seconds=6),
            verifiers=[evaluator(AnthropicModel(MODEL, api_key="sk-test", base_url=judge.url), "all read")],
        )
        result = agent.run("Read the document.")
        assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.SECONDS), result.note
        assert len(judge.requests) == 1
        assert result.input_tokens == 100 + 5_000  # the judge's cut call read its prompt: it is charged
        assert result.output_tokens > 7  # and what it streamed before the cut
        assert result.cost_usd is not None and result.cost_usd > (5_100 * 1.0 + 7 * 5.0) / 1e6
        assert judge.settled_connections() == 0  # the judge's stream stopped with the run


def test_a_judge_call_past_the_judges_own_timeout_is_charged_and_stopped() -> None:
    # No time budget: the judge's own timeout ends the judging; the agent is told, and goes on.
    slow_verdict = message(text("Weighing the evidence. " * 400), input_tokens=5_000, stream_delay=0.5)
    give_up = tool_use("finish", {"kind": "give_up", "note": "the judge is too slow"})
    replies = (
        message(DONE, input_tokens=100, output_tokens=7),
        message(give_up, input_tokens=100, output_tokens=7),
    )
    with MessagesAPI(*replies) as api, MessagesAPI(slow_verdict) as judge:
        judging = evaluator(
            AnthropicModel(MODEL, api_key="sk-test", base_url=judge.url), "all read", timeout=3
        )
        agent = Agent(
            "judged",
            AnthropicModel(MODEL, api_key="sk-test", base_url=api.url),
            tools=[read],
            budget=Budget(max_turns=5, max_seconds=None),
            verifiers=[judging],
        )
        result = agent.run("Read the document.")
        assert result.reason is StopReason.GAVE_UP, result.note
        assert "did not finish within 3 s" in api.bodies[1]["messages"][-1]["content"][0]["content"]
        assert result.input_tokens == 100 + 5_000 + 100  # the judge's cut call is charged
        assert result.output_tokens > 7 + 7
        assert judge.settled_connections() == 0  # and its stream stopped
