"""Claude in production, through the real SDK against the local Messages API server: prompt caching,
streaming, options, server tools, malformed replies, connections."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Iterator
from typing import Any

import pytest
from messages_api import (
    MALFORMED_KINDS,
    MessagesAPI,
    Response,
    count_tokens,
    error,
    malformed,
    message,
    stream_error,
    text,
    tool_use,
)

from agent import Agent, Budget, ConfigError, ModelError, PriceTable, RetryPolicy, TransientModelError, tool
from agent.models.anthropic import AnthropicModel, code_execution, web_fetch, web_search
from agent.models.base import ModelReply, ModelRequest, recording_cut_calls
from agent.policies import RetryPolicy as Policy

MODEL = "claude-sonnet-5-5"
KEY = "sk-ant-test-key"
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, jitter=False)
MARK = {"type": "ephemeral"}


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI() as server:
        yield server


def model_for(api: MessagesAPI, **options: Any) -> AnthropicModel:
    return AnthropicModel(MODEL, api_key=KEY, base_url=api.url, **options)


def complete(model: AnthropicModel, request: ModelRequest) -> ModelReply:
    return asyncio.run(model.complete(request))


def ask(content: Any, max_tokens: int = 256) -> ModelRequest:
    return ModelRequest.of_messages("", [{"role": "user", "content": content}], [], max_tokens)


@tool
def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}: " + "lorem ipsum " * 200


def done(note: str = "ok") -> dict[str, Any]:
    return tool_use("finish", {"kind": "done", "note": note})


def reading(i: int) -> dict[str, Any]:
    return tool_use("read", {"path": f"f{i}.txt"}, id=f"toolu_r{i}")


def reader(model: AnthropicModel, turns: int = 30, **options: Any) -> Agent:
    budget = Budget(max_turns=turns, max_seconds=60)
    return Agent(
        "reader", model, instructions="Read files.", tools=[read], retry=FAST, budget=budget, **options
    )


def marked(block: Any) -> bool:
    return isinstance(block, dict) and "cache_control" in block


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where the request's cache breakpoints sit, as readable names."""
    found = [f"tool {t['name']}" for t in body.get("tools", []) if marked(t)]
    found += ["system" for b in body.get("system", []) if marked(b)]
    for i, msg in enumerate(body["messages"]):
        content = msg["content"] if isinstance(msg["content"], list) else []
        found += [f"message {i} ({msg['role']}) block {j}" for j, b in enumerate(content) if marked(b)]
    return found


# -- prompt caching ------------------------------------------------------------------


def test_cache_breakpoints_sit_on_tools_system_and_the_conversation_prefix(api: MessagesAPI) -> None:
    api.enqueue(message(reading(1)), message(reading(2)), message(done()))
    result = reader(model_for(api)).run("Read two files.")
    assert result.reason == "success"
    first, second, third = api.bodies
    assert breakpoints(first) == ["tool finish", "system", "message 0 (user) block 0"]
    assert breakpoints(second) == [
        "tool finish",
        "system",
        "message 0 (user) block 0",
        "message 2 (user) block 0",
    ]
    assert breakpoints(third) == [
        "tool finish",
        "system",
        "message 2 (user) block 0",
        "message 4 (user) block 0",
    ]
    assert all(b["cache_control"] == MARK for b in third["messages"][4]["content"] if marked(b))


def test_the_cache_ttl_is_configurable_and_caching_can_be_off(api: MessagesAPI) -> None:
    api.enqueue(message(text("a")), message(text("b")))
    complete(model_for(api, cache="1h"), ask("hi"))
    complete(model_for(api, cache=None), ask("hi"))
    hour, off = api.bodies
    assert hour["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert breakpoints(off) == [] and off["messages"][0]["content"] == "hi"


def test_thinking_blocks_never_carry_a_breakpoint(api: MessagesAPI) -> None:
    api.enqueue(message(text("ok")))
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    history = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [thinking]}]
    complete(model_for(api), ModelRequest.of_messages("", history, [], 64))
    assert api.bodies[0]["messages"][1]["content"] == [thinking]


def test_each_turn_reads_the_prefix_the_turn_before_wrote(api: MessagesAPI) -> None:
    api.enqueue(
        *(message(reading(i), input_tokens=None) for i in range(5)), message(done(), input_tokens=None)
    )
    result = reader(model_for(api)).run("Read five files.")
    assert result.reason == "success" and result.turns == 6
    usages = api.usages
    assert usages[0]["cache_read_input_tokens"] == 0 and usages[0]["cache_creation_input_tokens"] > 0
    for before, after in itertools.pairwise(usages):
        assert after["cache_read_input_tokens"] > 0
        # what a turn reads is all the turn before had cached: the previous read plus its write
        assert (
            after["cache_read_input_tokens"]
            == before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]
        )
    # the run's input tokens count every kind of input, as the conventions ask
    assert result.input_tokens == sum(
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in usages
    )


def test_the_cost_of_a_turn_with_cache_reads_and_writes(api: MessagesAPI) -> None:
    api.enqueue(message(text("a"), input_tokens=None), message(text("b"), input_tokens=None))
    model = model_for(api)
    history = [{"role": "user", "content": "lorem ipsum " * 500}]
    complete(model, ModelRequest.of_messages("Be brief.", history, [read.spec()], 64))
    longer = [*history, {"role": "assistant", "content": [text("a")]}, {"role": "user", "content": "more"}]
    second = complete(model, ModelRequest.of_messages("Be brief.", longer, [read.spec()], 64))
    read_tokens, write_tokens = second.cache_read_input_tokens, second.cache_creation_input_tokens
    uncached = second.input_tokens - read_tokens - write_tokens
    assert read_tokens > 1000 and write_tokens > 0 and uncached == 0
    expected = (read_tokens * 0.10 + write_tokens * 2.0 * 1.25 + second.output_tokens * 10.0) / 1e6
    assert PriceTable().cost_of(MODEL, second) == pytest.approx(expected)
    full_price = (second.input_tokens * 2.0 + second.output_tokens * 10.0) / 1e6
    assert PriceTable().cost_of(MODEL, second) < full_price / 3


def test_one_hour_cache_writes_are_reported_apart(api: MessagesAPI) -> None:
    api.enqueue(message(text("a"), input_tokens=None))
    reply = complete(model_for(api, cache="1h"), ask("lorem " * 100))
    assert reply.cache_creation_1h_input_tokens == reply.cache_creation_input_tokens > 0


# -- streaming ------------------------------------------------------------------------


def test_time_to_first_token_is_on_the_reply(api: MessagesAPI) -> None:
    api.enqueue(message(text("hello there " * 10), stream_delay=0.02))
    reply = complete(model_for(api), ask("hi"))
    assert reply.time_to_first_token is not None and 0.02 <= reply.time_to_first_token < 5


def test_a_call_cut_mid_stream_records_the_tokens_it_used(api: MessagesAPI) -> None:
    long_text = "word " * 400  # 50 streamed pieces, 0.05 s apart
    api.enqueue(message(text(long_text), input_tokens=1234, output_tokens=500, stream_delay=0.05))
    model = model_for(api)

    async def go() -> list[ModelReply]:
        with recording_cut_calls() as cut:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.5):
                    await model.complete(ask("write"))
            return cut

    (partial,) = asyncio.run(go())
    assert partial.input_tokens == 1234  # from message_start
    assert 0 < partial.output_tokens < 500  # counted from what streamed before the cut
    assert partial.extra == {"cut_off": True, "output_tokens_estimated": True}
    assert partial.stop_reason == "cut_off" and partial.content == []


def test_a_call_cut_before_the_stream_began_records_nothing(api: MessagesAPI) -> None:
    api.enqueue(Response(200, message(text("late")).body, delay=2.0))
    model = model_for(api)

    async def go() -> list[ModelReply]:
        with recording_cut_calls() as cut:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await model.complete(ask("write"))
            return cut

    assert asyncio.run(go()) == []


# -- options ------------------------------------------------------------------------------


def test_options_are_passed_through(api: MessagesAPI) -> None:
    api.enqueue(message(text("ok")))
    model = model_for(
        api,
        thinking={"type": "adaptive"},
        tool_choice={"type": "auto"},
        parallel_tool_use=False,
        server_tools=[web_search(max_uses=3), web_fetch(), code_execution()],
        metadata={"user_id": "team-42"},
        betas=["context-management-2025-06-27", "files-api-2025-04-14"],
    )
    complete(model, ModelRequest.of_messages("", ask("hi").messages, [read.spec()], 64))
    (sent,) = api.requests
    body = sent.body
    assert body["thinking"] == {"type": "adaptive"}
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert body["metadata"] == {"user_id": "team-42"}
    assert [t["name"] for t in body["tools"]] == ["read", "web_search", "web_fetch", "code_execution"]
    assert body["tools"][1] == {"type": "web_search_20260318", "name": "web_search", "max_uses": 3}
    assert marked(body["tools"][-1]) and not marked(body["tools"][0])
    assert sent.headers["anthropic-beta"] == "context-management-2025-06-27,files-api-2025-04-14"


def test_request_fields_without_an_option_of_their_own_are_sent_as_given(api: MessagesAPI) -> None:
    # Effort and structured outputs (output_config), fast mode, where inference runs, the service
    # tier, stop sequences, and a beta's fields (server-side context editing).
    fields = {
        "output_config": {"effort": "high"},
        "speed": "fast",
        "inference_geo": "us",
        "service_tier": "standard_only",
        "stop_sequences": ["</answer>"],
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
    }
    api.enqueue(message(text("ok")), message(text("ok")))
    model = model_for(api, extra_body=fields, betas=["context-management-2025-06-27"])
    complete(model, ask("hi"))
    complete(model, ask("again"))
    assert all(body.items() >= fields.items() for body in api.bodies)


@pytest.mark.parametrize(
    ("field", "says"),
    [
        ("thinking", "thinking="),
        ("messages", "journal"),
        ("cache_control", "cache="),
        ("container", "container="),
    ],
)
def test_extra_body_may_not_set_what_the_adapter_writes(field: str, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"may not set {field!r}: it comes from")) as raised:
        AnthropicModel(MODEL, api_key="sk-test", extra_body={field: {}})
    assert says in str(raised.value)


@pytest.mark.parametrize("thinking", [{"type": "adaptive"}, {"type": "enabled", "budget_tokens": 2048}])
@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "read"}])
def test_thinking_with_a_tool_choice_that_forces_a_call_is_a_config_error(
    api: MessagesAPI, thinking: dict[str, Any], choice: dict[str, Any]
) -> None:
    # Anthropic's extended thinking docs: with thinking, tool_choice may only be auto or none; the
    # API refuses the rest with a 400, which ended the run as an error at its first paid call.
    def build(**options: Any) -> AnthropicModel:  # a model that thinks only when asked to
        return AnthropicModel("claude-sonnet-4-6", api_key=KEY, base_url=api.url, **options)

    with pytest.raises(ConfigError, match="thinking allows tool_choice 'auto' or 'none' only"):
        build(thinking=thinking, tool_choice=choice)
    build(thinking={"type": "disabled"}, tool_choice=choice)  # no thinking: any choice
    build(tool_choice=choice)
    build(thinking=thinking, tool_choice={"type": "none"})


@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "claude-opus-5-5", "claude-fable-5-1"])
def test_a_model_that_always_thinks_refuses_a_forcing_tool_choice_or_thinking_turned_off(
    api: MessagesAPI, model: str
) -> None:
    # What's new in Claude Sonnet 5.5 and Opus 5.5 (also on Fable 5.1): thinking cannot be turned off,
    # and forced tool use returns an error, whatever `thinking` says (left out, the model thinks).
    def build(**options: Any) -> AnthropicModel:
        return AnthropicModel(model, api_key=KEY, base_url=api.url, **options)

    with pytest.raises(ConfigError, match=f"drop tool_choice \\({model} always thinks\\)"):
        build(tool_choice={"type": "any"})
    with pytest.raises(ConfigError, match=f"{model} always thinks \\(the API refuses thinking 'disabled'\\)"):
        build(thinking={"type": "disabled"})
    build(thinking={"type": "adaptive"}, tool_choice={"type": "auto"})


def test_a_model_that_thinks_by_default_refuses_a_forcing_tool_choice_unless_thinking_is_off(
    api: MessagesAPI,
) -> None:
    # What's new in Claude Opus 5: thinking is on by default (a request without `thinking` thinks), and
    # thinking={"type": "disabled"} is accepted; the API refuses a forcing tool_choice while it thinks.
    with pytest.raises(ConfigError, match=r"turn thinking off: thinking=.*claude-opus-5 thinks by default"):
        AnthropicModel("claude-opus-5", api_key=KEY, base_url=api.url, tool_choice={"type": "any"})
    AnthropicModel("claude-opus-5", api_key=KEY, thinking={"type": "disabled"}, tool_choice={"type": "any"})


def test_parallel_tool_use_off_alone_is_an_auto_tool_choice(api: MessagesAPI) -> None:
    api.enqueue(message(text("ok")))
    complete(model_for(api, parallel_tool_use=False), ask("hi"))
    assert api.bodies[0]["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert "thinking" not in api.bodies[0] and "anthropic-beta" not in api.requests[0].headers


def test_thinking_blocks_go_back_unchanged_through_a_run(api: MessagesAPI) -> None:
    thinking = {"type": "thinking", "thinking": "I should read f1 first. " * 20, "signature": "EqQBCgIYAh=="}
    redacted = {"type": "redacted_thinking", "data": "opaque-bytes"}
    api.enqueue(message(thinking, redacted, reading(1)), message(done()))
    # Claude Sonnet 5.5 refuses a thinking budget (its migration guide): adaptive, its display asked for
    result = reader(model_for(api, thinking={"type": "adaptive", "display": "summarized"})).run("Read.")
    assert result.reason == "success"
    sent_back = api.bodies[1]["messages"][1]["content"]
    assert sent_back[:2] == [thinking, redacted]
    assert api.bodies[1]["thinking"] == {"type": "adaptive", "display": "summarized"}


def test_server_tool_uses_are_counted_on_the_reply(api: MessagesAPI) -> None:
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}}
    results = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    run_code = {
        "type": "server_tool_use",
        "id": "srvtoolu_2",
        "name": "code_execution",
        "input": {"code": "1"},
    }
    usage = {"server_tool_use": {"web_search_requests": 2, "web_fetch_requests": 0}}
    api.enqueue(message(search, results, run_code, text("found"), usage=usage))
    reply = complete(model_for(api, server_tools=[web_search(), code_execution()]), ask("search"))
    assert reply.server_tool_use == {"web_search": 2, "code_execution": 1}
    assert reply.content[:2] == [search, results] and reply.tool_calls == []


def test_rate_limit_headers_are_on_the_reply_fast_modes_and_the_priority_tiers_too(api: MessagesAPI) -> None:
    # Fast mode has its own limits (Anthropic's fast-mode page: anthropic-fast-*), as has the
    # priority tier (anthropic-priority-*): a 429 in either is explained by these, not the standard ones.
    limits = {
        "anthropic-ratelimit-input-tokens-remaining": "39000",
        "anthropic-ratelimit-requests-reset": "2026-11-30T10:00:00Z",
        "anthropic-fast-input-tokens-limit": "100000",
        "anthropic-fast-output-tokens-remaining": "0",
        "anthropic-priority-input-tokens-remaining": "5000",
    }
    api.enqueue(message(text("ok"), headers={**limits, "x-unrelated": "1"}))
    reply = complete(model_for(api), ask("hi"))
    assert reply.extra["rate_limit"] == limits


# -- what the API says when it stops -----------------------------------------------------------


def test_a_refusal_comes_back_with_its_stop_reason_and_details(api: MessagesAPI) -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "declined"}
    api.enqueue(message(text(""), stop_reason="refusal", stop_details=details))
    reply = complete(model_for(api), ask("something dangerous"))
    assert reply.stop_reason == "refusal"
    assert reply.extra["stop_details"]["category"] == "cyber"


@pytest.mark.parametrize("stop", ["pause_turn", "model_context_window_exceeded"])
def test_other_stop_reasons_pass_through(api: MessagesAPI, stop: str) -> None:
    api.enqueue(message(text("partial"), stop_reason=stop))
    assert complete(model_for(api), ask("hi")).stop_reason == stop


def test_a_prompt_too_long_is_named_for_the_history_policy(api: MessagesAPI) -> None:
    api.enqueue(error(400, "prompt is too long: 1000231 tokens > 1000000 maximum"))
    with pytest.raises(ModelError) as caught:
        complete(model_for(api), ask("hi"))
    assert caught.value.error_type == "context_window_exceeded"
    assert not isinstance(caught.value, TransientModelError)


# -- malformed replies (issue 11, item 6) ------------------------------------------------------


@pytest.mark.parametrize("kind", MALFORMED_KINDS)
def test_a_malformed_200_reply_is_a_transient_fault(api: MessagesAPI, kind: str) -> None:
    api.enqueue(malformed(kind))
    with pytest.raises(TransientModelError) as caught:
        complete(model_for(api), ask("hi"))
    assert caught.value.error_type == "malformed_reply"
    assert "200 reply whose body could not be read" in str(caught.value)
    assert "max_tokens" not in str(caught.value)


def test_malformed_replies_are_retried_then_end_in_error_with_their_type(api: MessagesAPI) -> None:
    api.enqueue(malformed("bad_event"), message(done()))
    assert reader(model_for(api)).run("go").reason == "success"
    assert len(api.requests) == 2
    api.then = malformed("cut_short")
    result = reader(model_for(api)).run("go")
    assert (result.reason, result.error_type) == ("error", "malformed_reply")
    assert len(api.requests) == 2 + FAST.max_attempts


def test_an_error_event_inside_the_stream_is_transient(api: MessagesAPI) -> None:
    api.enqueue(stream_error("overloaded_error"), stream_error("api_error", "Internal error"))
    for expected in ("overloaded", "server_error"):
        with pytest.raises(TransientModelError) as caught:
            complete(model_for(api), ask("hi"))
        assert caught.value.error_type == expected


# -- retry-after ------------------------------------------------------------------------------


def test_a_retry_after_is_never_cut_short_by_the_policy() -> None:
    policy = Policy(max_delay=30, jitter=False)
    assert policy.delay(1, retry_after=60.0) == 60.0
    assert policy.delay(1, retry_after=None) == 1.0
    assert policy.delay(10, retry_after=1.0) is None  # attempts still run out


# -- connections ------------------------------------------------------------------------------


def twenty_turns(api: MessagesAPI) -> None:
    api.enqueue(*(message(reading(i)) for i in range(19)), message(done()))


def test_a_twenty_turn_run_opens_one_connection(api: MessagesAPI) -> None:
    twenty_turns(api)
    result = reader(model_for(api)).run("Read twenty files.")
    assert (result.reason, result.turns) == ("success", 20)
    assert api.connections == 1
    assert api.settled_connections() == 0  # closed with the run's event loop


def test_a_twenty_turn_arun_opens_one_connection_and_later_runs_reuse_it(api: MessagesAPI) -> None:
    twenty_turns(api)
    twenty_turns(api)
    agent = reader(model_for(api))

    async def go() -> list[Any]:
        return [await agent.arun("Read twenty files."), await agent.arun("Again.")]

    results = asyncio.run(go())
    assert [(r.reason, r.turns) for r in results] == [("success", 20)] * 2
    assert len(api.requests) == 40 and api.connections == 1
    assert api.settled_connections() == 0


def test_runs_in_separate_event_loops_never_share_a_connection(api: MessagesAPI) -> None:
    api.then = message(done())
    agent = reader(model_for(api))
    assert [agent.run(f"task {i}").reason for i in range(3)] == ["success"] * 3
    assert len(api.requests) == 3 and api.connections == 3  # one per loop, none sent twice
    assert api.settled_connections() == 0


def test_count_tokens_is_about_four_characters_a_token() -> None:
    assert count_tokens("x" * 398) == 100  # 400 characters with the quotes


def test_the_context_window_comes_from_the_model_table(api: MessagesAPI) -> None:
    assert model_for(api).context_window == 1_000_000
    assert AnthropicModel("claude-haiku-4-5", api_key=KEY, base_url=api.url).context_window == 200_000
    assert AnthropicModel("claude-unknown-9", api_key=KEY, base_url=api.url).context_window is None


def test_the_model_id_defaults_to_endstate_model(api: MessagesAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENDSTATE_MODEL", raising=False)
    assert AnthropicModel(api_key=KEY, base_url=api.url).name == "claude-sonnet-5-5"
    monkeypatch.setenv("ENDSTATE_MODEL", "claude-opus-5-5")
    assert AnthropicModel(api_key=KEY, base_url=api.url).name == "claude-opus-5-5"


def test_chat_spans_and_the_token_metric_carry_cache_tokens(api: MessagesAPI) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from prometheus_client import CollectorRegistry

    from agent import CompositeHooks
    from telemetry import MetricsHooks, TracingHooks
    from telemetry import names as n

    exporter, provider, registry = InMemorySpanExporter(), TracerProvider(), CollectorRegistry()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks = CompositeHooks((TracingHooks(provider), MetricsHooks(registry)))
    api.enqueue(message(reading(1), input_tokens=None), message(done(), input_tokens=None))
    assert reader(model_for(api), hooks=hooks).run("Read.").reason == "success"
    provider.shutdown()

    chats = sorted(
        (s for s in exporter.get_finished_spans() if s.name == f"chat {MODEL}"),
        key=lambda s: s.start_time or 0,
    )
    attrs = [dict(s.attributes or {}) for s in chats]
    usage = api.usages
    assert [a[n.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] for a in attrs] == [
        u["cache_read_input_tokens"] for u in usage
    ]
    assert [a[n.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] for a in attrs] == [
        u["cache_creation_input_tokens"] for u in usage
    ]
    assert all(a[n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] > 0 for a in attrs)
    labels = {
        "agent": "reader",
        "task_type": "default",
        "gen_ai_operation_name": "chat",
        "gen_ai_provider_name": "anthropic",
        "gen_ai_request_model": MODEL,
    }
    read_sum = registry.get_sample_value(
        "gen_ai_client_token_usage_sum", {**labels, "gen_ai_token_type": "cache_read"}
    )
    assert read_sum == sum(u["cache_read_input_tokens"] for u in usage) > 0


def test_a_stream_that_stalls_past_the_client_timeout_is_a_transient_timeout(api: MessagesAPI) -> None:
    api.enqueue(message(text("word " * 100), stream_delay=1.0))
    with pytest.raises(TransientModelError) as caught:
        complete(model_for(api, timeout=0.3), ask("hi"))
    assert caught.value.error_type == "timeout"


def test_a_max_tokens_above_the_models_maximum_output_is_refused_before_any_call(api: MessagesAPI) -> None:
    with pytest.raises(ModelError) as caught:
        complete(model_for(api), ask("hi", max_tokens=200_000))
    assert caught.value.error_type == "bad_request" and not isinstance(caught.value, TransientModelError)
    assert "maximum output of 128,000" in str(caught.value) and api.requests == []
