"""A model the API has retired answers 404. The model table knows it is retired, and when, and what
to move to, but the run's note only said "check the model id (a retired model is not found)": it now
says that this one is, from the table. A model the table does not call retired, or a partner id (a
model retired on the Claude API may still be served on Bedrock or Vertex AI), keeps the plain note."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, error

from agent import Agent, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)


def run(model_id: str) -> Any:
    with MessagesAPI(error(404, f"model: {model_id}", type="not_found_error")) as api:
        model = AnthropicModel(model_id, api_key="sk-ant-test", base_url=api.url)
        return Agent("retired", model, retry=FAST).run("Do the task.")


@pytest.mark.parametrize(
    ("model_id", "says"),
    [
        ("claude-sonnet-4-5", ["retired on 2026-11-30", "migrate to claude-sonnet-5-5"]),  # its date has come
        ("claude-sonnet-4-5-20250929", ["retired on 2026-11-30"]),  # a dated id of the row
        ("claude-opus-4-1", ["is retired"]),  # a row kept so past runs are priced
    ],
)
def test_a_404_for_a_model_the_table_calls_retired_says_so(model_id: str, says: list[str]) -> None:
    result = run(model_id)
    assert result.reason is StopReason.ERROR and result.error_type == "not_found", result.note
    assert f"model: {model_id}" in result.note  # the API's own words stay
    for words in says:
        assert words in result.note


@pytest.mark.parametrize("model_id", ["claude-haiku-4-5", "claude-opus-4-1@20250805", "claude-next-7"])
def test_a_404_for_any_other_model_keeps_the_plain_note(model_id: str) -> None:
    result = run(model_id)
    assert result.reason is StopReason.ERROR and result.error_type == "not_found", result.note
    assert "retired" in result.note and "is retired" not in result.note  # "a retired model is not found"
