"""A proxy's or a captive portal's page answers 200 too. Such a page, sent where the API's stream of
events was asked for, ended the run as `malformed_reply` saying only "the stream ended before
message_stop": nothing said the body was an HTML page, not the API's. The note now names the kind
of body and what to check."""

from __future__ import annotations

from messages_api import MessagesAPI, malformed

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel


def test_a_page_answering_200_is_named_as_a_page_not_the_apis_stream() -> None:
    with MessagesAPI(malformed("not_json"), malformed("not_json")) as api:
        model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test", base_url=api.url)
        retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
        result = Agent("portal", model, budget=Budget(max_turns=2, max_seconds=60), retry=retry).run("Go.")
    assert result.reason is StopReason.ERROR
    assert result.error_type == "malformed_reply"
    assert "the body was text/html, not the API's event stream" in result.note
    assert "check the base URL" in result.note
