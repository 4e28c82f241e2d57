"""Red-team checks of the Claude adapter: whole runs through the real `anthropic` SDK against the
local Messages API server, answered every way the API can answer."""

from __future__ import annotations

import json
from typing import Any

from messages_api import MessagesAPI, Response, dropped, error, message, text, tool_use

from agent import Agent, Approval, Budget, RetryPolicy, Snapshot, StopReason, tool
from agent.models.anthropic import AnthropicModel

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
RAN: list[dict[str, Any]] = []


@tool
def write(path: str, body: str) -> str:
    """Write a file."""
    RAN.append({"path": path, "body": body})
    return f"wrote {path}"


@tool(needs_approval=True)
def deploy(target: str) -> str:
    """Deploy (a person approves first)."""
    RAN.append({"deploy": target})
    return f"deployed {target}"


DONE = tool_use("finish", {"kind": "done", "note": "ok"})
THINKING = {"type": "thinking", "thinking": "Let me think: 2+3=5.", "signature": "c2lnbmF0dXJl=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}


def agent_for(api: MessagesAPI, **options: Any) -> Agent:
    model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
    budget = options.pop("budget", Budget(max_turns=10, max_seconds=60))
    tools = options.pop("tools", [write, deploy])
    return Agent("red", model, tools=tools, budget=budget, retry=FAST, **options)


def run(*responses: Response, **options: Any) -> tuple[Any, MessagesAPI]:
    RAN.clear()
    with MessagesAPI(*responses) as api:
        return agent_for(api, **options).run("Do the task."), api


@tool
def read(page: int) -> str:
    """Read one page of a long document."""
    return f"page {page}: " + "lorem ipsum " * 1_700


def test_a_tool_call_cut_by_a_full_context_window_is_never_run() -> None:
    reads = [message(tool_use("read", {"page": i}), input_tokens=None) for i in range(5)]
    cut = tool_use("write", {"path": "a.txt", "body": "half"})
    full = message(text("Writing"), cut, stop_reason="model_context_window_exceeded", input_tokens=None)
    RAN.clear()
    with MessagesAPI(*reads, full, message(DONE)) as api:
        result = agent_for(api, tools=[read, write]).run("Read, then write.")
    assert RAN == []  # its arguments may be cut off: never run
    assert result.reason is StopReason.SUCCESS, result.note
    assert "was cut off and was not run" in json.dumps(api.bodies[6]["messages"][-2])


def test_an_unknown_block_type_is_kept_verbatim_and_sent_back() -> None:
    future = {"type": "future_block", "payload": {"x": 1}}
    result, api = run(
        message(future, tool_use("write", {"path": "a", "body": "b"}, id="toolu_F")), message(DONE)
    )
    assert result.reason is StopReason.SUCCESS, result.note
    assert api.bodies[1]["messages"][1]["content"][0] == future


def test_an_empty_reply_is_nudged_and_the_run_goes_on() -> None:
    result, _ = run(message(), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert result.turns == 2


def test_thinking_survives_a_suspension_and_the_request_after_resume_equals_an_uninterrupted_one() -> None:
    call = tool_use("deploy", {"target": "prod"}, id="toolu_D")
    first = message(THINKING, REDACTED, text("deploying"), call)
    with MessagesAPI(first, message(DONE)) as api:
        agent = agent_for(api)
        RAN.clear()
        paused = agent.run("Deploy.")
        assert paused.reason is StopReason.NEED_HELP, paused.note
        snap = Snapshot.from_json(json.loads(json.dumps(paused.snapshot.to_json())))
        resumed = agent.resume(snap, Approval())
        assert resumed.reason is StopReason.SUCCESS, resumed.note
        assert RAN == [{"deploy": "prod"}]
        after = api.bodies[1]["messages"]
    assert after[1]["content"][:3] == [THINKING, REDACTED, {"type": "text", "text": "deploying"}]
    assert after[2]["content"][0]["tool_use_id"] == "toolu_D"


def test_auth_error_is_an_error_stop() -> None:
    result, api = run(error(401, "invalid x-api-key"))
    assert result.reason is StopReason.ERROR and result.error_type == "authentication"
    assert len(api.requests) == 1


def test_an_empty_or_blank_text_block_in_a_reply_is_not_sent_back() -> None:
    # The API refuses a request holding a text block without non-whitespace text.
    call = tool_use("write", {"path": "a", "body": "b"})
    result, api = run(message(text(""), call), message(text(" \n"), DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert [b["type"] for b in api.bodies[1]["messages"][1]["content"]] == ["tool_use"]


def test_a_reply_of_blank_text_only_is_nudged() -> None:
    result, api = run(message(text("  ")), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert [m["role"] for m in api.bodies[1]["messages"]] == ["user", "user"]


def test_a_connection_broken_mid_stream_is_retried_and_the_run_goes_on() -> None:
    result, api = run(dropped(), message(DONE, input_tokens=100, output_tokens=7))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2
    assert result.input_tokens == 10 + 100  # the broken call's input was sent and counted by the API


def test_input_and_max_tokens_over_the_window_go_to_the_history_policy() -> None:
    # Models before Claude 4.5 refuse a request whose input plus max_tokens exceeds the window.
    over = error(
        400,
        "input length and `max_tokens` exceed context limit: 187254 + 20000 > 200000, "
        "decrease input length or `max_tokens` and try again",
    )
    reads = [message(tool_use("read", {"page": i}), input_tokens=None) for i in range(5)]
    with MessagesAPI(*reads, over, message(DONE)) as api:
        result = agent_for(api, tools=[read]).run("Read the pages.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 7
    assert "was cleared to save context" in json.dumps(api.bodies[6]["messages"])


def test_a_retry_after_that_is_no_number_of_seconds_falls_back_to_the_backoff() -> None:
    # "inf" would sleep for ever (no time budget), "nan" breaks the wait; neither is valid HTTP.
    for value in ("inf", "nan", "-5", "Infinity"):
        busy = error(429, "rate limited", headers={"retry-after": value})
        result, api = run(busy, message(DONE), budget=Budget(max_turns=5, max_seconds=None))
        assert result.reason is StopReason.SUCCESS, (value, result.note)
        assert len(api.requests) == 2
