"""A server that answers a streamed Messages API request with the whole message as JSON (a gateway or
proxy that does not stream) is named as such in the run's note, not as a stream cut short. Whole runs
through the real `anthropic` SDK against the local Messages API server."""

from __future__ import annotations

from messages_api import MessagesAPI, message, not_streamed, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

DONE = tool_use("finish", {"kind": "done", "note": "ok"})


def test_a_reply_sent_whole_as_json_to_a_streamed_request_is_named_in_the_note() -> None:
    with MessagesAPI(not_streamed(message(DONE)), not_streamed(message(DONE))) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test", base_url=api.url)
        retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
        result = Agent("gateway", model, budget=Budget(max_turns=2, max_seconds=60), retry=retry).run("Go.")
    assert result.reason is StopReason.ERROR
    assert result.error_type == "malformed_reply"
    assert "the body was application/json, not the API's event stream" in result.note
    assert "does not stream" in result.note
