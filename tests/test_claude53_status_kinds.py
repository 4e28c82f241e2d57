"""A 504 is a timeout, as the API names it, whether it comes as a status or inside a stream (claude53).

Anthropic's errors page gives 504 as `timeout_error`. The adapter labelled the same error
`timeout` when it came as an `error` event inside a stream, but `server_error` when it came as the
status: the `error.type` of chat spans and the model error metric split one failure in two, and a
panel of timeouts missed most of them. It is retried either way. Through the real `anthropic` SDK
against a local Messages API server.
"""

from __future__ import annotations

from messages_api import MessagesAPI, error, stream_error

from agent import Agent, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel

TWICE = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)


def test_a_timeout_error_is_retried_and_labelled_timeout_as_a_status_and_inside_a_stream() -> None:
    kinds = {}
    for name, failing in {
        "status": error(504, "Request timed out", type="timeout_error"),
        "stream event": stream_error("timeout_error", "Request timed out"),
    }.items():
        with MessagesAPI(then=failing) as api:
            model = AnthropicModel("claude-haiku-4-5", api_key="sk-ant-test", base_url=api.url)
            result = Agent("timeouts", model, retry=TWICE).run("Say hello.")
        assert result.reason is StopReason.ERROR, result.note
        assert len(api.requests) == 2, name  # retried
        kinds[name] = result.error_type
    assert kinds == {"status": "timeout", "stream event": "timeout"}
