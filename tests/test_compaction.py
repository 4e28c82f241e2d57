"""Compaction summarized by the model, through the real `anthropic` SDK against the local Messages API:
the summary is asked of the model, sent in place of the older turns, charged to the run's usage
and budget, seen as a `chat` span, and replaced by the code-written account when the call fails."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from messages_api import MessagesAPI, Response, error, message, text, tool_use

from agent import Agent, Budget, HistoryPolicy, LimitKind, ModelSummary, PriceTable, StopReason, tool
from agent.history import SUMMARIZE
from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelReply

MODEL = "claude-haiku-4-5"  # a 200k context window in the model table
WINDOW = 200_000
TURNS = 60
NOTES = "The figures so far agree with the ledger. " * 420  # about 17,600 characters: 4,400 tokens
SUMMARY = "Pages 0 to 30 read; the ledger totals agree (SUMMARY-7F3)."


@tool
def read(page: int) -> str:
    """Read one page of the ledger."""
    return f"page {page}: totals agree"


def script(turns: int = TURNS) -> list[Response]:
    """A run whose own notes, not its tool results, fill the window: clearing results cannot help."""
    reading = [message(text(NOTES), tool_use("read", {"page": i}), input_tokens=None) for i in range(turns)]
    finish = tool_use("finish", {"kind": "done", "note": "all pages agree"})
    return [*reading, message(finish, input_tokens=None)]


def asks_for_summary(body: Any) -> bool:
    last = body.get("messages", [{}])[-1] if isinstance(body, dict) else {}
    content = last.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    return last.get("role") == "user" and any(b.get("text") == SUMMARIZE for b in blocks)


def summary_reply(body: Any) -> Response | None:
    """The model's answer to a summary request (any other request goes to the queue)."""
    if not asks_for_summary(body):
        return None
    return message(text(f"<summary>{SUMMARY}</summary>"), input_tokens=None, output_tokens=80)


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI(*script(), context_window=WINDOW, intercept=summary_reply) as server:
        yield server


def ledger_agent(api: MessagesAPI, budget: Budget | None = None, **options: Any) -> Agent:
    model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
    return Agent(
        "ledger", model, tools=[read], history=HistoryPolicy(summarize=ModelSummary()),
        budget=budget or Budget(max_turns=80, max_seconds=None), **options,
    )  # fmt: skip


def summary_requests(api: MessagesAPI) -> list[int]:
    return [i for i, body in enumerate(api.bodies) if asks_for_summary(body)]


def cost_of(usage: dict[str, Any]) -> float:
    """What the model table charges for one reply's reported usage."""
    read, write = usage.get("cache_read_input_tokens", 0), usage.get("cache_creation_input_tokens", 0)
    reply = ModelReply(
        [], usage["input_tokens"] + read + write, usage["output_tokens"],
        cache_read_input_tokens=read, cache_creation_input_tokens=write,
    )  # fmt: skip
    cost = PriceTable().cost_of(MODEL, reply)
    assert cost is not None
    return cost


def test_a_long_run_compacts_with_a_summary_the_model_wrote(api: MessagesAPI) -> None:
    result = ledger_agent(api).run("Check every page of the ledger, one a turn.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.turns == TURNS + 1
    [asked] = summary_requests(api)
    assert len(api.requests) == TURNS + 2  # every turn once, and the summary: the API refused nothing
    request = api.bodies[asked]
    assert request["model"] == MODEL and request["tools"]  # the agent's model, its tools: a cached prefix
    assert api.usages[asked].get("cache_read_input_tokens", 0) > 0


def test_the_request_after_the_compaction_carries_the_summary_instead_of_the_older_turns(
    api: MessagesAPI,
) -> None:
    ledger_agent(api).run("Check every page of the ledger, one a turn.")
    [asked] = summary_requests(api)
    before, after = api.bodies[asked - 1]["messages"], api.bodies[asked + 1]["messages"]
    assert after[0]["content"] == "Check every page of the ledger, one a turn."
    assert SUMMARY in after[1]["content"] and "compacted" in after[1]["content"]
    assert len(after) < len(before) // 2
    assert all(SUMMARY in json.dumps(body["messages"]) for body in api.bodies[asked + 1 :])
    assert SUMMARIZE not in json.dumps(api.bodies[asked + 1 :])  # the request for it is not kept


def test_the_runs_cost_and_tokens_include_the_summary_call(api: MessagesAPI) -> None:
    result = ledger_agent(api).run("Check every page of the ledger, one a turn.")
    [asked] = summary_requests(api)
    costs = [cost_of(u) for u in api.usages]
    assert result.cost_usd == pytest.approx(sum(costs), abs=1e-6)
    assert result.cost_usd is not None and result.cost_usd > sum(costs) - costs[asked] + 1e-6
    reported = api.usages[asked]
    summary_tokens = sum(reported.get(k, 0) for k in ("input_tokens", "output_tokens"))
    summary_tokens += reported.get("cache_read_input_tokens", 0) + reported.get(
        "cache_creation_input_tokens", 0
    )
    total = sum(
        u["input_tokens"] + u["output_tokens"] + u.get("cache_read_input_tokens", 0)
        + u.get("cache_creation_input_tokens", 0)
        for u in api.usages
    )  # fmt: skip
    assert result.input_tokens + result.output_tokens == total
    assert result.usage.cache_read_tokens == sum(u.get("cache_read_input_tokens", 0) for u in api.usages)
    assert summary_tokens > 0


def test_a_tight_token_budget_stops_the_run_at_the_summary_call(api: MessagesAPI) -> None:
    first = ledger_agent(api).run("Check every page of the ledger, one a turn.")
    assert first.reason is StopReason.SUCCESS
    [asked] = summary_requests(api)
    before = sum(_tokens(u) for u in api.usages[:asked])  # the run's tokens when it asked for the summary

    with MessagesAPI(*script(), context_window=WINDOW, intercept=summary_reply) as again:
        budget = Budget(max_turns=80, max_seconds=None, max_tokens=before + 1)
        result = ledger_agent(again, budget).run("Check every page of the ledger, one a turn.")
        assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.TOKENS)
        assert "summarized the older turns" in result.note
        assert summary_requests(again) == [asked] and len(again.requests) == asked + 1  # no call after it
        assert result.input_tokens + result.output_tokens == before + _tokens(again.usages[asked])


def _tokens(usage: dict[str, Any]) -> int:
    keys = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(int(usage.get(k, 0)) for k in keys)


def test_a_failed_summary_call_falls_back_to_the_code_written_account_with_a_note() -> None:
    def refuse(body: Any) -> Response | None:
        return error(500, "the summarizer is down") if asks_for_summary(body) else None

    with MessagesAPI(*script(), context_window=WINDOW, intercept=refuse) as api:
        result = ledger_agent(api).run("Check every page of the ledger, one a turn.")
        [asked] = summary_requests(api)
        after = api.bodies[asked + 1]["messages"][1]["content"]
    assert result.reason is StopReason.SUCCESS and result.turns == TURNS + 1
    assert "the model could not write this summary" in after and "the summarizer is down" in after
    assert "tool calls were made" in after and "read(page=" in after  # the account written by code


def test_the_summary_call_is_a_chat_span_inside_its_turn(api: MessagesAPI) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from telemetry import TracingHooks
    from telemetry import names as n

    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    result = ledger_agent(api, hooks=TracingHooks(provider)).run(
        "Check every page of the ledger, one a turn."
    )
    provider.shutdown()
    assert result.reason is StopReason.SUCCESS
    spans = exporter.get_finished_spans()
    chats = sorted((s for s in spans if s.name == f"chat {MODEL}"), key=lambda s: s.start_time or 0)
    assert len(chats) == len(api.requests) == TURNS + 2
    [asked] = summary_requests(api)
    summary = dict(chats[asked].attributes or {})
    assert summary[n.GEN_AI_USAGE_OUTPUT_TOKENS] == 80
    turns = {s.context.span_id: s for s in spans if s.name == "agent.turn"}
    parent = chats[asked].parent
    assert parent is not None and parent.span_id in turns  # inside the turn it shrank the history for
    assert chats[asked + 1].parent is not None and chats[asked + 1].parent.span_id == parent.span_id
