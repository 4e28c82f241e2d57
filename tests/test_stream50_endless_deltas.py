"""A stream that never ends is cut whatever it repeats: deltas the output's bound does not count (a
thinking block's `signature_delta`, a text's `citations_delta`, a compaction's `compaction_delta`, a
delta of a type the SDK does not know), empty output deltas, empty blocks begun and stopped, its
`message_delta`. Each counts toward a bound (`_check_length`), past which the stream is a
`malformed_reply`, and the run ends with `error`. Before, only the run's time budget bounded such a
stream (with none, it never ended), while the SDK or `_merge` held what it sent. Events of a type a
later API adds, which nothing keeps, no longer keep the stream alive: cut at the read timeout. A real
reply carrying a long signature, citations and a fetched page far longer than its `max_tokens` is read
whole."""

from __future__ import annotations

from typing import Any

import pytest
from messages_api import MessagesAPI, Response, flood, message, text, tool_use

from agent import Agent, Budget, RetryPolicy, RunResult, StopReason
from agent.models import anthropic as anthropic_adapter
from agent.models.anthropic import (
    _DELTA_CHARS,
    _EVENT_CHARS,
    _MOST_CARRIED,
    _MOST_CHARS_PER_TOKEN,
    _MOST_SAMPLINGS,
    AnthropicModel,
)

MODEL = "claude-haiku-4-5"
ONCE = RetryPolicy(max_attempts=1)  # retries are stream49's: one cut call each here
MAX_TOKENS = 1_024
OUTPUT_BOUND = MAX_TOKENS * _MOST_SAMPLINGS * _MOST_CHARS_PER_TOKEN  # about 1.3 million characters
SOCKETS = 20 * 2**20  # what the sockets may hold besides what the client read: a few MB, said generously
DONE = tool_use("finish", {"kind": "done", "note": "ok"})
CUT_CARRIED = "more than a reply can send back in a request"
CUT_OUTPUT = "more than a reply of max_tokens 1,024 can hold"


def run_against(*responses: Response, max_tokens: int = MAX_TOKENS) -> tuple[RunResult, MessagesAPI]:
    with MessagesAPI(*responses) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url)
        agent = Agent(
            "endless", model, max_tokens=max_tokens, budget=Budget(max_turns=2, max_seconds=300), retry=ONCE
        )
        return agent.run("Answer."), api


def assert_cut(result: RunResult, words: str) -> None:
    assert result.reason is StopReason.ERROR, result.note
    assert result.error_type == "malformed_reply", result.note
    assert words in result.note
    assert result.input_tokens == 10  # what the cut call used is counted


# Each delta of 10,000 characters (its event's JSON a little more): 200 MB in all, the bound 64 MiB.
SIZE, DELTAS = 10_000, 20_000


@pytest.mark.parametrize("kind", ["signature_delta", "citations_delta", "compaction_delta", "later_delta"])
def test_an_endless_stream_of_deltas_besides_the_output_is_cut(kind: str) -> None:
    result, api = run_against(flood(DELTAS, SIZE, kind=kind))
    assert_cut(result, CUT_CARRIED)
    assert api.flood_sent < (_MOST_CARRIED + SOCKETS) // SIZE < DELTAS  # cut near the bound


def test_an_endless_stream_of_empty_text_deltas_is_cut() -> None:
    deltas = 2_000_000  # 88 bytes each on the wire, 0 characters of text: each held as a piece
    result, api = run_against(flood(deltas, 0), max_tokens=256)
    assert_cut(result, "more than a reply of max_tokens 256 can hold")
    assert (
        api.flood_sent
        < 256 * _MOST_SAMPLINGS * _MOST_CHARS_PER_TOKEN // _DELTA_CHARS + SOCKETS // 88
        < deltas
    )


LOWER = 4 * 2**20  # characters: `_MOST_CARRIED` lowered, as 64 MiB of such small events take long to read


@pytest.mark.parametrize(
    ("kind", "wire"),
    [("blocks", 150), ("message_delta", 150)],  # the bytes each sends at least: a pair, a message_delta
)
def test_an_endless_stream_of_empty_blocks_or_message_deltas_is_cut(
    kind: str, wire: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Empty blocks begun and stopped, or the same message_delta again: each event counts at least
    `_EVENT_CHARS`, so the stream is cut past `_MOST_CARRIED` whatever it holds (lowered here to keep
    the test short: what it shows is that these events count)."""
    monkeypatch.setattr(anthropic_adapter, "_MOST_CARRIED", LOWER)
    deltas = 1_000_000
    result, api = run_against(flood(deltas, 0, kind=kind))
    assert_cut(result, CUT_CARRIED)
    counted = _EVENT_CHARS * (2 if kind == "blocks" else 1)  # at least, for each flooded
    assert api.flood_sent < LOWER // counted + SOCKETS // wire < deltas


# What a real reply may carry, far past what its max_tokens bounds: a thinking block's signature
# (a few thousand characters), a text citing 200 passages of 2,000 characters, and a page the web
# fetch tool fetched (2 MB of text).
SIGNATURE = "EqQBCkYIBxgCKkD" + "x" * 12_000
CITATIONS = [
    {
        "type": "char_location",
        "cited_text": f"passage {i}: " + "cited words " * 166,
        "document_index": 0,
        "document_title": None,
        "start_char_index": 2_000 * i,
        "end_char_index": 2_000 * (i + 1),
    }
    for i in range(200)
]
FETCH = {
    "type": "server_tool_use",
    "id": "srvtoolu_F1",
    "name": "web_fetch",
    "input": {"url": "https://a.test/"},
}
PAGE = "fetched words " * 150_000
FETCHED: dict[str, Any] = {
    "type": "web_fetch_tool_result",
    "tool_use_id": "srvtoolu_F1",
    "content": {
        "type": "web_fetch_result",
        "url": "https://a.test/",
        "retrieved_at": "2026-12-05T17:00:00Z",
        "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": PAGE}},
    },
}


def test_a_real_reply_with_a_long_signature_citations_and_a_fetched_page_is_read_whole() -> None:
    thinking = {"type": "thinking", "thinking": "Read the page.", "signature": SIGNATURE}
    cited = {**text("The page says so."), "citations": CITATIONS}
    usage = {"server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 1}}
    result, api = run_against(
        message(thinking, FETCH, FETCHED, cited, usage=usage), message(DONE), max_tokens=256
    )
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 2  # never retried
    sent_back = api.bodies[1]["messages"][1]
    assert sent_back["role"] == "assistant"
    assert sent_back["content"] == [thinking, FETCH, FETCHED, cited]  # whole, as streamed
    carried = len(SIGNATURE) + sum(len(c["cited_text"]) for c in CITATIONS) + len(PAGE)
    assert carried > 256 * _MOST_SAMPLINGS * _MOST_CHARS_PER_TOKEN  # past what max_tokens bounds


def test_an_endless_stream_of_events_of_a_later_api_is_cut_at_the_read_timeout() -> None:
    """An event of a type the SDK passes on and nothing reads (a later API's) is no progress, as a
    ping is none: a stream of nothing else is cut once the client's read timeout has passed without
    an event of the reply, a transient `timeout`. Before, each fed the watchdog: never cut."""
    deltas = 1_000_000  # read whole, a minute or more: far longer than the timeout
    with MessagesAPI(flood(deltas, 10, kind="later_event")) as api:
        model = AnthropicModel(MODEL, api_key="sk-ant-test", base_url=api.url, timeout=1.0)
        agent = Agent("endless", model, max_tokens=MAX_TOKENS, budget=Budget(max_turns=2), retry=ONCE)
        result = agent.run("Answer.")
    assert result.reason is StopReason.ERROR, result.note
    assert result.error_type == "timeout", result.note
    assert "the stream sent nothing of the reply" in result.note
    assert api.flood_sent < deltas
