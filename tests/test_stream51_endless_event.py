"""One server-sent event that never ends (its `data:` lines go on with no blank line after them, or
one `data:` line goes on with no newline) is cut as a `malformed_reply` once it holds more than any
event of a real reply (`_MOST_EVENT_BYTES`), or once gathering it would make the SDK's decoder copy
more than reading a few such events does (`_MOST_EVENT_COPIES`: it copies all it holds of an event
for each line it appends): retried, then the run's `error`, what the call used counted. Before, the
SDK's decoder gathered such an event (copying quadratically) until the client's read timeout, its
memory and CPU growing all the while. A real reply whose one event carries a fetched page of 24 MB,
sent in pieces of 16 KiB, is read whole; the decoder gives the same events through `_event_bytes`,
however the network cuts a body, and what it holds is what `_Gathered` tallies."""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from anthropic._streaming import SSEDecoder
from messages_api import MessagesAPI, Response, endless_event, events_of, message, streamed, text, tool_use

from agent import Agent, Budget, RetryPolicy, RunResult, StopReason
from agent.models.anthropic import (
    _EVENT_ENDS,
    _MOST_EVENT_BYTES,
    _MOST_EVENT_COPIES,
    AnthropicModel,
    _event_bytes,
    _Gathered,
)

MODEL = "claude-haiku-4-5"
FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
# The client's read timeout: what ended such a stream before (the adapter's watchdog: no event for
# this long), so that the run on the code before ends; far past what a cut takes on a loaded machine.
TIMEOUT = 60.0
MOST = 300 * 2**20  # the bytes of the endless event the server sends at the most, then ends the body
SOCKETS = 20 * 2**20  # what the sockets may hold besides what the client read: a few MB, said generously
CUT = "cut as an event that never ends"
DONE = tool_use("finish", {"kind": "done", "note": "ok"})


def run_against(*responses: Response) -> tuple[RunResult, MessagesAPI]:
    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url, timeout=TIMEOUT)
        agent = Agent(
            "endless", model, max_tokens=1_024, budget=Budget(max_turns=2, max_seconds=900), retry=FAST
        )
        return agent.run("Answer."), api


def assert_cut(result: RunResult, api: MessagesAPI, words: str) -> None:
    assert result.reason is StopReason.ERROR, result.note
    assert result.error_type == "malformed_reply", result.note
    assert words in result.note and CUT in result.note
    assert len(api.requests) == FAST.max_attempts  # retried as the retry policy says, then the error
    assert result.input_tokens == 10 * FAST.max_attempts  # what each cut call used is counted


def held_at_cut(line: int) -> int:
    """The most bytes of an event of `line`-byte lines gathered before its cut: the lines whose copying
    (each copies all held before it and itself) first passes `_MOST_EVENT_COPIES`, else the byte bound."""
    lines = math.isqrt(2 * _MOST_EVENT_COPIES // line) + 2
    return min(lines * line, _MOST_EVENT_BYTES) + line


@pytest.mark.parametrize("line", [8, 1_000, 1_000_000])
def test_an_event_whose_data_lines_never_end_is_cut(line: int) -> None:
    result, api = run_against(*(endless_event(line, MOST) for _ in range(FAST.max_attempts)))
    assert_cut(result, api, "lines")
    assert api.endless_sent < FAST.max_attempts * (held_at_cut(line) + SOCKETS) < MOST


def test_an_event_of_one_data_line_that_never_ends_is_cut_at_the_byte_bound() -> None:
    result, api = run_against(*(endless_event(None, MOST) for _ in range(FAST.max_attempts)))
    assert_cut(result, api, f"over {_MOST_EVENT_BYTES:,} bytes")
    assert api.endless_sent < FAST.max_attempts * (_MOST_EVENT_BYTES + SOCKETS) < MOST


FETCH = {
    "type": "server_tool_use",
    "id": "srvtoolu_F1",
    "name": "web_fetch",
    "input": {"url": "https://a.test/"},
}


def fetched(page: str) -> dict[str, Any]:
    """The result of `FETCH`: `page`, whole."""
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": page}}
    return {
        "type": "web_fetch_tool_result",
        "tool_use_id": "srvtoolu_F1",
        "content": {
            "type": "web_fetch_result",
            "url": "https://a.test/",
            "retrieved_at": "2026-12-05T17:00:00Z",
            "content": document,
        },
    }


def test_a_real_event_of_a_large_fetched_page_in_small_pieces_is_read_whole() -> None:
    """The page comes whole in its block's start, one `data:` line of 24 MB, in pieces of 16 KiB (a TLS
    record's most): each piece is no line of its own to the decoder, so it is neither cut nor copied
    for each piece."""
    page = "fetched words " * (24 * 2**20 // 14)  # 24 MB: with the rest of the request, under its 32 MB
    usage = {"server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 1}}
    reply = message(FETCH, fetched(page), text("The page says so."), usage=usage)
    result, api = run_against(streamed(*events_of(reply), chunk_bytes=2**14), message(DONE))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2  # never retried
    sent_back = api.bodies[1]["messages"][1]["content"]
    assert [b["type"] for b in sent_back] == ["server_tool_use", "web_fetch_tool_result", "text"]
    assert sent_back[1]["content"]["content"]["source"]["data"] == page


# What bodies are made of, to cut anywhere: every way `SSEDecoder` reads a line's end, and an event's.
PARTS = [b"\r", b"\n", b"\r\n", b"\n\n", b"data: ", b"data: {}\n\n", b"event: x", b"id: 1", b":", b"x"]


async def _pieces(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def _events(chunks: AsyncIterator[bytes]) -> list[tuple[str | None, str, str | None]]:
    return [(sse.event, sse.data, sse.id) async for sse in SSEDecoder().aiter_bytes(chunks)]


def _held_after(pieces: list[bytes]) -> list[int]:
    """What `SSEDecoder._aiter_chunks` holds after each piece (its own steps, without its copying)."""
    held, after = b"", []
    for piece in pieces:
        for line in piece.splitlines(keepends=True):
            held = b"" if (held + line).endswith(_EVENT_ENDS) else held + line
        after.append(len(held))
    return after


def test_the_decoder_gives_the_same_events_through_event_bytes_and_holds_what_is_tallied() -> None:
    asyncio.run(_same_events_and_tally(random.Random(51), bodies=1_000))


async def _same_events_and_tally(rng: random.Random, bodies: int) -> None:
    for _ in range(bodies):
        body = b"".join(rng.choice(PARTS) for _ in range(rng.randint(0, 40)))
        cuts = sorted(rng.sample(range(1, len(body)), min(rng.randint(0, 8), max(len(body) - 1, 0))))
        chunks = [body[i:j] for i, j in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        given = [piece async for piece in _event_bytes(_pieces(chunks))]
        assert await _events(_pieces(given)) == await _events(_pieces(chunks)), chunks
        gathered = _Gathered(_MOST_EVENT_BYTES, _MOST_EVENT_COPIES)
        for piece, held in zip(given, _held_after(given), strict=True):
            if not gathered.whole(piece):
                gathered.take(piece, 0)
            assert gathered.held == held, (given, piece)
