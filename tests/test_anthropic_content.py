"""Tool results of content blocks (images, documents, search results) through the real `anthropic`
SDK against the local Messages API server: what the API receives, across a suspension kept in both
stores, and a bad block refused as the tool's error, not a 400."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import sqlite3
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pg
import pytest
from media_files import png
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Approval, Budget, Image, SearchResult, StopReason, ToolOutput, ToolReference, tool
from agent.durable.store import Lease, NewRun, Outcome, RunStore, open_store
from agent.journal import Result
from agent.models.anthropic import AnthropicModel

MODEL = "claude-haiku-4-5"


SHOT = png(4, 3)


@tool
def screenshot(page: str) -> ToolOutput:
    """A screenshot of a page."""
    return ToolOutput(f"the page {page}", Image.from_bytes(SHOT))


@tool
def search(query: str) -> list[object]:
    """Search the knowledge base."""
    return [SearchResult("https://kb.example/refunds", "Refunds", ["Refunds take 5 days.", "Ask support."])]


@tool
def bad_shot(page: str) -> ToolOutput:
    """A screenshot with the wrong media type."""
    return ToolOutput(
        {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "Qk0="}}
    )


@tool(needs_approval=True)
def publish(page: str) -> str:
    """Publish a page."""
    return f"published {page}"


def model(api: MessagesAPI) -> AnthropicModel:
    return AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)


def agent(api: MessagesAPI, *tools: Any, **options: Any) -> Agent:
    budget = Budget(max_turns=6, max_seconds=None)
    return Agent("pages", model(api), tools=list(tools), budget=budget, **options)


def results_sent(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of a request body."""
    return [
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]


DONE = tool_use("finish", {"kind": "done", "note": "ok"})
EXPECTED_IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(SHOT).decode()},
}


def test_an_image_result_reaches_the_api_as_the_tool_results_content_blocks() -> None:
    with MessagesAPI(message(tool_use("screenshot", {"page": "home"}, id="toolu_a")), message(DONE)) as api:
        result = agent(api, screenshot).run("Look at the home page.")
    assert result.reason is StopReason.SUCCESS, result.note
    (sent,) = results_sent(api.bodies[1])
    assert sent["tool_use_id"] == "toolu_a"
    assert sent["content"] == [{"type": "text", "text": "the page home"}, EXPECTED_IMAGE]


def test_a_search_result_is_sent_as_the_api_documents_it_with_citations_on() -> None:
    with MessagesAPI(message(tool_use("search", {"query": "refunds"})), message(DONE)) as api:
        result = agent(api, search).run("How long do refunds take?")
    assert result.reason is StopReason.SUCCESS, result.note
    (sent,) = results_sent(api.bodies[1])
    assert sent["content"] == [
        {
            "type": "search_result",
            "source": "https://kb.example/refunds",
            "title": "Refunds",
            "content": [
                {"type": "text", "text": "Refunds take 5 days."},
                {"type": "text", "text": "Ask support."},
            ],
            "citations": {"enabled": True},
        }
    ]


def test_a_bad_block_is_the_tools_error_result_and_the_run_goes_on_without_a_400() -> None:
    with MessagesAPI(message(tool_use("bad_shot", {"page": "home"})), message(DONE)) as api:
        result = agent(api, bad_shot).run("Look at the home page.")
    assert result.reason is StopReason.SUCCESS, result.note
    (sent,) = results_sent(api.bodies[1])
    assert sent["is_error"] is True
    assert "tool 'bad_shot'" in sent["content"] and "image/bmp" in sent["content"]
    assert "image/png" in sent["content"]  # what it may be instead


@tool
def lookup(query: str) -> SearchResult:
    """Look a page up in the wiki."""
    return SearchResult("wiki/7", "Receipts", "Refunds need a receipt.", citations=False)


def test_search_results_with_citations_on_and_off_are_all_sent_as_the_first_so_the_api_takes_them() -> None:
    """The API refuses a request whose search results mix citations on and off ("all-or-nothing")."""
    replies = (message(tool_use("search", {"query": "refunds"})), message(tool_use("lookup", {"query": "r"})))
    with MessagesAPI(*replies, message(DONE)) as api:
        result = agent(api, search, lookup).run("How do refunds work?")
    assert result.reason is StopReason.SUCCESS, result.note
    found = [b for r in results_sent(api.bodies[2]) for b in r["content"] if b["type"] == "search_result"]
    assert [b["title"] for b in found] == ["Refunds", "Receipts"]
    assert [b["citations"] for b in found] == [{"enabled": True}] * 2  # the first one's setting


@tool
def snap(n: int) -> Image:
    """Screenshot number n: the first a wide banner of 2100 pixels, the others small."""
    return Image.from_bytes(png(2100, 1) if n == 0 else png(4 + n, 3))


def test_past_20_images_one_over_2000_pixels_is_sent_as_a_note_and_the_api_takes_the_request() -> None:
    """The API takes at most 2000 px a side in a request of more than 20 images: a run of screenshots
    was refused at its 21st, and at every request after."""
    shots = [message(tool_use("snap", {"n": n}, id=f"toolu_{n}")) for n in range(22)]
    with MessagesAPI(*shots, message(DONE)) as api:
        budget = Budget(max_turns=30, max_seconds=None)
        result = Agent("pages", model(api), tools=[snap], budget=budget).run("Look at 22 screens.")
    assert result.reason is StopReason.SUCCESS, result.note
    first, *others = results_sent(api.bodies[-1])
    assert first["content"][0]["text"].startswith("[an image of 2100x1 pixels not sent: a request of more")
    assert [r["content"][0]["type"] for r in others] == ["image"] * 21
    assert results_sent(api.bodies[20])[0]["content"][0]["type"] == "image"  # 20 images: sent as it is


@tool
def find_tools(need: str) -> ToolOutput:
    """Find the tools for a need (tool search): one that exists here, one that does not."""
    return ToolOutput(f"tools for {need}:", ToolReference("snap"), ToolReference("weather"))


def test_a_reference_to_a_tool_the_request_does_not_define_is_sent_as_a_note_not_refused() -> None:
    with MessagesAPI(message(tool_use("find_tools", {"need": "screens"})), message(DONE)) as api:
        result = agent(api, find_tools, snap).run("Find a tool for screens.")
    assert result.reason is StopReason.SUCCESS, result.note
    (sent,) = results_sent(api.bodies[1])
    assert sent["content"][1:] == [
        {"type": "tool_reference", "tool_name": "snap"},
        {
            "type": "text",
            "text": "[a reference to the tool 'weather' not sent: this request defines no tool of that name]",
        },
    ]


@pytest.fixture(params=pg.BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    s = open_store(pg.url_for(request.param, tmp_path))
    yield s
    s.close()


def test_a_run_suspended_after_an_image_is_stored_resumed_and_sends_the_same_blocks(store: RunStore) -> None:
    lease = Lease("w1", 30)
    replies = (
        message(tool_use("screenshot", {"page": "home"})),
        message(tool_use("publish", {"page": "home"})),
        message(DONE),
    )
    with MessagesAPI(*replies) as api:
        saved = agent(
            api, screenshot, publish, checkpoint=lambda cp: store.checkpoint("r1", cp, lease, store.now())
        )
        store.create(NewRun("r1", "pages", "Publish the home page.", "default", {}), lease, store.now())
        waiting = saved.run("Publish the home page.", run_id="r1")
        assert waiting.reason is StopReason.NEED_HELP, waiting.note
        store.record("r1", Outcome.of(waiting), lease, store.now())
        kept = store.snapshot("r1")
        assert kept is not None
        (image_result,) = [e for e in kept.journal if isinstance(e, Result) and e.blocks]
        assert image_result.blocks == ("the page home", Image.from_bytes(SHOT))
        done = agent(api, screenshot, publish).resume(kept, Approval())
    assert done.reason is StopReason.SUCCESS, done.note
    before, after = api.bodies[1], api.bodies[2]
    assert results_sent(after)[0] == results_sent(before)[0]  # the image, as sent before the suspension
    assert results_sent(after)[0]["content"][1] == EXPECTED_IMAGE


@tool
def photo(n: int) -> ToolOutput:
    """A photo of 100,000 pixels that do not compress (stored as they are)."""
    rows = bytes((n * 7 + i * 13) % 251 for i in range(100_000))
    return ToolOutput(f"photo {n}", Image.from_bytes(png_stored(rows)))


def png_stored(pixels: bytes) -> bytes:
    """A 1000x100 grey PNG whose pixels are stored uncompressed."""
    rows = b"".join(b"\x00" + pixels[r * 1000 : (r + 1) * 1000] for r in range(100))
    head = struct.pack(">IIBBBBB", 1000, 100, 8, 0, 0, 0, 0)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(rows, 0))
        + chunk(b"IEND", b"")
    )


def test_each_checkpoint_stores_an_image_once_and_the_runs_row_and_listing_stay_small(tmp_path: Path) -> None:
    store, lease = open_store(f"sqlite:///{tmp_path / 'runs.db'}"), Lease("w1", 30)
    replies = [message(tool_use("photo", {"n": n}, id=f"toolu_{n}")) for n in range(3)]
    with MessagesAPI(*replies, message(DONE)) as api:
        looking = agent(api, photo, checkpoint=lambda cp: store.checkpoint("r1", cp, lease, store.now()))
        store.create(NewRun("r1", "pages", "Look.", "default", {}), lease, store.now())
        result = looking.run("Look.", run_id="r1")
        store.record("r1", Outcome.of(result), lease, store.now())
    assert result.reason is StopReason.SUCCESS, result.note
    with contextlib.closing(sqlite3.connect(tmp_path / "runs.db")) as db, db:
        (entries,) = db.execute("select sum(length(entry)) from endstate_entries").fetchone()
        (row,) = db.execute("select sum(length(snapshot)) from endstate_runs").fetchone()
    images = 3 * len(base64.b64encode(png_stored(bytes(100_000))))
    assert images < entries < images + 5_000  # each image once, however many checkpoints
    assert (row or 0) < 5_000
    listed = json.dumps([r.to_dict() for r in store.list_runs(None, 10)])
    assert len(listed) < 3_000 and "[image image/png, 100," in listed  # a placeholder in the summary
    store.close()


GIF64 = base64.b64encode(b"GIF89a" + bytes(20)).decode()


@pytest.mark.parametrize(
    ("block", "says"),
    [
        (
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": GIF64}},
            "does not match the media type image/png",
        ),
        (
            {"type": "image", "source": {"type": "url", "url": "https://a.example/p.png"}, "alt": "x"},
            "alt: Extra",
        ),
        ({"type": "text", "text": " "}, "text content blocks must be non-empty"),
        (
            {"type": "document", "source": {"type": "base64", "media_type": "text/plain", "data": GIF64}},
            "Input should be 'application/pdf'",
        ),
    ],
)
def test_the_test_api_refuses_result_content_the_api_refuses(block: dict[str, Any], says: str) -> None:
    """The local Messages API's own checks, independent of Endstate's: what the adapter is tested against."""
    messages = [
        {"role": "user", "content": "Look."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "snap", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [block]}]},
    ]
    with MessagesAPI(message(DONE)) as api:
        client = anthropic.Anthropic(api_key="sk-test", base_url=api.url, max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match=re.escape(says)):
            client.messages.create(model=MODEL, max_tokens=10, messages=messages)  # type: ignore[arg-type]
