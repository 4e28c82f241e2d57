"""A judge whose model runs server tools (a web search to check the facts) may have its turn paused
(`stop_reason: "pause_turn"`): the paused reply is sent back to go on, as the loop does with the
agent's own model, instead of being read as a judge that gave no verdict (the agent was told to call
finish again, and every judgement began again from nothing). Through the real `anthropic` SDK
against the local Messages API server."""

from __future__ import annotations

from messages_api import MessagesAPI, message, text, tool_use

from agent import Agent, Budget, StopReason, tool
from agent.models.anthropic import AnthropicModel, web_search
from agent.verify import evaluator

MODEL = "claude-haiku-4-5"  # $1 input, $5 output per million tokens
DONE = tool_use("finish", {"kind": "done", "note": "the figures are right"})
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "figures"}}
FOUND = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []}


@tool
def read(page: int) -> str:
    """Read one page."""
    return f"page {page}"


def test_a_judges_paused_turn_is_sent_back_and_its_verdict_counts() -> None:
    paused = message(text("Checking the figures."), SEARCH, FOUND, stop_reason="pause_turn", output_tokens=30)
    verdict = message(tool_use("verdict", {"passed": True, "reasons": []}), output_tokens=20)
    with MessagesAPI(message(DONE, output_tokens=7)) as api, MessagesAPI(paused, verdict) as judge:
        searching = [web_search()]
        judge_model = AnthropicModel(MODEL, api_key="sk-test", base_url=judge.url, server_tools=searching)
        agent = Agent(
            "judged",
            AnthropicModel(MODEL, api_key="sk-test", base_url=api.url),
            tools=[read],
            budget=Budget(max_turns=5, max_seconds=60),
            verifiers=[evaluator(judge_model, "the figures are right")],
        )
        result = agent.run("Check the figures.")
        assert result.reason is StopReason.SUCCESS, result.note
        assert (len(api.requests), len(judge.requests)) == (1, 2)
        sent_back = judge.bodies[1]["messages"]
        assert sent_back[-1]["role"] == "assistant"  # the paused reply, sent back to go on
        kinds = [b["type"] for b in sent_back[-1]["content"]]
        assert kinds == ["text", "server_tool_use", "web_search_tool_result"]
        assert result.output_tokens == 7 + 30 + 20  # both judge calls count in the run
