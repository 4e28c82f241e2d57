"""A long run against the Messages API (the real `anthropic` SDK, a local server with a 200k window):
the default history policy keeps it inside the window; with the policy off it stops at `limit`/`context`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Budget, HistoryPolicy, LimitKind, StopReason, tool
from agent.models.anthropic import AnthropicModel

MODEL = "claude-haiku-4-5"  # a 200k context window in the model table
WINDOW = 200_000
PAGE = "lorem ipsum " * 1_700  # about 20,400 characters: some 5,100 tokens


@tool
def read(page: int) -> str:
    """Read one page of a long document."""
    return f"page {page}: {PAGE}"


def script(pages: int = 60) -> list[object]:
    turns = [
        message(tool_use("read", {"page": i}), stop_reason="tool_use", input_tokens=None)
        for i in range(pages)
    ]
    finish = tool_use("finish", {"kind": "done", "note": "read it all"})
    return [*turns, message(finish, stop_reason="tool_use", input_tokens=None)]


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI(*script(), context_window=WINDOW) as server:  # type: ignore[arg-type]
        yield server


def reader(api: MessagesAPI, history: HistoryPolicy) -> Agent:
    model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
    return Agent(
        "reader", model, tools=[read], history=history, budget=Budget(max_turns=80, max_seconds=None)
    )


def test_sixty_turns_of_big_results_succeed_inside_a_200k_window_under_the_default_policy(
    api: MessagesAPI,
) -> None:
    result = reader(api, HistoryPolicy()).run("Read the whole document, one page a turn.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.turns == 61
    assert len(api.requests) == 61  # the policy acted before the API refused: no prompt was too long


def test_with_the_policy_off_the_same_run_stops_at_the_context_limit_not_an_error(api: MessagesAPI) -> None:
    result = reader(api, HistoryPolicy.off()).run("Read the whole document, one page a turn.")
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.CONTEXT)
    assert "prompt is too long" in result.note
    assert result.turns < 60
