"""A refusal says why: the API's `stop_details` (its policy category and explanation) reach the run's
note and its journal, through the real `anthropic` SDK against the local Messages API server."""

from __future__ import annotations

from messages_api import MessagesAPI, message, text, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason, tool
from agent.models.anthropic import AnthropicModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DETAILS = {
    "type": "refusal",
    "category": "cyber",
    "explanation": "The request asks for a working exploit against a system the user does not own.",
}


@tool
def search(query: str) -> str:
    """Search the web."""
    return "results"


def run_refused(details: dict[str, object] | None) -> tuple[object, MessagesAPI]:
    refused = message(text("I can't help with that."), stop_reason="refusal", stop_details=details)
    with MessagesAPI(message(tool_use("search", {"query": "x"})), refused) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-test", base_url=api.url)
        agent = Agent("red", model, tools=[search], budget=Budget(max_turns=5, max_seconds=30), retry=FAST)
        return agent.run("Find it."), api


def test_a_refusal_note_names_the_apis_category_and_explanation() -> None:
    result, api = run_refused(DETAILS)
    assert result.reason is StopReason.GAVE_UP and result.cause == "refusal"  # type: ignore[attr-defined]
    assert len(api.requests) == 2
    note = result.note  # type: ignore[attr-defined]
    assert "cyber" in note and "working exploit against a system" in note, note


def test_a_refusal_without_details_keeps_the_plain_note() -> None:
    result, _ = run_refused(None)
    assert result.reason is StopReason.GAVE_UP  # type: ignore[attr-defined]
    assert result.note == "The model API refused to go on with this task (stop_reason: refusal)."  # type: ignore[attr-defined]
