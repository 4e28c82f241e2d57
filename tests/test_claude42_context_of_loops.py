"""The history policy judges the context a reply ended with, not what a server-side tool loop summed.
The API's top-level usage of a reply that ran server tools (web search) sums the input of every step
of its loop; the context is the last step's (the SDK's `usage.iterations`: "calculate the context
window size from the last `message` entry"). Before, five searches of 30k tokens each on a 200k
window read as 75% in use: the policy cleared the run's older tool results (and with a summary model
would have compacted, paying for it) while the context was at 15%.

The real SDK against the local Messages API server."""

from __future__ import annotations

import json

from messages_api import MessagesAPI, Response, iteration, message, text, tool_use

from agent import Agent, Budget, StopReason, tool
from agent.models.anthropic import AnthropicModel, web_search

DONE = tool_use("finish", {"kind": "done", "note": "ok"})


@tool
def look(path: str) -> str:
    """Look at a path."""
    return f"what {path} holds " * 10


def searched(turn: int, step_input: int) -> Response:
    """A reply whose server-side loop searched the web five times, each step reading `step_input`."""
    steps = [iteration("message", step_input + i * 100, 500) for i in range(5)]
    usage = {"server_tool_use": {"web_search_requests": 5}, "iterations": steps}
    total = sum(s["input_tokens"] for s in steps)
    return message(
        text("found"),
        tool_use("look", {"path": f"p{turn}"}),
        input_tokens=total,
        output_tokens=2_500,
        usage=usage,
    )


def run(step_input: int) -> tuple[StopReason, str]:
    replies = [searched(turn, step_input) for turn in range(8)] + [message(DONE)]
    with MessagesAPI(*replies) as api:
        model = AnthropicModel(
            "claude-haiku-4-5", api_key="sk-test", base_url=api.url, server_tools=[web_search()]
        )
        result = Agent("searcher", model, tools=[look], budget=Budget(max_turns=12)).run("Search.")
    return result.reason, json.dumps(api.bodies[-1]["messages"])


def test_a_search_loop_that_summed_more_than_the_context_holds_clears_nothing() -> None:
    reason, sent = run(30_000)  # each step 15% of the window; summed, 75%
    assert reason is StopReason.SUCCESS
    assert "cleared to save context" not in sent and "compacted" not in sent
    assert all(f"what p{turn} holds" in sent for turn in range(8))


def test_a_search_loop_whose_last_step_filled_the_context_still_has_it_shrunk() -> None:
    reason, sent = run(170_000)  # the last step reads 85% of the window
    assert reason is StopReason.SUCCESS
    assert "cleared to save context" in sent or "compacted" in sent
