"""Web searches a reply ran are charged when its usage does not count them, through the real `anthropic`
SDK against the local Messages API server. A usage with no `server_tool_use` (a gateway that leaves it
out) had its searches counted as none: the run's cost, and its cost budget, left out $10 per 1,000
searches that ran and were billed. Now the searches whose results came back whole are counted."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, Response, message, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel, web_search

DONE = tool_use("finish", {"kind": "done", "note": "ok"})
TOKENS = 10 * 1.0 / 1e6 + 5 * 5.0 / 1e6  # Haiku 4.5: 10 input tokens at $1, 5 output at $5 a million
SEARCH = 10.0 / 1000  # $10 per 1,000 searches


def searched(index: int, failed: bool = False) -> list[dict[str, Any]]:
    """A web search the API ran and its result (an error's when `failed`)."""
    call_id = f"srvtoolu_{index}"
    call = {"type": "server_tool_use", "id": call_id, "name": "web_search", "input": {"query": "q"}}
    found: Any = [
        {"type": "web_search_result", "url": "https://example.com/a", "title": "A", "encrypted_content": "E"}
    ]
    if failed:
        found = {"type": "web_search_tool_result_error", "error_code": "unavailable"}
    return [call, {"type": "web_search_tool_result", "tool_use_id": call_id, "content": found}]


def run(response: Response) -> Any:
    with MessagesAPI(response) as api:
        model = AnthropicModel(
            "claude-haiku-4-5", api_key="sk-test", base_url=api.url, server_tools=[web_search()]
        )
        retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
        result = Agent("searcher", model, budget=Budget(max_turns=2), retry=retry).run("Find it.")
    assert result.reason is StopReason.SUCCESS, result.note
    return result


def test_searches_a_usage_does_not_count_are_charged_by_the_results_that_came_back() -> None:
    blocks = searched(1) + searched(2) + searched(3, failed=True)
    result = run(message(*blocks, DONE, input_tokens=10, output_tokens=5))
    assert result.cost_usd == pytest.approx(TOKENS + 2 * SEARCH)  # the failed one is not billed


def test_a_usage_that_counts_the_searches_is_taken_as_it_says() -> None:
    counts = {"server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 0}}
    result = run(message(*searched(1), *searched(2), DONE, input_tokens=10, output_tokens=5, usage=counts))
    assert result.cost_usd == pytest.approx(TOKENS + SEARCH)
