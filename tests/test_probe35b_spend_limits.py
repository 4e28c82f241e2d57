"""A spend limit reached is no rate limit: the API answers it with a 429 `rate_limit_error` whose
`error.details.error_code` names it (SDK 2.16: `EnforcedSpendLimitReachedError`,
`ContractSpendLimitReachedError`), and no retry within a run lifts it. It was retried as a rate
limit, the run ended `error`/`rate_limit` after every attempt, and the note said nothing of the
limit nor how to lift it."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, Response, events_of, message, streamed, text, tool_use
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import Agent, Budget, RetryPolicy, StopReason
from agent.models.anthropic import AnthropicModel
from telemetry import TracingHooks
from telemetry import names as n

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
SPEND_LIMITS = ("enforced_spend_limit_reached", "contract_spend_limit_reached")


def coded(code: str, status: int = 429, kind: str = "rate_limit_error") -> dict[str, Any]:
    """An error body as the API sends it with a cause: `error.details.error_code`."""
    return {"type": "error", "error": {"type": kind, "message": "limit hit", "details": {"error_code": code}}}


def run(*responses: Response, hooks: Any = None) -> tuple[Any, MessagesAPI]:
    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
        agent = Agent("spend", model, budget=Budget(max_turns=4, max_seconds=60), retry=FAST, hooks=hooks)
        return agent.run("Do the task."), api


@pytest.mark.parametrize("code", SPEND_LIMITS)
def test_a_spend_limit_reached_ends_the_run_at_once_as_billing_saying_how_to_lift_it(code: str) -> None:
    result, api = run(Response(429, coded(code)), message(DONE))
    assert result.reason is StopReason.ERROR and result.error_type == "billing", result.note
    assert len(api.requests) == 1  # not retried: a retry cannot lift it
    assert code in result.note and "limit hit" in result.note
    assert "spend limit" in result.note and "Claude Console" in result.note


@pytest.mark.parametrize("code", SPEND_LIMITS)
def test_a_spend_limit_told_inside_the_stream_is_not_retried_either(code: str) -> None:
    began = events_of(message(text("partial")))[:2]
    result, api = run(streamed(*began, ("error", coded(code))), message(DONE))
    assert result.reason is StopReason.ERROR and result.error_type == "billing", result.note
    assert len(api.requests) == 1
    assert "inside the stream" in result.note and code in result.note


def test_a_ramp_limit_is_still_a_rate_limit_waited_out_and_retried() -> None:
    # `ramp_limit_exceeded`: the SDK says to retry after the retry-after header.
    limited = Response(429, coded("ramp_limit_exceeded"), {"retry-after": "0"})
    result, api = run(limited, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2


def test_the_chat_span_names_the_spend_limit_as_billing() -> None:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    result, _ = run(Response(429, coded(SPEND_LIMITS[0])), hooks=TracingHooks(provider))
    provider.shutdown()
    assert result.reason is StopReason.ERROR
    chats = [s for s in exporter.get_finished_spans() if s.name == f"chat {MODEL}"]
    assert [(s.attributes or {}).get(n.ERROR_TYPE) for s in chats] == ["billing"]


@pytest.mark.parametrize("kind", [[1], {"a": 1}, 5, True])
def test_an_error_whose_type_is_no_string_is_read_by_its_status_not_a_type_error(kind: Any) -> None:
    body = {"type": "error", "error": {"type": kind, "message": "odd"}}
    result, api = run(Response(429, body), message(DONE))  # a 429: worth a retry
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    began = events_of(message(text("partial")))[:2]
    result, api = run(streamed(*began, ("error", body)), message(DONE))  # in a stream: worth a retry
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    result, api = run(Response(400, body))
    assert result.reason is StopReason.ERROR and result.error_type == "bad_request", result.note
    assert "HTTP 400: odd" in result.note
