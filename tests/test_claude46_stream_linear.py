"""A long reply streams in time linear in its length: through the real `anthropic` SDK against the local
Messages API server, with the work counted (never timed).

The SDK's stream helper (`messages.stream()`) merged each delta as it came: it copied the block's whole
text (or thinking) again on every `text_delta`, and parsed the whole input JSON again on every
`input_json_delta`; the adapter's own gathering of what the SDK leaves alone (an unknown block's input
JSON, a compaction's summary) added each piece to the string so far. Each made a reply of n deltas cost
about n²/2 piece-copies.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import anthropic
import anthropic.lib.streaming._messages as sdk_stream
import pydantic
import pytest
from messages_api import MessagesAPI, events_of, message, streamed, text, tool_use
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent.models.anthropic import AnthropicModel, _StreamWatch
from agent.models.base import ModelRequest

MODEL = "claude-haiku-4-5"
PIECES = 1_500  # deltas a block: the server streams 40 characters each
LONG = "".join(f"{i:039d}\n" for i in range(PIECES))  # 60,000 characters, in 1,500 deltas


@pytest.fixture
def api() -> Iterator[MessagesAPI]:
    with MessagesAPI() as server:
        yield server


class SdkWork:
    """What the SDK's accumulation copies or parses: for each text or thinking delta, the block's text
    so far and the piece (its `+=`); for each input JSON delta, the input so far and the piece (the
    buffer it parses again, whole)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.copied = 0
        accumulate = sdk_stream.accumulate_event

        def counted(**kwargs: Any) -> Any:
            self.copied += _cost(kwargs["event"], kwargs["current_snapshot"], kwargs["json_bufs"])
            return accumulate(**kwargs)

        monkeypatch.setattr(sdk_stream, "accumulate_event", counted)


def _cost(event: Any, snapshot: Any, json_bufs: dict[int, bytes]) -> int:
    if getattr(event, "type", None) != "content_block_delta" or snapshot is None:
        return 0
    delta, block = event.delta, snapshot.content[event.index]
    if delta.type == "text_delta":
        return len(getattr(block, "text", "")) + len(delta.text)
    if delta.type == "thinking_delta":
        return len(getattr(block, "thinking", "")) + len(delta.thinking)
    if delta.type == "input_json_delta":
        return len(json_bufs.get(event.index, b"")) + len(delta.partial_json)
    return 0


REQUEST = ModelRequest.of_messages("", [{"role": "user", "content": "Write."}], [], 4096)


def complete(api: MessagesAPI) -> Any:
    model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
    return asyncio.run(model.complete(REQUEST))


def test_a_long_text_thinking_and_call_input_are_merged_in_linear_work(
    api: MessagesAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    thinking = {"type": "thinking", "thinking": LONG, "signature": "sig=="}
    call = tool_use("save", {"body": LONG[: 40 * PIECES - 20]}, id="toolu_1")
    api.enqueue(message(thinking, text(LONG), call))
    work = SdkWork(monkeypatch)
    reply = complete(api)
    assert reply.content == [thinking, text(LONG), call]  # the same reply, whole
    streamed_chars = 2 * len(LONG) + len(json.dumps(call["input"]))
    assert work.copied >= streamed_chars  # the SDK did merge them all: the counter is in its path
    assert work.copied <= 2 * streamed_chars  # n²/2 pieces before: 137 million characters


def test_an_input_json_that_is_not_json_is_still_unreadable_and_retried(api: MessagesAPI) -> None:
    # The SDK raised at the delta that broke the JSON; held, the pieces raise when their block ends.
    events = events_of(message(tool_use("save", {"body": "x" * 400}, id="toolu_1")))
    broken = [
        (name, {**data, "delta": {"type": "input_json_delta", "partial_json": "}{"}})
        if name == "content_block_delta" and i == 3
        else (name, data)
        for i, (name, data) in enumerate(events)
    ]
    assert broken != events
    api.enqueue(streamed(*broken))
    model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
    with pytest.raises(Exception) as caught:
        asyncio.run(model.complete(REQUEST))
    assert getattr(caught.value, "error_type", None) == "malformed_reply", caught.value


def test_the_sdks_own_span_of_the_call_still_shows_its_output(api: MessagesAPI) -> None:
    # An injected client traced by the SDK in content mode: its stream helper shared the message it
    # built with the call's span; the adapter, reading the raw stream, shares its own.
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    body = LONG[: 40 * 50]
    api.enqueue(message(text(body), tool_use("save", {"body": body}, id="toolu_1")))
    traced: Any = {"tracer_provider": provider, "traces": {"content_mode": "content"}}

    async def call() -> None:
        client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=api.url, open_telemetry=traced)
        try:
            await AnthropicModel(MODEL, client=client).complete(REQUEST)
        finally:
            await client.close()

    asyncio.run(call())
    (span,) = exporter.get_finished_spans()
    (output,) = json.loads(str(span.attributes["gen_ai.output.messages"]))
    assert output["parts"] == [
        {"type": "text", "content": body},
        {"type": "tool_call", "id": "toolu_1", "name": "save", "arguments": {"body": body}},
    ]


class Piece(str):
    """A streamed piece that counts what `+` copies when it is added to the string so far."""

    copied = 0

    def __radd__(self, other: str) -> str:
        Piece.copied += len(other) + len(self)
        return str.__add__(other, self)


class Snapshot:
    """The SDK's message so far, as `_StreamWatch` reads it: the blocks begun."""

    def __init__(self, *blocks: Any) -> None:
        self.content = list(blocks)


class Block:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class UnknownDelta(pydantic.BaseModel):
    """A delta of a type the SDK drops, as the SDK reads it: a model whose fields `_merge` dumps."""

    type: str
    content: Any  # kept as given: a `Piece`

    def model_dump(self, **_: Any) -> dict[str, Any]:  # type: ignore[override]
        return {"type": self.type, "content": self.content}


def test_the_adapters_own_gathering_of_pieces_is_linear() -> None:
    watch = _StreamWatch(0.0)
    watch.snapshot = Snapshot(Block(type="mcp_tool_use"), Block(type="compaction", content=None))  # type: ignore[assignment]
    pieces = ['{"q": "', *(f"{i:039d}," for i in range(PIECES)), '"}']
    Piece.copied = 0
    for piece in pieces:
        watch._gather(0, Block(type="input_json_delta", partial_json=Piece(piece)))
        watch._gather(1, UnknownDelta(type="compaction_delta", content=Piece(piece)))
    whole = "".join(pieces)
    assert watch.fields() == {0: {"input": json.loads(whole)}, 1: {"content": whole}}
    assert Piece.copied <= 4 * len(whole)  # n²/2 pieces before: 90 million characters


@pytest.mark.parametrize("sdk", ["moved", "gone"])
def test_an_sdk_without_the_accumulation_is_read_by_its_own_stream_helper(
    api: MessagesAPI, monkeypatch: pytest.MonkeyPatch, sdk: str
) -> None:
    # `accumulate_event` lives in a private module of the SDK: a later release may move or rename
    # it. The reply is then read by the SDK's own `messages.stream()`, as before, not refused.
    import agent.models.anthropic as adapter

    # its module without it (renamed), or no such module (moved): the helper itself keeps its own
    monkeypatch.setattr(adapter, "_sdk_stream", SimpleNamespace() if sdk == "moved" else None)
    helper_calls = []
    stream = anthropic.resources.messages.AsyncMessages.stream

    def counted(self: Any, **kwargs: Any) -> Any:
        helper_calls.append(kwargs["model"])
        return stream(self, **kwargs)

    monkeypatch.setattr(anthropic.resources.messages.AsyncMessages, "stream", counted)
    thinking = {"type": "thinking", "thinking": LONG[:4000], "signature": "sig=="}
    call = tool_use("save", {"body": LONG[:2000]}, id="toolu_1")
    api.enqueue(message(thinking, text(LONG[:4000]), call))
    reply = complete(api)
    assert reply.content == [thinking, text(LONG[:4000]), call]
    assert helper_calls == [MODEL]  # read by the SDK's helper (it was a bare AttributeError before)
