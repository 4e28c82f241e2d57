"""Content capture of a long history: each message converted and redacted once, its JSON as before.

Every model call's span converted and redacted the history again, as far back as its newest 64 kB:
some 700 redactions a call in a run of short tool results, 20 ms a turn at 2,000 turns.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import Agent, Budget, ProgressDetector, StopReason, tool
from agent.content import Image
from agent.models import ScriptedModel, call, finish, say
from telemetry import Redactor, TracingHooks, _content
from telemetry import names as n
from telemetry.redact import REDACTED

KEY = "sk-ant-api03-PLANTEDsecretKEY0123456789"
ENV_SECRET = "hunter2-env-value-of-a-secret"
REDACTOR = Redactor(secrets=(ENV_SECRET,))
PNG = b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", 64, 48) + bytes(range(48))


def old_messages_json(messages: list[dict[str, Any]], redact: Any) -> str:
    """`messages_json` as it was before messages were kept: every message converted at every call
    (the oracle: the JSON a span shows must not change by a byte)."""
    kept: list[str] = []
    size = 2
    for m in reversed(messages):
        text = json.dumps(_content._message(m.get("role", "user"), m.get("content"), redact))
        size += len(text) + 2
        if kept and size > _content.MAX_JSON_CHARS:
            break
        kept.append(text)
    return "[" + ", ".join(reversed(kept)) + "]"


class Counting:
    """A redactor that counts the texts it is handed."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, text: str) -> str:
        self.calls += 1
        return REDACTOR(text)


@tool
def ping(i: str) -> str:
    """Answer at once."""
    return f"pong {i}"


def redactions_a_turn(turns: int) -> float:
    """The texts content capture redacts a turn in a run of `turns` cheap tool calls."""
    redact = Counting()
    hooks = TracingHooks(TracerProvider(), capture_content=True, redact=redact)
    steps = [[call("ping", i=str(i))] for i in range(turns)] + [[finish("done", "ok")]]
    agent = Agent(
        "pinger",
        ScriptedModel(steps),
        tools=[ping],
        hooks=hooks,
        budget=Budget(max_turns=turns + 1, max_seconds=None),
        progress=lambda: ProgressDetector(max_idle_turns=None),
    )
    assert agent.run("ping").reason is StopReason.SUCCESS
    return redact.calls / turns


def test_a_model_calls_capture_redacts_only_the_messages_no_call_converted_before() -> None:
    """Each turn adds two messages (the reply, its result): that is all a call converts, however
    long the history (before: every message of the last 64 kB, 100 a turn at 100 turns, 300 at 600)."""
    few, many = redactions_a_turn(100), redactions_a_turn(600)
    assert many <= few + 0.5
    assert many <= 15  # its tool's span (arguments, result) and its reply's span too


def history(turns: int, result: str = "pong") -> list[dict[str, Any]]:
    """Messages as the loop sends them: the task, then a tool call and its result a turn."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(turns):
        use = {"type": "tool_use", "id": f"toolu_{i:06d}", "name": "ping", "input": {"i": str(i)}}
        done = {"type": "tool_result", "tool_use_id": f"toolu_{i:06d}", "content": f"{result} {i}"}
        messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [done]}]
    return messages


def test_a_call_at_2000_turns_converts_the_new_messages_and_keeps_no_more_than_it_shows() -> None:
    redact = Counting()
    convert = _content.HistoryJson(redact)
    convert(history(1999))
    redact.calls = 0
    shown = convert(history(2000))
    assert shown == old_messages_json(history(2000), REDACTOR)
    assert redact.calls <= 5  # the new call's name, argument and JSON, and its result
    assert len(convert._kept) <= len(json.loads(shown)) + 1  # what the window shows, and one past it


def thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": "c2lnbmF0dXJl"}


def image(data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def varied(turn: int, size: int) -> list[dict[str, Any]]:
    """A turn's messages with text, thinking, tool calls (odd values too), results with secrets and
    images; `size` characters of result."""
    arguments = {"n": turn, "f": -0.0 if turn % 2 else 0.0, "flag": turn % 3 == 0, "one": 1.0, "none": None}
    secret = f"password: swordfish {turn}\nkey {KEY} env {ENV_SECRET} mail a{turn}@example.com "
    return [
        {"role": "assistant", "content": [thinking(f"plan {turn} {KEY}"), say(f"turn {turn}")]},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "ZW5j"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"t{turn}", "name": "get", "input": arguments | {"token": KEY}},
                {"type": "tool_use", "id": f"u{turn}", "name": "get", "input": {"q": [1, True, "x"], "n": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": f"t{turn}", "content": secret + "r" * size},
                {
                    "type": "tool_result",
                    "tool_use_id": f"u{turn}",
                    "content": [say("a caption"), image("iVBORw0K" * (turn + 1))],
                    "is_error": True,
                },
            ],
        },
        {"role": "user", "content": f"note {turn}: Bearer abc.def-{turn}"},
    ]


def test_the_json_is_the_same_as_before_under_and_over_the_cap() -> None:
    """A growing history, each call on one converter, is written as the old conversion wrote it;
    messages that are equal in Python but not in JSON (`0.0`, `-0.0`; `1`, `1.0`, `True`) are not
    mixed up, and a message changed in place is converted again."""
    for size in (10, 9_000):  # under the cap throughout; over it within a few turns
        redact = Counting()
        convert = _content.HistoryJson(redact)
        messages: list[dict[str, Any]] = [{"role": "user", "content": f"go {KEY}"}]
        for turn in range(16):
            messages += varied(turn, size)
            if turn == 6:  # an image the API would now refuse: its block becomes a note
                messages[4]["content"][1]["content"][1] = say("[an image not sent]")
            shown = convert(messages)
            assert shown == old_messages_json(messages, REDACTOR)
            assert KEY not in shown and ENV_SECRET not in shown and "swordfish" not in shown
        assert (f"go {REDACTED}" in shown) is (size < 1000)  # the oldest left out past the cap


def test_a_value_that_is_no_json_is_converted_each_time() -> None:
    """A value whose text only `str` tells (a set, an object) is not kept: its text could change."""

    class Shown:
        text = "first"

        def __str__(self) -> str:
            return self.text

    value = Shown()
    use = {"type": "tool_use", "id": "t", "name": "x", "input": {"v": value}}
    messages = [{"role": "assistant", "content": [use]}]
    convert = _content.HistoryJson(REDACTOR)
    assert "first" in convert(messages)
    value.text = "second"
    assert convert(messages) == old_messages_json(messages, REDACTOR)
    assert "second" in convert(messages)


@tool
def shot(page: str) -> Any:
    """Read a page and take a picture of it."""
    return [Image.from_bytes(PNG), f"page {page} {KEY} password: swordfish\n" + "p" * 3_000]


def test_every_model_calls_span_shows_the_history_as_before() -> None:
    """A run with capture: each chat span's input messages are the old conversion's of the messages
    that call was sent (text, thinking, tool calls, text and image results, secrets; past the cap)."""
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    steps = [[thinking(f"look {i}"), say(f"page {i}"), call("shot", page=f"{i} {KEY}")] for i in range(20)]
    model = ScriptedModel([*steps, [finish("done", "ok")]])
    hooks = TracingHooks(provider, capture_content=True, redact=REDACTOR)
    agent = Agent("reader", model, tools=[shot], hooks=hooks)
    assert agent.run(f"Read {ENV_SECRET}.").reason is StopReason.SUCCESS
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith(n.SPAN_CHAT)]
    shown = [str((s.attributes or {})[n.GEN_AI_INPUT_MESSAGES]) for s in chats]
    assert shown == [old_messages_json(r.messages, REDACTOR) for r in model.requests]
    assert REDACTED in shown[-1] and "not captured" in shown[-1]
    assert "Read " in shown[0] and "Read " not in shown[-1]  # the oldest left out past the cap
    assert not any(KEY in s or ENV_SECRET in s or "swordfish" in s for s in shown)
