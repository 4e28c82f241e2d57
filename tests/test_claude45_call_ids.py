"""Tool call ids the API refuses back: one an earlier call of the conversation has, and one of other
characters than its pattern (`^[a-zA-Z0-9_-]+$`). Before, such a reply was kept and its call run, and
the next request, which sends the call back, was refused with a 400: the run ended as error after the
tool had run. Now the reply is malformed (retried, charged) and its call never runs. Whole runs
through the real `anthropic` SDK against the local Messages API server, which refuses both as the
API does."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from messages_api import MessagesAPI, Response, message, text, tool_use

from agent import Agent, Budget, RetryPolicy, StopReason, tool
from agent.models.anthropic import AnthropicModel

MODEL = "claude-haiku-4-5"  # $1 input, $5 output per million tokens
FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02, jitter=False)
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
WROTE: list[str] = []


@tool
def write(path: str, body: str) -> str:
    """Write a file."""
    WROTE.append(path)
    return f"wrote {path}"


def run(*responses: Response) -> tuple[Any, MessagesAPI]:
    WROTE.clear()
    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
        agent = Agent("ids", model, tools=[write], budget=Budget(max_turns=6, max_seconds=120), retry=FAST)
        return agent.run("Write the files."), api


def call_ids(body: dict[str, Any]) -> list[str]:
    return [
        block["id"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_use"
    ]


def test_the_test_api_refuses_a_repeated_or_misspelt_call_id_as_the_api_does() -> None:
    answered = [{"type": "tool_result", "tool_use_id": "toolu_A", "content": "ok"}]
    repeated = [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": [tool_use("write", {"path": "a", "body": "b"}, id="toolu_A")]},
        {"role": "user", "content": answered},
        {"role": "assistant", "content": [tool_use("write", {"path": "c", "body": "d"}, id="toolu_A")]},
        {"role": "user", "content": answered},
    ]
    misspelt = [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": [tool_use("write", {}, id="call:1")]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call:1", "content": "ok"}]},
    ]
    with MessagesAPI() as api:
        client = anthropic.Anthropic(base_url=api.url, api_key="sk-ant-test", max_retries=0)
        for messages, said in ((repeated, "ids must be unique"), (misspelt, "should match pattern")):
            with pytest.raises(anthropic.BadRequestError, match=said):
                client.messages.create(model=MODEL, max_tokens=100, messages=messages)  # type: ignore[arg-type]
        client.close()


def test_a_call_reusing_an_earlier_calls_id_is_retried_never_run() -> None:
    first = message(tool_use("write", {"path": "a.txt", "body": "1"}, id="toolu_A"))
    reused = message(tool_use("write", {"path": "b.txt", "body": "2"}, id="toolu_A"))
    fresh = message(tool_use("write", {"path": "b.txt", "body": "2"}, id="toolu_B"))
    result, api = run(first, reused, fresh, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert WROTE == ["a.txt", "b.txt"]  # the call with the reused id never ran
    assert len(api.requests) == 4
    assert call_ids(api.bodies[3]) == ["toolu_A", "toolu_B"]
    assert result.input_tokens == 40  # the retried reply was billed, and is counted
    assert result.turns == 3


def test_a_call_id_the_api_refuses_back_is_retried_never_run_and_then_an_error_saying_why() -> None:
    bad = tool_use("write", {"path": "a.txt", "body": "1"}, id="call:1")
    result, api = run(message(bad), message(text("Writing."), bad), message(bad))
    assert result.reason is StopReason.ERROR
    assert result.error_type == "malformed_reply"
    assert "'call:1'" in result.note and "letters, digits, _ and -" in result.note, result.note
    assert WROTE == []
    assert len(api.requests) == 3  # each attempt's request was good; no call of that id went back
    assert "call:1" not in json.dumps(api.bodies)
    assert result.input_tokens == 30


def test_a_misspelt_call_id_then_a_good_one_goes_on() -> None:
    bad = message(tool_use("write", {"path": "a.txt", "body": "1"}, id="toolu 01"))
    good = message(tool_use("write", {"path": "a.txt", "body": "1"}, id="toolu_01"))
    result, api = run(bad, good, message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert WROTE == ["a.txt"]
    assert call_ids(api.bodies[2]) == ["toolu_01"]
