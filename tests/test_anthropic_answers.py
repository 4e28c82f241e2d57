"""The Claude adapter answered as the real Messages API answers (and as a broken or hostile one
would): whole runs through the real `anthropic` SDK against the local Messages API server."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import (
    MessagesAPI,
    Response,
    error,
    events_of,
    html_error,
    iteration,
    message,
    stream_error,
    streamed,
    text,
    tool_use,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from agent import Agent, Budget, CompositeHooks, ConfigError, PriceTable, RetryPolicy, StopReason, tool
from agent.models.anthropic import AnthropicModel
from agent.models.catalog import ModelTable
from agent.models.price import Price
from telemetry import MetricsHooks, TracingHooks
from telemetry import names as n

MODEL = "claude-haiku-4-5"  # $1 input, $5 output per million tokens
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
WROTE: list[dict[str, Any]] = []


@tool
def write(path: str, body: str) -> str:
    """Write a file."""
    WROTE.append({"path": path, "body": body})
    return f"wrote {path}"


def run(
    *responses: Response, model_options: dict[str, Any] | None = None, **options: Any
) -> tuple[Any, MessagesAPI]:
    WROTE.clear()
    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url, **(model_options or {}))
        budget = Budget(max_turns=6, max_seconds=60)
        agent = Agent("answers", model, tools=[write], budget=budget, retry=FAST, **options)
        return agent.run("Do the task."), api


def dollars(input_tokens: float, output_tokens: float) -> float:
    return (input_tokens * 1.0 + output_tokens * 5.0) / 1e6


# -- usage and cost ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "breakdown", [{"ephemeral_5m_input_tokens": 100}, {"ephemeral_1h_input_tokens": None}]
)
def test_a_cache_breakdown_missing_a_count_is_priced_not_a_crash(breakdown: dict[str, Any]) -> None:
    usage = {"cache_creation_input_tokens": 100, "cache_creation": breakdown}
    result, _ = run(message(DONE, usage=usage))
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(dollars(10 + 100 * 1.25, 5))  # 5-minute writes


def test_cache_writes_given_only_by_ttl_are_counted_and_priced() -> None:
    breakdown = {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 40}
    result, _ = run(message(DONE, usage={"cache_creation_input_tokens": None, "cache_creation": breakdown}))
    assert result.input_tokens == 10 + 140
    assert result.cost_usd == pytest.approx(dollars(10 + 100 * 1.25 + 40 * 2, 5))


def test_web_searches_are_priced_at_ten_dollars_a_thousand() -> None:
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    counts = {"server_tool_use": {"web_search_requests": 3, "web_fetch_requests": 2}}  # fetches: tokens only
    reply = message(text("Found it."), search, found, DONE, usage=counts)
    result, _ = run(reply)
    assert result.cost_usd == pytest.approx(dollars(10, 5) + 3 * 0.01)
    cheaper = PriceTable({MODEL: Price(1.0, 5.0, web_search_per_1k=5.0)})
    result, _ = run(reply, prices=cheaper)
    assert result.cost_usd == pytest.approx(dollars(10, 5) + 3 * 0.005)


def test_the_model_table_takes_a_web_search_price() -> None:
    row = {"input": 1.0, "output": 5.0, "web_search_per_1k": 12.5}
    assert ModelTable({}).with_rows({"m": row}).get("m").price.web_search == 0.0125  # type: ignore[union-attr]


def test_a_stream_that_ends_before_message_stop_is_charged_and_retried() -> None:
    cut = streamed(*events_of(message(text("the first half"), input_tokens=1_000))[:-1])
    result, api = run(cut, message(DONE, input_tokens=100, output_tokens=7))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    assert result.input_tokens == 1_000 + 100  # the API took the first call's input: it is charged


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "error_type"),
    [
        ("invalid_request_error", "bad_request"),
        ("authentication_error", "authentication"),
        ("permission_error", "permission"),
        ("billing_error", "billing"),
    ],
)
def test_an_error_event_a_retry_cannot_fix_is_not_retried(kind: str, error_type: str) -> None:
    result, api = run(stream_error(kind, "refused"), message(DONE))
    assert result.reason is StopReason.ERROR and result.error_type == error_type
    assert len(api.requests) == 1
    assert "inside the stream" in result.note


def test_the_api_saying_x_should_retry_is_heeded() -> None:
    result, api = run(error(500, headers={"x-should-retry": "false"}), message(DONE))
    assert result.reason is StopReason.ERROR and result.error_type == "server_error"
    assert len(api.requests) == 1
    result, api = run(error(400, "try again", headers={"x-should-retry": "true"}), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2


def test_a_refused_key_says_where_the_key_comes_from() -> None:
    result, _ = run(error(401, "invalid x-api-key"))
    assert result.reason is StopReason.ERROR and result.error_type == "authentication"
    assert "api_key=" in result.note and "ANTHROPIC_API_KEY" in result.note


def test_a_proxys_html_error_page_is_clipped_in_the_note() -> None:
    result, api = run(html_error(502), html_error(502), html_error(502))
    assert result.reason is StopReason.ERROR and result.error_type == "server_error"
    assert len(api.requests) == 3  # a 502 is worth a retry, whatever its body
    assert "HTTP 502" in result.note and "more characters" in result.note and len(result.note) < 1_000


@pytest.mark.parametrize(
    ("status", "fix"),
    [(403, "workspace"), (402, "Billing"), (404, "model id"), (413, "size limit")],
)
def test_an_error_a_retry_cannot_fix_says_what_to_fix(status: int, fix: str) -> None:
    result, api = run(error(status, "the API's own words"))
    assert result.reason is StopReason.ERROR and len(api.requests) == 1
    assert "the API's own words" in result.note and fix in result.note


# -- hostile replies ----------------------------------------------------------------------------


@pytest.mark.parametrize("arguments", ["a string", [1, 2], None, 7])
def test_a_call_whose_input_is_no_json_object_is_retried_and_charged(arguments: Any) -> None:
    bad = message({"type": "tool_use", "id": "toolu_bad", "name": "write", "input": arguments})
    result, api = run(bad, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2 and WROTE == []
    assert result.input_tokens == 20 and result.output_tokens == 10  # the unusable reply was paid for


@pytest.mark.parametrize(
    "bad",
    [
        message(text("hi"), input_tokens=-5),
        message(text("hi"), output_tokens=2**64),
        message(text("hi"), cache_read_input_tokens=-1),
        message(text("hi"), stop_reason=5),  # type: ignore[arg-type]
    ],
)
def test_a_200_whose_usage_or_stop_reason_no_run_could_keep_is_retried_as_malformed(bad: Response) -> None:
    """Such a reply ended the run at once as `invalid_reply`, in words meant for an adapter's bug;
    the API never sends it, so it is a malformed reply: retried, as the other unreadable 200s."""
    result, api = run(bad, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2


@pytest.mark.parametrize("field", ["id", "name"])
@pytest.mark.parametrize("value", [None, ""])
def test_a_call_without_an_id_or_a_name_is_retried_never_run(field: str, value: Any) -> None:
    bad = message(tool_use("write", {"path": "a", "body": "b"}, id="toolu_1") | {field: value})
    result, api = run(bad, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2 and WROTE == []


def test_two_calls_with_one_id_are_retried_never_run() -> None:
    twins = message(
        tool_use("write", {"path": "a", "body": "1"}, id="toolu_T"),
        tool_use("write", {"path": "b", "body": "2"}, id="toolu_T"),
    )
    result, api = run(twins, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2 and WROTE == []


def test_the_input_streamed_to_a_block_the_sdk_does_not_know_is_kept_and_sent_back() -> None:
    # The MCP connector's calls stream their input as input_json_delta, like tool_use; the SDK's
    # Messages types do not know the block, and gather the input of tool_use blocks only.
    call = {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "lookup", "server_name": "wiki"}
    events = events_of(message(call | {"input": {}}, tool_use("write", {"path": "a", "body": "b"})))
    at = next(i for i, (kind, _) in enumerate(events) if kind == "content_block_start")
    pieces = ['{"query": "caf', "\\u00e9 ", 'near me", "limit"', ": 3}"]
    deltas = [
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
        for d in ({"type": "input_json_delta", "partial_json": p} for p in pieces)
    ]
    result, api = run(streamed(*events[: at + 1], *deltas, *events[at + 1 :]), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    sent = api.bodies[1]["messages"][1]["content"][0]
    assert sent == call | {"input": {"query": "café near me", "limit": 3}}


def test_a_stream_cut_anywhere_with_pings_and_unknown_events_reads_whole() -> None:
    arguments = {"path": "naïve/ü.txt", "body": 'say "hi" \\ 😀\n'}
    events = events_of(message(text("Writing ✓ ünïcode"), tool_use("write", arguments)))
    events.insert(3, ("future_event", {"type": "future_event", "x": 1}))
    events.insert(3, ("ping", {"type": "ping"}))
    result, _ = run(streamed(*events, chunk_bytes=3), message(DONE))  # cut mid-line, mid-UTF-8
    assert result.reason is StopReason.SUCCESS, result.note
    assert [arguments] == WROTE


def test_a_web_search_that_failed_is_not_charged() -> None:
    # The API bills the searches its usage counts; a search that errored is not counted.
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
    failed = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"},
    }
    counts = {"server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}}
    result, _ = run(message(search, failed, DONE, usage=counts))
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(dollars(10, 5))


def test_a_call_run_us_only_is_priced_at_its_multiplier() -> None:
    # A workspace's default inference_geo makes every call US-only without a request parameter.
    result, _ = run(message(DONE, input_tokens=10_000, output_tokens=1_000, usage={"inference_geo": "us"}))
    assert result.cost_usd == pytest.approx(dollars(10_000, 1_000) * 1.1)
    result, _ = run(
        message(DONE, input_tokens=10_000, output_tokens=1_000, usage={"inference_geo": "global"})
    )
    assert result.cost_usd == pytest.approx(dollars(10_000, 1_000))


def test_a_server_tool_call_cut_off_by_max_tokens_is_not_sent_back_nor_charged() -> None:
    # The API wants each server_tool_use followed by its result; a reply cut off in one has none.
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
    result, api = run(message(text("Searching."), search, stop_reason="max_tokens"), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    sent = api.bodies[1]["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["text", "text"] and "was not run" in sent[1]["text"]
    assert result.cost_usd == pytest.approx(dollars(20, 10))  # no search was billed


def test_a_reply_paused_in_a_server_tool_call_is_sent_back_as_is() -> None:
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
    counts = {"server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 0}}
    paused = message(text("Searching."), search, stop_reason="pause_turn", usage=counts)
    result, api = run(paused, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    sent = api.bodies[1]["messages"][-1]["content"][-1]
    assert {k: v for k, v in sent.items() if k != "cache_control"} == search


def test_a_delta_for_a_block_that_never_started_is_a_malformed_reply_retried() -> None:
    events = events_of(message(text("hi")))
    stray = {"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "x"}}
    events.insert(2, ("content_block_delta", stray))
    result, api = run(streamed(*events), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2


# -- fast mode ----------------------------------------------------------------------------------


def fast_run(model: str, *responses: Response) -> tuple[Any, MessagesAPI]:
    with MessagesAPI(*responses) as api:
        agent = Agent(
            "fast", AnthropicModel(model, api_key="sk-ant-test", base_url=api.url), tools=[write], retry=FAST
        )
        return agent.run("Do the task."), api


def test_a_call_run_in_fast_mode_is_priced_at_the_fast_mode_rates_cache_included() -> None:
    # claude-opus-4-7: $5/$25 standard, $30/$150 in fast mode (the usage says `speed: "fast"`).
    usage = {"speed": "fast", "cache_read_input_tokens": 8_000}
    result, _ = fast_run(
        "claude-opus-4-7", message(DONE, input_tokens=2_000, output_tokens=1_000, usage=usage)
    )
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx((2_000 * 30 + 8_000 * 3.0 + 1_000 * 150) / 1e6)
    standard = {"speed": "standard", "cache_read_input_tokens": 8_000}
    result, _ = fast_run(
        "claude-opus-4-7", message(DONE, input_tokens=2_000, output_tokens=1_000, usage=standard)
    )
    assert result.cost_usd == pytest.approx((2_000 * 5 + 8_000 * 0.5 + 1_000 * 25) / 1e6)


def test_a_fast_mode_call_on_a_model_with_no_fast_price_costs_unknown_not_the_standard_price() -> None:
    result, _ = run(message(DONE, input_tokens=10_000, output_tokens=1_000, usage={"speed": "fast"}))
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd is None


def test_a_cost_budget_refuses_fast_mode_on_a_model_with_no_fast_mode_price() -> None:
    # Its fast calls would cost unknown, and a cost budget checks the known part only: it would never
    # stop the run. claude-sonnet-5-5 has no fast price in the table; claude-opus-5-5 has one.
    def agent(model: str, **options: Any) -> Agent:
        chosen = AnthropicModel(model, api_key="sk-ant-test", **options)
        return Agent("fast", chosen, tools=[write], budget=Budget(max_cost_usd=1.0))

    with pytest.raises(ConfigError, match="asks model 'claude-sonnet-5-5' for fast mode"):
        agent("claude-sonnet-5-5", extra_body={"speed": "fast"})
    agent("claude-sonnet-5-5")  # standard speed: its price is known
    agent("claude-opus-5-5", extra_body={"speed": "fast"})
    Agent(
        "fast",
        AnthropicModel("claude-sonnet-5-5", api_key="sk-ant-test", extra_body={"speed": "fast"}),
        budget=Budget(max_cost_usd=1.0),
        prices=PriceTable({"claude-sonnet-5-5": Price(2.0, 10.0, fast=Price(4.0, 20.0))}),
    )


# -- usage billed apart from the top-level counts (usage.iterations) ---------------------------------


def test_a_server_side_compaction_is_charged_though_the_top_level_usage_leaves_it_out() -> None:
    # "A compaction entry's tokens are not included in the top-level usage fields" (the SDK's types).
    iterations = [iteration("compaction", 150_000, 3_000), iteration("message", 10, 5)]
    result, _ = run(message(DONE, input_tokens=10, output_tokens=5, usage={"iterations": iterations}))
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx(dollars(10, 5) + dollars(150_000, 3_000))
    assert (result.input_tokens, result.output_tokens) == (150_010, 3_005)


def test_an_advisor_models_answer_is_charged_at_the_advisor_models_price() -> None:
    advice = iteration(
        "advisor_message", 40_000, 1_500, cache_read_input_tokens=20_000, model="claude-opus-4-6"
    )
    result, _ = run(message(DONE, input_tokens=10, output_tokens=5, usage={"iterations": [advice]}))
    assert result.reason is StopReason.SUCCESS, result.note
    opus = (40_000 * 5.0 + 20_000 * 0.5 + 1_500 * 25.0) / 1e6  # Opus 4.6: $5 in, $25 out, reads 0.1x
    assert result.cost_usd == pytest.approx(dollars(10, 5) + opus)


def test_an_advisor_model_with_no_known_price_makes_the_cost_unknown() -> None:
    advice = iteration("advisor_message", 40_000, 1_500, model="claude-unheard-of-9")
    advisor = {"type": "advisor_20260301", "name": "advisor", "model": "claude-unheard-of-9"}
    result, _ = run(message(DONE, usage={"iterations": [advice]}), model_options={"server_tools": [advisor]})
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd is None


# -- server-side compaction (a beta) -------------------------------------------------------------

COMPACTION = {
    "type": "compaction",
    "content": "Summary: the user asked for a report; three files were written. " * 3,
    "encrypted_content": "EuQBCkYIBxgCKkB",
    "signature": "c2lnbmF0dXJl",
}


def test_a_compaction_block_is_sent_back_whole_with_the_summary_it_streamed() -> None:
    call = tool_use("write", {"path": "a.txt", "body": "x"})
    result, api = run(message(COMPACTION, call), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    sent = api.bodies[1]["messages"][1]["content"][0]
    assert {k: v for k, v in sent.items() if k != "cache_control"} == COMPACTION


def test_a_reply_paused_after_a_compaction_goes_on_in_the_same_turn() -> None:
    result, api = run(message(COMPACTION, stop_reason="compaction"), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.turns == 1 and len(api.requests) == 2
    last = api.bodies[1]["messages"][-1]
    assert last["role"] == "assistant" and last["content"][0]["content"] == COMPACTION["content"]


HAIKU_FALLBACK = {"fallbacks": [{"model": "claude-haiku-4-5"}]}  # a fallback happens only when asked for


def test_a_reply_a_fallback_model_finished_is_priced_part_by_model() -> None:
    # Server-side fallback (a beta): the requested model declined after 1,000 input tokens and the
    # fallback model answered; the top-level usage sums both under one model id.
    declined = iteration("message", 1_000, 50, model="claude-opus-4-6")  # $5 in, $25 out
    answered = iteration("fallback_message", 2_000, 100, model="claude-haiku-4-5")  # $1 in, $5 out
    usage = {"iterations": [declined, answered]}
    with MessagesAPI(
        message(DONE, input_tokens=3_000, output_tokens=150, model="claude-haiku-4-5", usage=usage)
    ) as api:
        model = AnthropicModel(
            "claude-opus-4-6", api_key="sk-ant-test", base_url=api.url, extra_body=HAIKU_FALLBACK
        )
        result = Agent("fallback", model, tools=[write], retry=FAST).run("Do the task.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.cost_usd == pytest.approx((1_000 * 5 + 50 * 25 + 2_000 * 1 + 100 * 5) / 1e6)
    assert (result.input_tokens, result.output_tokens) == (3_000, 150)  # counted once


def test_the_parts_of_a_reply_billed_by_model_price_their_one_hour_cache_writes_as_such() -> None:
    # cache="1h" writes every breakpoint for an hour (2x input, not 5 minutes' 1.25x); each iteration
    # gives its own breakdown (`cache_creation`), which the parts priced by model must keep.
    hour = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 10_000}
    writes = {"cache_creation_input_tokens": 10_000, "cache_creation": hour}
    declined = iteration("message", 1_000, 50, model="claude-opus-4-6", **writes)
    answered = iteration("fallback_message", 2_000, 100, model="claude-haiku-4-5", **writes)
    usage = {
        "iterations": [declined, answered],
        "cache_creation_input_tokens": 20_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 20_000},
    }
    reply = message(DONE, input_tokens=3_000, output_tokens=150, model="claude-haiku-4-5", usage=usage)
    with MessagesAPI(reply) as api:
        model = AnthropicModel(
            "claude-opus-4-6", api_key="sk-ant-test", base_url=api.url, cache="1h", extra_body=HAIKU_FALLBACK
        )
        result = Agent("fallback", model, tools=[write], retry=FAST).run("Do the task.")
    assert result.reason is StopReason.SUCCESS, result.note
    opus = 1_000 * 5 + 10_000 * 5 * 2 + 50 * 25
    haiku = 2_000 * 1 + 10_000 * 1 * 2 + 100 * 5
    assert result.cost_usd == pytest.approx((opus + haiku) / 1e6)


# A first turn of plain usage (7 in, 3 out), then a reply that the API billed part by part: what the
# second chat span says, and the tokens the token metric gives by model, both turns together.
HAIKU, OPUS = MODEL, "claude-opus-4-6"
BILLED = {  # the iterations, the top-level usage, the chat span's (in, out, read, write), by model
    "compaction": (
        [iteration("compaction", 150_000, 3_000), iteration("message", 10, 5)],
        {},
        (150_010, 3_005, 0, 0),
        {HAIKU: (150_017, 3_008, 0, 0)},
    ),
    "advisor": (
        [iteration("advisor_message", 40_000, 1_500, cache_read_input_tokens=20_000, model=OPUS)],
        {},
        (60_010, 1_505, 20_000, 0),
        {HAIKU: (17, 8, 0, 0), OPUS: (60_000, 1_500, 20_000, 0)},
    ),
    "fallback": (
        [
            iteration("message", 1_000, 50, model=f"{HAIKU}-20251001"),  # the requested model, dated
            iteration("fallback_message", 2_000, 100, model=OPUS, cache_creation_input_tokens=300),
        ],
        {"input_tokens": 3_000, "output_tokens": 150, "cache_creation_input_tokens": 300},
        (3_300, 150, 0, 300),
        {HAIKU: (1_007, 53, 0, 0), OPUS: (2_300, 100, 0, 300)},
    ),
    # The same fallback with top-level counts of the answering attempt alone (the declined one is in
    # the iterations only): the run, the span and the metric all count both attempts.
    "fallback, top level the answer's": (
        [
            iteration("message", 1_000, 50, model=f"{HAIKU}-20251001"),
            iteration("fallback_message", 2_000, 100, model=OPUS, cache_creation_input_tokens=300),
        ],
        {"input_tokens": 2_000, "output_tokens": 100, "cache_creation_input_tokens": 300},
        (3_300, 150, 0, 300),
        {HAIKU: (1_007, 53, 0, 0), OPUS: (2_300, 100, 0, 300)},
    ),
}
TOKEN_TYPES = ("input", "output", "cache_read", "cache_creation")
USAGE_ATTRIBUTES = (
    n.GEN_AI_USAGE_INPUT_TOKENS,
    n.GEN_AI_USAGE_OUTPUT_TOKENS,
    n.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    n.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
)


def tokens_by_model(metrics: str) -> dict[str, tuple[float, ...]]:
    """`gen_ai_client_token_usage_sum` from a /metrics text: by requested model, each token type's."""
    found: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            if sample.name == "gen_ai_client_token_usage_sum" and sample.value:
                model, kind = sample.labels["gen_ai_request_model"], sample.labels["gen_ai_token_type"]
                found.setdefault(model, {})[kind] = sample.value
    return {model: tuple(kinds.get(k, 0.0) for k in TOKEN_TYPES) for model, kinds in found.items()}


@pytest.mark.parametrize("case", BILLED)
def test_chat_spans_and_the_token_metric_count_what_the_api_billed_apart_and_by_model(case: str) -> None:
    # Tokens billed apart from a reply's top-level usage (a server-side compaction, an advisor model)
    # were in the run's totals and its cost but not in the chat span or the token metric, so token
    # panels read lower than the runs; a fallback's parts were all under the requested model.
    iterations, top, span_usage, by_model = BILLED[case]
    exporter, provider, registry = InMemorySpanExporter(), TracerProvider(), CollectorRegistry()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks = CompositeHooks((TracingHooks(provider), MetricsHooks(registry)))
    first = message(tool_use("write", {"path": "a.txt", "body": "x"}), input_tokens=7, output_tokens=3)
    billed = message(DONE, **top, usage={"iterations": iterations})
    result, _ = run(first, billed, hooks=hooks)
    provider.shutdown()
    assert result.reason is StopReason.SUCCESS, result.note
    chats = [s for s in exporter.get_finished_spans() if s.name == f"chat {MODEL}"]
    chats.sort(key=lambda s: s.start_time or 0)
    assert [tuple((s.attributes or {})[k] for k in USAGE_ATTRIBUTES) for s in chats] == [
        (7, 3, 0, 0),
        span_usage,
    ]
    found = tokens_by_model(generate_latest(registry).decode())  # the /metrics text
    assert found == by_model
    u = result.usage  # the token metric sums to the run's usage
    totals = (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens)
    assert tuple(sum(counts) for counts in zip(*found.values(), strict=True)) == totals


# -- thinking cut off --------------------------------------------------------------------------


def test_a_thinking_block_cut_off_unsigned_by_max_tokens_is_not_sent_back() -> None:
    # max_tokens counts thinking: a reply can end inside its thinking, before the signature that
    # the API wants back with every thinking block (it refuses an unsigned one).
    cut = {"type": "thinking", "thinking": "First, list the files, then", "signature": ""}
    signed = {"type": "thinking", "thinking": "Now write it.", "signature": "c2ln"}
    call = tool_use("write", {"path": "a.txt", "body": "x"})
    result, api = run(message(cut, stop_reason="max_tokens"), message(signed, call), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert all(
        b.get("type") != "thinking"
        for m in api.bodies[1]["messages"]
        for b in m["content"]
        if isinstance(b, dict)
    )
    kept = api.bodies[2]["messages"][-2]["content"][0]
    assert {k: v for k, v in kept.items() if k != "cache_control"} == signed  # a signed one goes back


@pytest.mark.parametrize("field", ["speed", "inference_geo"])
def test_how_a_call_ran_is_priced_when_only_the_last_usage_of_the_stream_says_it(field: str) -> None:
    # The SDK's stream keeps a message_delta's token counts only: speed and inference_geo given there
    # (and not at message_start) were lost, and a fast or US-only call priced as a standard one.
    said = {"speed": "fast", "inference_geo": "us"}[field]
    events = events_of(message(DONE, input_tokens=2_000, output_tokens=1_000, usage={field: said}))
    events[0][1]["message"]["usage"].pop(field)
    assert any(name == "message_delta" and data["usage"].get(field) == said for name, data in events)
    result, _ = fast_run("claude-opus-4-7", streamed(*events))
    standard = (2_000 * 5 + 1_000 * 25) / 1e6
    expected = {"speed": (2_000 * 30 + 1_000 * 150) / 1e6, "inference_geo": standard * 1.1}[field]
    assert result.cost_usd == pytest.approx(expected)
