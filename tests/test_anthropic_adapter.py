"""The Anthropic adapter, through the real `anthropic` SDK against a local Messages API server."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from messages_api import MessagesAPI, error, hang, message, text, tool_use
from ports import refused_port

from agent import Agent, Budget, ModelError, RetryPolicy, RunObserver, TransientModelError, tool
from agent.finish import FINISH_SPEC
from agent.hooks import RunInfo
from agent.models.anthropic import AnthropicModel, retry_after
from agent.models.base import Model, ModelReply, ModelRequest, StopKind

MODEL = "claude-haiku-4-5"  # a current model id: the SDK warns about deprecated ones
KEY = "sk-ant-test-key"
FAST = RetryPolicy(max_attempts=4, base_delay=0.01, max_delay=0.05, jitter=False)
SLOW_S = 30.0  # a bound that tells a wait the client cut short (0.2 s) from one it did not, under load


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI() as server:
        yield server


def model_for(api: MessagesAPI, **options: Any) -> AnthropicModel:
    return AnthropicModel(MODEL, api_key=KEY, base_url=api.url, **options)


def complete(model: AnthropicModel, request: ModelRequest) -> ModelReply:
    return asyncio.run(model.complete(request))


def failure(model: AnthropicModel, request: ModelRequest | None = None) -> ModelError:
    with pytest.raises(ModelError) as caught:
        complete(model, request or ask("hi"))
    return caught.value


def ask(content: Any) -> ModelRequest:
    return ModelRequest.of_messages("", [{"role": "user", "content": content}], [], 256)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def done(note: str = "ok") -> dict[str, Any]:
    return tool_use("finish", {"kind": "done", "note": note})


class Attempts(RunObserver):
    """Records each model attempt's outcome: a reply or the error raised."""

    def __init__(self) -> None:
        self.outcomes: list[ModelReply | BaseException | None] = []

    def run_started(self, info: RunInfo) -> RunObserver:
        return self

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None:
        self.outcomes.append(error if reply is None else reply)

    @property
    def errors(self) -> list[tuple[str, float | None]]:
        return [(e.error_type, e.retry_after) for e in self.outcomes if isinstance(e, TransientModelError)]


def make_agent(model: AnthropicModel, **options: Any) -> Agent:
    options.setdefault("retry", FAST)
    options.setdefault("budget", Budget(max_turns=6, max_seconds=30))
    return Agent("calc", model, instructions="You add numbers.", tools=[add], **options)


# -- the model alone ----------------------------------------------------------


def test_is_a_model_named_for_semconv(api: MessagesAPI) -> None:
    model = model_for(api)
    assert isinstance(model, Model)
    assert (model.name, model.provider) == (MODEL, "anthropic")
    assert model.client.max_retries == 0


def test_request_and_reply_mapping(api: MessagesAPI) -> None:
    api.enqueue(
        message(
            text("Adding."),
            tool_use("add", {"a": 2, "b": 3}, id="toolu_B"),
            input_tokens=40,
            output_tokens=12,
            cache_read_input_tokens=100,
            cache_creation_input_tokens=7,
        )
    )
    history = [
        {"role": "user", "content": "2+3, then 1+1"},
        {"role": "assistant", "content": [tool_use("add", {"a": 1, "b": 1}, id="toolu_A")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "2"}]},
    ]
    tools = [add.spec(), FINISH_SPEC]
    reply = complete(model_for(api, cache=None), ModelRequest.of_messages("Be brief.", history, tools, 300))

    assert reply.content == [
        {"type": "text", "text": "Adding."},
        {"type": "tool_use", "id": "toolu_B", "name": "add", "input": {"a": 2, "b": 3}},
    ]
    assert reply.tool_calls[0].arguments == {"a": 2, "b": 3}
    assert (reply.input_tokens, reply.output_tokens) == (40 + 100 + 7, 12)
    assert (reply.cache_read_input_tokens, reply.cache_creation_input_tokens) == (100, 7)
    assert reply.extra == {"cache_read_input_tokens": 100, "cache_creation_input_tokens": 7}
    assert reply.time_to_first_token is not None and reply.time_to_first_token > 0
    assert (reply.stop_reason, reply.model) == ("tool_use", MODEL)
    assert reply.response_id.startswith("msg_test_")

    (sent,) = api.requests
    assert sent.path == "/v1/messages"
    assert sent.body == {
        "model": MODEL,
        "max_tokens": 300,
        "system": "Be brief.",
        "tools": tools,
        "messages": history,
        "stream": True,
    }
    assert sent.headers["authorization"] == f"Bearer {KEY}"  # this SDK sends the key as a bearer token
    assert sent.headers["anthropic-version"]
    assert sent.headers["x-stainless-retry-count"] == "0"


def test_empty_system_tools_and_content_are_left_out(api: MessagesAPI) -> None:
    api.enqueue(message(text("fine")))
    history = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": []},  # the API sometimes answers with no blocks
        {"role": "user", "content": "Use a tool or call finish."},
    ]
    reply = complete(model_for(api, cache=None), ModelRequest.of_messages("", history, [], 50))
    assert reply.text == "fine"
    assert api.bodies == [
        {"model": MODEL, "max_tokens": 50, "messages": [history[0], history[2]], "stream": True}
    ]


def test_thinking_blocks_are_kept_to_send_back(api: MessagesAPI) -> None:
    thinking = {"type": "thinking", "thinking": "2 and 3 make 5", "signature": "sig=="}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    api.enqueue(message(thinking, redacted, tool_use("add", {"a": 2, "b": 3}, id="toolu_T")), message(done()))
    model = model_for(api)
    first = complete(model, ask("2+3"))
    assert first.content[:2] == [thinking, redacted]

    result = [{"type": "tool_result", "tool_use_id": "toolu_T", "content": "5"}]
    history = [*ask("2+3").messages, {"role": "assistant", "content": first.content}]
    complete(model, ModelRequest.of_messages("", [*history, {"role": "user", "content": result}], [], 256))
    assert api.bodies[1]["messages"][1]["content"] == first.content


def test_other_blocks_are_kept_whole(api: MessagesAPI) -> None:
    server_call = tool_use("web_search", {"query": "x"}, id="srvtoolu_1") | {"type": "server_tool_use"}
    api.enqueue(message(server_call, text("found")))
    assert complete(model_for(api), ask("search")).content == [server_call, text("found")]


def test_a_max_tokens_the_sdk_only_streams_succeeds(api: MessagesAPI) -> None:
    # Without streaming, the SDK refuses to send a max_tokens above about 21,000.
    api.enqueue(message(text("a long answer"), output_tokens=31_000))
    reply = complete(model_for(api), ModelRequest.of_messages("", ask("write a lot").messages, [], 32_000))
    assert (reply.text, reply.output_tokens) == ("a long answer", 31_000)
    assert api.bodies[0]["max_tokens"] == 32_000 and api.bodies[0]["stream"] is True


def test_truncated_tool_call_is_never_returned(api: MessagesAPI) -> None:
    api.enqueue(message(text("Writing it."), tool_use("add", {"a": 2}), stop_reason="max_tokens"))
    reply = complete(model_for(api), ask("2+3"))
    assert reply.tool_calls == []
    assert reply.stop_reason == "max_tokens"
    assert reply.extra["truncated_tool_use"] == "add"
    assert reply.content[0] == {"type": "text", "text": "Writing it."}
    assert "max_tokens" in reply.content[1]["text"] and "not run" in reply.content[1]["text"]


# Every stop reason the Messages API documents (and `compaction`, the server-side compaction beta's
# pause), each with the kind the loop decides on; the provider's word is kept as it came.
DOCUMENTED_STOPS = [
    ("end_turn", "end_turn", StopKind.END),
    ("stop_sequence", "stop_sequence", StopKind.END),
    ("tool_use", "tool_use", StopKind.TOOL_USE),
    ("max_tokens", "max_tokens", StopKind.MAX_TOKENS),
    ("model_context_window_exceeded", "model_context_window_exceeded", StopKind.CONTEXT_FULL),
    ("pause_turn", "pause_turn", StopKind.PAUSED),
    ("compaction", "pause_turn", StopKind.PAUSED),
    ("refusal", "refusal", StopKind.REFUSED),
    ("a_reason_of_tomorrow", "a_reason_of_tomorrow", StopKind.OTHER),
]


@pytest.mark.parametrize(("api_stop", "kept", "kind"), DOCUMENTED_STOPS)
def test_each_stop_reason_the_api_documents_has_its_stop_kind(
    api: MessagesAPI, api_stop: str, kept: str, kind: StopKind
) -> None:
    api.enqueue(message(text("An answer."), stop_reason=api_stop))
    reply = complete(model_for(api), ask("hi"))
    assert (reply.stop_reason, reply.stop) == (kept, kind)
    assert type(reply.stop) is StopKind


@pytest.mark.parametrize(
    ("status", "error_type", "transient"),
    [
        (400, "bad_request", False),
        (401, "authentication", False),
        (403, "permission", False),
        (404, "not_found", False),
        (413, "request_too_large", False),
        (418, "api_error", False),
        (408, "timeout", True),
        (429, "rate_limit", True),
        (500, "server_error", True),
        (503, "server_error", True),
        (529, "overloaded", True),
    ],
)
def test_status_errors(api: MessagesAPI, status: int, error_type: str, transient: bool) -> None:
    api.enqueue(error(status, "the API's own words"))
    exc = failure(model_for(api))
    assert exc.error_type == error_type
    assert isinstance(exc, TransientModelError) is transient
    assert f"HTTP {status}" in str(exc) and "the API's own words" in str(exc)
    assert len(api.requests) == 1  # the SDK did not retry


def test_overloaded_message_names_the_api_error_type(api: MessagesAPI) -> None:
    api.enqueue(error(529, "Overloaded"))
    exc = failure(model_for(api))
    assert "HTTP 529 overloaded_error: Overloaded (request-id req_test_0001)" in str(exc)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after-ms": "250", "retry-after": "1"}, 0.25),
        ({}, None),
        ({"retry-after": "soon"}, None),
    ],
)
def test_rate_limit_carries_retry_after(
    api: MessagesAPI, headers: dict[str, str], seconds: float | None
) -> None:
    api.enqueue(error(429, "slow down", headers=headers))
    exc = failure(model_for(api))
    assert isinstance(exc, TransientModelError)
    assert exc.retry_after == seconds


def test_retry_after_as_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (retry_after({"retry-after": when}) or 0) <= 30
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert retry_after({"retry-after": past}) == 0.0


def test_timeout_is_transient(api: MessagesAPI) -> None:
    api.enqueue(hang(120))
    started = time.monotonic()
    exc = failure(model_for(api, timeout=0.2))
    assert isinstance(exc, TransientModelError) and exc.error_type == "timeout"
    assert "timeout" in str(exc) and api.url in str(exc)
    assert time.monotonic() - started < SLOW_S  # not the reply's 120 s


def test_connection_refused_is_transient() -> None:
    port = refused_port()  # nothing listens there, and nothing can start to
    model = AnthropicModel(MODEL, api_key=KEY, base_url=f"http://127.0.0.1:{port}")
    exc = failure(model)
    assert isinstance(exc, TransientModelError) and exc.error_type == "connection"
    assert f"127.0.0.1:{port}" in str(exc)


def test_injected_client_has_its_retries_turned_off(api: MessagesAPI) -> None:
    api.then = error(500, "down")

    async def go() -> ModelError:
        async with anthropic.AsyncAnthropic(api_key=KEY, base_url=api.url, max_retries=3) as client:
            model = AnthropicModel(MODEL, client=client)
            assert model.client.max_retries == 0 and client.max_retries == 3
            with pytest.raises(ModelError) as caught:
                await model.complete(ask("hi"))
            return caught.value

    assert asyncio.run(go()).error_type == "server_error"
    assert len(api.requests) == 1


def test_configuration_errors(api: MessagesAPI, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from agent import ConfigError

    with pytest.raises(ConfigError, match="not both"):
        AnthropicModel(MODEL, client=anthropic.AsyncAnthropic(api_key=KEY), api_key=KEY)
    with pytest.raises(ConfigError, match="model id"):
        AnthropicModel("", api_key=KEY)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no profile on disk either
    with pytest.raises(ConfigError, match="no credentials: pass api_key= or set ANTHROPIC_API_KEY"):
        AnthropicModel(MODEL, base_url=api.url)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="cannot build its client: Config file not found"):
        AnthropicModel(MODEL, base_url=api.url)


# -- whole runs through the loop ---------------------------------------------------


def test_tool_use_round_trip(api: MessagesAPI) -> None:
    api.enqueue(
        message(text("Let me add."), tool_use("add", {"a": 2, "b": 3}, id="toolu_1"), input_tokens=50),
        message(done("5"), input_tokens=80, output_tokens=9),
    )
    result = make_agent(model_for(api)).run("What is 2+3?")

    assert (result.reason, result.output, result.turns) == ("success", "5", 2)
    assert (result.input_tokens, result.output_tokens) == (130, 14)
    assert result.error_type is None
    first, second = api.bodies
    marker = {"type": "ephemeral"}  # prompt caching is on by default
    assert first["model"] == MODEL
    assert first["system"] == [{"type": "text", "text": "You add numbers.", "cache_control": marker}]
    assert [t["name"] for t in first["tools"]] == ["add", "finish"]
    assert first["tools"][1] == FINISH_SPEC | {"cache_control": marker} and FINISH_SPEC["strict"] is True
    assert first["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is 2+3?", "cache_control": marker}]}
    ]
    assert second["messages"][1]["content"][1]["id"] == "toolu_1"
    assert second["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5", "cache_control": marker}
        ],
    }


def test_retries_transient_errors_then_succeeds(api: MessagesAPI) -> None:
    api.enqueue(
        error(429, "rate limited", headers={"retry-after": "0"}),
        error(529, "Overloaded", headers={"retry-after": "0"}),
        message(done(), input_tokens=20, output_tokens=4),
    )
    attempts = Attempts()
    # Backoff alone would wait a minute; the retry-after of 0 is what keeps this run short.
    slow = RetryPolicy(max_attempts=5, base_delay=60, max_delay=60, jitter=False)
    started = time.monotonic()
    result = make_agent(model_for(api), hooks=attempts, retry=slow).run("go")

    assert time.monotonic() - started < SLOW_S  # not the backoff's 60 s
    assert (result.reason, result.turns, result.error_type) == ("success", 1, None)
    assert (result.input_tokens, result.output_tokens) == (20, 4)
    assert len(api.requests) == 3
    assert attempts.errors == [("rate_limit", 0.0), ("overloaded", 0.0)]


def test_backoff_without_retry_after(api: MessagesAPI) -> None:
    api.enqueue(error(529, "Overloaded"), error(503, "unavailable"), message(done()))
    attempts = Attempts()
    result = make_agent(model_for(api), hooks=attempts).run("go")
    assert result.reason == "success" and len(api.requests) == 3
    assert attempts.errors == [("overloaded", None), ("server_error", None)]


def test_persistent_server_error_ends_in_error(api: MessagesAPI) -> None:
    api.then = error(500, "Internal server error")
    result = make_agent(model_for(api)).run("go")

    assert (result.reason, result.error_type, result.turns) == ("error", "server_error", 1)
    assert len(api.requests) == FAST.max_attempts
    assert (result.input_tokens, result.output_tokens) == (0, 0)
    assert f"after {FAST.max_attempts} attempts" in result.note and "HTTP 500" in result.note


def test_bad_request_ends_in_error_without_retries(api: MessagesAPI) -> None:
    api.then = error(400, "messages.0.content: Field required")
    result = make_agent(model_for(api)).run("go")

    assert (result.reason, result.error_type, result.turns) == ("error", "bad_request", 1)
    assert len(api.requests) == 1
    assert "HTTP 400" in result.note and "messages.0.content: Field required" in result.note


def test_server_that_never_answers_times_out_then_errors(api: MessagesAPI) -> None:
    api.then = hang(120)
    attempts = Attempts()
    started = time.monotonic()
    # 1 s, not 0.2: each attempt must reach the server to be counted there, and on a loaded machine
    # (load 25 on 2 cores) a 0.2 s timeout once passed before an attempt's request was sent
    result = make_agent(model_for(api, timeout=1.0), hooks=attempts, retry=FAST).run("go")

    assert time.monotonic() - started < SLOW_S  # not a reply's 120 s, four times
    assert (result.reason, result.error_type, result.turns) == ("error", "timeout", 1)
    assert (
        api.received(FAST.max_attempts) == FAST.max_attempts
    )  # the last may be read after the client gave up
    assert attempts.errors == [("timeout", None)] * FAST.max_attempts


def test_truncated_tool_call_is_not_run_and_the_run_goes_on(api: MessagesAPI) -> None:
    api.enqueue(
        message(tool_use("add", {"a": 2}), stop_reason="max_tokens", output_tokens=256),
        message(done("gave a shorter call")),
    )
    calls: list[dict[str, Any]] = []

    @tool
    def record(a: int, b: int) -> str:
        """Record a call."""
        calls.append({"a": a, "b": b})
        return "recorded"

    agent = Agent("calc", model_for(api), tools=[record], retry=FAST, budget=Budget(max_turns=5))
    result = agent.run("go")

    assert (result.reason, result.turns) == ("success", 2)
    assert calls == []
    sent = api.bodies[1]["messages"]
    assert sent[1]["content"][0]["type"] == "text" and "cut off" in sent[1]["content"][0]["text"]
    assert sent[2]["role"] == "user"  # the loop's nudge


def test_one_model_serves_runs_in_separate_event_loops(api: MessagesAPI) -> None:
    # `Agent.run` makes a new event loop per run; a kept-alive connection from the
    # previous loop would be re-sent or leaked (the server keeps connections alive).
    api.then = message(done())
    agent = make_agent(model_for(api))
    results = [agent.run(f"task {i}") for i in range(3)]
    assert [r.reason for r in results] == ["success"] * 3
    assert len(api.requests) == 3
