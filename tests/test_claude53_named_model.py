"""A call's cost does not trust the model its reply names (claude53).

A call was priced by the model its reply names (`message.model`) whenever that model had a known
price: right for an alias the API resolves to a dated snapshot, but a gateway or a hostile server
naming a cheaper model made every call cheaper, and a cost ceiling (a `limit` stop) let the run go on
for several times the spend it was set to allow. Now a reply naming another model than the one asked
is priced at the dearer of the two prices (the asked model's when the other has none), a warning
names both once, and the chat span still says which model the reply named. Runs go through the real
`anthropic` SDK against a local Messages API server.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from messages_api import MessagesAPI, message, tool_use
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agent import Agent, Budget, CompositeHooks, LimitKind, PriceTable, RetryPolicy, StopReason, tool
from agent.models.anthropic import AnthropicModel
from agent.models.base import ModelReply
from agent.models.price import Price
from telemetry import MetricsHooks, TracingHooks
from telemetry import names as n

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
MTOK = 1e6


@tool
def step(n: int) -> str:
    """Take one step of the task."""
    return f"step {n} taken"


def steps(count: int, named: str) -> list[Any]:
    """`count` replies, each calling `step` with 10,000 input tokens and 1,000 output, naming `named`."""
    return [
        message(tool_use("step", {"n": i}), input_tokens=10_000, output_tokens=1_000, model=named)
        for i in range(count)
    ]


def run(
    asked: str, *replies: Any, budget: Budget | None = None, hooks: Any = None
) -> tuple[Any, MessagesAPI]:
    with MessagesAPI(*replies) as api:
        model = AnthropicModel(asked, api_key="sk-ant-test", base_url=api.url)
        agent = Agent("named", model, tools=[step], retry=FAST, budget=budget or Budget(), hooks=hooks)
        result = agent.run("Take the steps.")
    return result, api


def named_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if "answered by a reply naming another model" in r.getMessage()
    ]


def test_a_cost_ceiling_stops_a_run_whose_replies_name_a_cheaper_model_as_it_stops_one_that_does_not() -> (
    None
):
    # Claude Opus 5.5 ($4 / $20): a call of 10,000 in and 1,000 out costs $0.06; Claude Haiku 4.5
    # ($1 / $5) $0.015. A $0.10 ceiling ends the run after two calls; priced as the model named, it
    # allowed seven, over the ceiling by a third.
    # A model with no price counts at the asked model's price: an unknown cost is left out of a cost
    # ceiling, and a server naming a model with no price must not turn the ceiling off.
    budget = Budget(max_cost_usd=0.10, max_turns=50, max_seconds=None)
    for named in ("claude-opus-5-5", "claude-haiku-4-5", "gpt-9-turbo"):
        result, api = run("claude-opus-5-5", *steps(12, named), budget=budget)
        assert result.reason is StopReason.LIMIT, (named, result.note)
        assert result.limit is LimitKind.COST
        assert len(api.requests) == 2, named
        assert result.cost_usd == pytest.approx(2 * 0.06)


def test_the_chat_span_keeps_the_named_model_and_the_cost_metric_counts_the_dearer_price() -> None:
    exporter, provider, registry = InMemorySpanExporter(), TracerProvider(), CollectorRegistry()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks = CompositeHooks((TracingHooks(provider), MetricsHooks(registry)))
    reply = message(DONE, input_tokens=10_000, output_tokens=1_000, model="claude-haiku-4-5")
    result, _ = run("claude-opus-5-5", reply, hooks=hooks)
    provider.shutdown()
    assert result.reason is StopReason.SUCCESS, result.note
    (chat,) = [s for s in exporter.get_finished_spans() if s.name == "chat claude-opus-5-5"]
    attributes = chat.attributes or {}
    assert attributes[n.GEN_AI_REQUEST_MODEL] == "claude-opus-5-5"
    assert attributes[n.GEN_AI_RESPONSE_MODEL] == "claude-haiku-4-5"
    (run_span,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert (run_span.attributes or {})[n.AGENT_COST_USD] == pytest.approx(0.06)
    spent = [
        sample.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        for sample in family.samples
        if sample.name == "agent_cost_usd_total"
    ]
    assert sum(spent) == pytest.approx(0.06)


def test_a_warning_names_both_models_once_and_an_alias_or_a_dated_id_is_priced_as_asked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="endstate")
    prices = PriceTable()
    tokens = {"input_tokens": 10_000, "output_tokens": 1_000}
    haiku = (10_000 * 1 + 1_000 * 5) / MTOK
    for asked, named in [
        ("claude-haiku-4-5", "claude-haiku-4-5-20251001"),  # the table's alias_of, either way
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-opus-4-0", "claude-opus-4-20250514"),  # an alias, and the dated id of its row
        ("claude-opus-5-5", "claude-opus-5-5-20261120"),  # a dated id the table does not list
    ]:
        reply = ModelReply([], **tokens, model=named)
        assert prices.cost_of(asked, reply) == pytest.approx(
            haiku if "haiku" in asked else prices.cost_of(asked, ModelReply([], **tokens))
        )
    assert named_warnings(caplog) == []
    opus = (10_000 * 4 + 1_000 * 20) / MTOK
    for _ in range(3):
        assert prices.cost_of(
            "claude-opus-5-5", ModelReply([], **tokens, model="claude-haiku-4-5")
        ) == pytest.approx(opus)
    (warned,) = named_warnings(caplog)
    assert "'claude-opus-5-5'" in warned and "'claude-haiku-4-5'" in warned and "dearer" in warned
    # Asked Claude Haiku 4.5, the reply names Claude Opus 4.1 ($15 / $75): the dearer price.
    dearer = prices.cost_of("claude-haiku-4-5", ModelReply([], **tokens, model="claude-opus-4-1"))
    assert dearer == pytest.approx((10_000 * 15 + 1_000 * 75) / MTOK)


def test_a_price_given_for_the_name_asked_is_what_its_calls_cost_whatever_the_reply_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A proxy's alias priced by its owner: the price given is the price, and nothing is warned of;
    # a name asked with no price at all costs unknown, whatever known model the reply names (it was
    # priced as the model named).
    caplog.set_level(logging.WARNING, logger="endstate")
    reply = ModelReply([], input_tokens=10_000, output_tokens=1_000, model="claude-haiku-4-5")
    given = PriceTable({"team-proxy-large": Price(2.0, 8.0)})
    assert given.cost_of("team-proxy-large", reply) == pytest.approx((10_000 * 2 + 1_000 * 8) / MTOK)
    assert named_warnings(caplog) == []
    assert PriceTable().cost_of("team-proxy-large", reply) is None
    (warned,) = named_warnings(caplog)
    assert "'team-proxy-large'" in warned and "unknown" in warned
