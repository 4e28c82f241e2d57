"""Content blocks in tool results: checked when made, kept by the journal and the snapshot, cut by
the history policy as text only, seen by the scripted model, and never captured as base64."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import re
import struct
from typing import Any

import pytest
from media_files import pdf, pdf_with_object_stream
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import (
    Agent,
    ContentError,
    Document,
    HistoryPolicy,
    Image,
    SearchResult,
    SnapshotError,
    StopReason,
    ToolOutput,
    ToolReference,
    tool,
)
from agent._codec import decode_entry, encode_entry, need
from agent.content import MAX_IMAGE_BASE64, api_block, blocks_of, parse_block, pdf_pages, text_of
from agent.context import RunContext
from agent.durable.store._sql import entry_json
from agent.history import CLEARED
from agent.journal import Call, Reply, Result, Shrunk, Task
from agent.models import ModelRequest, ScriptedModel, call, finish
from agent.models._messages import messages_of
from agent.tools import execute
from telemetry import TracingHooks

PNG = b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", 64, 48) + bytes(range(48))  # 72 bytes
JPEG = b"\xff\xd8\xff\xc0" + struct.pack(">HBHHB", 17, 8, 48, 64, 3) + bytes(15)
PNG64 = base64.b64encode(PNG).decode()


def image_dict(media_type: str = "image/png", data: str = PNG64) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


@pytest.mark.parametrize(
    ("block", "says"),
    [
        ({"type": "video", "source": {}}, "type 'video' is not a tool result block"),
        ({"type": "image"}, "the field 'source' is missing"),
        (image_dict(data="not base64!"), "data is not base64"),
        (image_dict(media_type="image/bmp"), "media_type 'image/bmp' is not one the API takes"),
        (image_dict(media_type="image/jpeg"), "data holds image/png, but media_type says image/jpeg"),
        (image_dict(data="A" * (MAX_IMAGE_BASE64 + 4)), "over the 10,485,760 the API takes"),
        (
            {"type": "image", "source": {"type": "file", "file_id": "f1"}},
            "source type 'file' is not taken: use base64 or url (a file needs",
        ),
        ({"type": "image", "source": {"type": "url", "url": "ftp://x"}}, "url must be an http(s) URL"),
        ({"type": "text", "text": 5}, "the field 'text' must be text"),
        (
            {"type": "text", "text": "x", "cache_control": {}},
            "fields ['cache_control'] are not taken (taken: ['text', 'type']); cache_control: the Claude "
            "adapter places the request's cache breakpoints itself",
        ),
        ({"type": "search_result", "source": "s", "title": "t", "content": "x"}, "a list of text blocks"),
        (
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": PNG64},
            },
            "no PDF",
        ),
    ],
)
def test_a_block_the_api_would_refuse_is_refused_saying_what_is_wrong(
    block: dict[str, Any], says: str
) -> None:
    with pytest.raises(ContentError, match=".*".join(map(_escaped, says.split("'")))):
        parse_block(block)


def _escaped(text: str) -> str:
    return re.escape(text)


def test_bytes_that_are_no_bytes_are_a_content_error_saying_what_to_pass() -> None:
    """`Image.from_bytes("shot.png")` raised a bare TypeError from inside the media type sniffing."""
    with pytest.raises(ContentError, match=r"from_bytes takes the image's bytes, not str: .*Image.from_file"):
        Image.from_bytes("shot.png")  # type: ignore[arg-type]
    with pytest.raises(ContentError, match=r"from_pdf takes the PDF's bytes, not str"):
        Document.from_pdf("report.pdf")  # type: ignore[arg-type]
    assert Image.from_bytes(bytearray(PNG)) == Image.from_bytes(PNG)


def test_a_block_dict_without_citations_has_them_off_as_the_api_reads_it() -> None:
    passages = [{"type": "text", "text": "p"}]
    found = parse_block({"type": "search_result", "source": "s", "title": "t", "content": passages})
    assert found == SearchResult("s", "t", ("p",), citations=False)


@pytest.mark.parametrize(
    "block",
    [
        "plain text",
        Image.from_bytes(PNG),
        Image.from_bytes(JPEG),
        Image(url="https://example.com/a.png"),
        Document.from_pdf(b"%PDF-1.7 ...", title="Report", citations=True),
        Document(text="a plain document", title="Notes", context="from the wiki"),
        Document(url="https://example.com/a.pdf"),
        SearchResult("https://kb/1", "Refunds", ("Five days.", "Ask support."), citations=False),
        ToolReference("weather"),
    ],
)
def test_every_block_goes_to_the_apis_shape_and_back_unchanged(block: Any) -> None:
    assert parse_block(json.loads(json.dumps(api_block(block)))) == block


@tool
def shot(kind: str) -> Any:
    """Take a picture."""
    if kind == "bad":
        return ToolOutput(image_dict(media_type="image/tiff"))
    if kind == "made-bad":
        return Image(PNG64, "image/gif")  # raises in the tool's own body
    if kind == "list":
        return ["a caption", Image.from_bytes(PNG), ""]  # blank text is left out
    if kind == "strings":
        return ["a", "b"]
    return Image.from_bytes(PNG if kind == "png" else JPEG)


def outcome(kind: str) -> Any:
    return asyncio.run(execute(shot, {"kind": kind}, RunContext("r", "a", "t", "default")))


def test_text_returns_are_unchanged_and_a_list_of_blocks_keeps_its_captions() -> None:
    strings = outcome("strings")
    assert (strings.text, strings.blocks) == ('["a", "b"]', ())  # JSON, as before
    listed = outcome("list")
    assert listed.blocks == ("a caption", Image.from_bytes(PNG)) and not listed.is_error
    assert listed.text.startswith("a caption\n[image image/png, 72 bytes, crc32 ")


@pytest.mark.parametrize("kind", ["bad", "made-bad"])
def test_a_bad_block_returned_or_made_in_the_tool_is_its_error_result_naming_it(kind: str) -> None:
    got = outcome(kind)
    assert (got.is_error, got.error_type, got.blocks) == (True, "bad_content", ())
    assert got.text.startswith("Error: tool 'shot' returned a content block the API would refuse: ")


def test_two_different_images_read_differently_as_text() -> None:
    assert (outcome("png")).text != (outcome("jpeg")).text  # progress tells them apart
    assert PNG64 not in (outcome("png")).text


def image_result(*extra: Any) -> Result:
    blocks = ("look:", Image.from_bytes(PNG), *extra)
    return Result("toolu_1", text_of(blocks), False, "shot", "seen", blocks)


def test_a_result_of_blocks_round_trips_through_the_codec_written_in_the_apis_shape() -> None:
    result = image_result(SearchResult("s", "t", ("p",)))
    encoded = encode_entry(result)
    assert encoded["blocks"][1] == image_dict()
    back = decode_entry(json.loads(json.dumps(encoded)), 0)
    assert back == result and hash(back) == hash(result)
    assert decode_entry(encoded | {"text": "stale"}, 0) == result  # the text is made from the blocks


def test_a_release_before_blocks_reads_a_stored_result_of_blocks_as_its_text() -> None:
    """A rolling deploy: an older service over the same store reads new rows. Its result decoder
    (as of e70a792) needs `text` and passes other fields by."""
    stored = json.loads(entry_json(image_result()))  # a journal row as the SQL stores write it
    older = Result(
        need(stored, "call_id", str),
        need(stored, "text", str),
        need(stored, "is_error", bool, False),
        need(stored, "ran", str | None, None),
        need(stored, "seen", str, ""),
    )
    assert older == dataclasses.replace(image_result(), blocks=())


def test_a_stored_block_that_cannot_be_read_is_a_snapshot_error_naming_it() -> None:
    encoded = encode_entry(image_result()) | {"blocks": [image_dict(media_type="image/bmp")]}
    with pytest.raises(SnapshotError, match=r"journal\[3\] \(result\): a result's content block .*image/bmp"):
        decode_entry(encoded, 3)


def test_a_text_result_is_written_as_before() -> None:
    assert encode_entry(Result("c", "x")) == {"type": "result", "call_id": "c", "text": "x"}


def test_the_cap_cuts_the_text_of_blocks_and_keeps_the_image_whole() -> None:
    long = SearchResult("s", "t", ("x" * 300, "y" * 300))
    (shown,) = HistoryPolicy(max_result_chars=400).shown(image_result(long))
    image = Image.from_bytes(PNG)
    assert shown.blocks[:2] == ("look:", image)
    cut = shown.blocks[2]
    assert isinstance(cut, SearchResult) and cut.content == ("x" * 300, "y" * 95)
    assert "was cut from 605 to 400 characters" in str(shown.blocks[3])
    assert shown.text == text_of(shown.blocks)


def test_a_short_result_of_blocks_is_sent_as_it_is_and_a_cleared_one_drops_them() -> None:
    policy = HistoryPolicy(max_result_chars=400)
    result = image_result()
    assert policy.shown(result) == [result]
    (cleared,) = policy.shown(result, clear=True)
    assert cleared.blocks == () and cleared.text == CLEARED.format(held="5 characters, 1 image")


def run_with_image(**options: Any) -> tuple[ScriptedModel, Any]:
    model = ScriptedModel([[call("shot", kind="list")], [finish("done", "seen")]])
    agent = Agent("eyes", model, tools=[shot], **options)
    return model, agent.run("Look.")


def test_the_scripted_model_sees_the_blocks_as_sent_and_in_the_journal() -> None:
    model, result = run_with_image()
    assert result.reason is StopReason.SUCCESS
    messages = model.requests[1].messages
    (sent,) = [
        b for m in messages if m["role"] == "user" and isinstance(m["content"], list) for b in m["content"]
    ]
    assert sent["content"] == [{"type": "text", "text": "a caption"}, image_dict()]
    blocks = [e.blocks for e in model.requests[1].journal if isinstance(e, Result)]
    assert blocks == [("a caption", Image.from_bytes(PNG))]  # typed, in the request's journal too


def test_content_capture_shows_a_placeholder_with_media_type_and_size_never_the_data() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _, result = run_with_image(hooks=TracingHooks(provider, capture_content=True))
    assert result.reason is StopReason.SUCCESS
    provider.shutdown()
    values = [str(v) for s in exporter.get_finished_spans() for v in (s.attributes or {}).values()]
    assert not any(PNG64[:40] in v for v in values)
    assert any("image/png, about 72 bytes, not captured" in v for v in values)  # the model's input
    assert any("[image image/png, 72 bytes" in v for v in values)  # the tool's span


def test_a_request_made_from_messages_reads_a_tool_results_blocks() -> None:
    messages = [
        {"role": "user", "content": "Look."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [image_dict()]}],
        },
    ]
    request = ModelRequest.of_messages("", messages, [], 100)
    assert request.messages == messages
    (result,) = [e for e in request.journal if isinstance(e, Result)]
    assert (result.blocks, result.ran) == ((Image.from_bytes(PNG),), "shot")


def _png_of(width: int, height: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", width, height) + bytes(9)


def _jpeg_of(width: int, height: int, fill: bytes = b"") -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + bytes(14)  # a segment before the frame header
    frame = b"\xff\xc2" + struct.pack(">HBHHB", 17, 8, height, width, 3) + bytes(15)
    return b"\xff\xd8" + app0 + fill + frame  # fill: 0xFF bytes a marker may follow


def _webp_of(width: int, height: int) -> bytes:
    sizes = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + bytes(4) + b"WEBPVP8X" + bytes(8) + sizes + bytes(4)


@pytest.mark.parametrize(
    "raw",
    [
        _png_of(1280, 15_000),  # a full-page screenshot
        _jpeg_of(9_000, 600),
        b"GIF89a" + struct.pack("<HH", 8_001, 10) + bytes(8),
        _webp_of(4_000, 8_192),
    ],
)
def test_an_image_over_8000_pixels_a_side_is_refused_naming_its_size(raw: bytes) -> None:
    with pytest.raises(ContentError, match=r"\d+x\d+ pixels, over the 8000 a side the API takes: downscale"):
        Image.from_bytes(raw)


@pytest.mark.parametrize(
    "raw",
    [_png_of(8_000, 8_000), _jpeg_of(1_920, 1_080), _webp_of(1, 1), _jpeg_of(64, 48, fill=b"\xff\xff")],
)
def test_an_image_up_to_8000_pixels_a_side_is_taken(raw: bytes) -> None:
    assert Image.from_bytes(raw).data == base64.b64encode(raw).decode()


def test_fill_bytes_before_a_jpeg_frame_header_do_not_hide_its_size() -> None:
    with pytest.raises(ContentError, match="9000x600 pixels"):
        Image.from_bytes(_jpeg_of(9_000, 600, fill=b"\xff\xff\xff"))


@pytest.mark.parametrize(
    "raw",
    [
        b"\x89PNG\r\n\x1a\n",  # the signature alone: a cut download
        PNG[:20],
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I4s", 13, b"IDAT") + bytes(30),  # no IHDR first
        _png_of(0, 0),
        b"\xff\xd8\xff",
        b"\xff\xd8\xff\xe0\x00\x00" + b"\xff" * 20,  # a segment length of 0
        b"\xff\xd8\xff\xe0\x00\x10" + bytes(14) + b"\x00" * 20,  # no marker after the segment
        b"GIF89a\x00\x00\x00\x00" + bytes(8),
        b"RIFF" + bytes(4) + b"WEBPVP8Z" + bytes(20),
    ],
)
def test_an_image_whose_header_gives_no_size_is_refused_as_the_api_would_refuse_it(raw: bytes) -> None:
    with pytest.raises(ContentError, match=r"header gives no size \(a truncated or damaged file\?\)"):
        Image.from_bytes(raw)


@pytest.mark.parametrize(
    "url", ["https://", "http:///a.png", "https://a.example/x y.png", "https://a.example/\n", "https://[::1/"]
)
def test_an_image_or_document_url_the_api_cannot_fetch_is_refused(url: str) -> None:
    for make in (lambda: Image(url=url), lambda: Document(url=url)):
        with pytest.raises(ContentError, match=r"url must be an http\(s\) URL"):
            make()


@pytest.mark.parametrize("content", [5, b"bytes", {"passage": "p"}])
def test_search_result_content_of_another_type_is_refused_naming_it(content: Any) -> None:
    with pytest.raises(ContentError, match=f"not {type(content).__name__}"):
        SearchResult("s", "t", content)


def test_past_compact_at_clearing_old_screenshots_is_enough_when_they_free_the_room() -> None:
    """Clearing a result frees the tokens of its image, not only of its short text: 48 old screenshots
    cleared free some 77,000 tokens, enough to get 180,000 under 60% of a 200,000 window."""
    journal: list[Any] = [Task("t")]
    for i in range(50):
        journal += [Reply((Call(f"c{i}", "shot", {"kind": "png"}),), input_tokens=180_000), image_result()]
        journal[-1] = dataclasses.replace(journal[-1], call_id=f"c{i}")
    step = HistoryPolicy(keep_last=2).due(journal, 200_000)
    assert step == Shrunk(upto=len(journal))  # a clear, not a compaction


def test_past_compact_at_clearing_old_pdfs_is_enough_when_their_pages_free_the_room() -> None:
    """A PDF is priced by its pages (text and an image a page), not as one image: 4 old 30-page PDFs
    cleared free some 370,000 tokens, enough to get 450,000 under 60% of a 400,000 window (priced as an
    image each, they freed 6,400, and the older turns were compacted)."""
    manual = Document.from_pdf(pdf(30), title="Manual")
    journal: list[Any] = [Task("t")]
    for i in range(6):
        journal += [Reply((Call(f"c{i}", "read", {"part": i}),), input_tokens=360_000)]
        journal += [Result(f"c{i}", text_of((manual,)), blocks=(manual,))]
    step = HistoryPolicy(keep_last=2).due(journal, 400_000)
    assert step == Shrunk(upto=len(journal))  # a clear, not a compaction


def test_past_100_images_the_oldest_are_sent_as_notes_and_the_request_holds_100() -> None:
    journal: list[Any] = [Task("Watch the screen.")]
    for k in range(103):
        journal.append(Reply((call_part(f"c{k}"),)))
        shot = Image.from_bytes(_png_of(10 + k, 10))
        journal.append(Result(f"c{k}", text_of((shot,)), blocks=(shot,)))
    sent = [b for m in messages_of(journal) if isinstance(m["content"], list) for b in m["content"]]
    kinds = [r["content"][0]["type"] for r in sent if r["type"] == "tool_result"]
    assert kinds == ["text"] * 3 + ["image"] * 100
    assert sent[1]["content"][0]["text"].startswith("[an image not sent: a request takes at most 100 images")


def call_part(call_id: str) -> Call:
    return Call(call_id, "shot", {"kind": call_id})


LARGE = Image.from_bytes(_png_of(1_000, 1_000) + bytes(3_800_000))  # 5,066,712 characters of base64


def test_past_24_mb_of_images_in_a_request_the_oldest_are_sent_as_notes() -> None:
    journal: list[Any] = [Task("Watch the screen.")]
    for k in range(6):
        journal += [Reply((call_part(f"c{k}"),)), Result(f"c{k}", "shot", blocks=(f"shot {k}", LARGE))]
    sent = [b for m in messages_of(journal)[1:] for b in m["content"] if b["type"] == "tool_result"]
    kinds = [r["content"][1]["type"] for r in sent]
    assert kinds == ["text"] * 2 + ["image"] * 4  # 4 x 5.07 MB fit in 24 MB, a fifth would not
    assert sent[0]["content"][1]["text"].startswith("[an image not sent: with it the request's images")


@pytest.mark.parametrize(
    ("blocks", "says"),
    [
        ((Image.from_bytes(PNG),) * 101, "101 images in one result, over the 100 a request takes"),
        ((LARGE,) * 5, "images of 25,333,560 characters of base64 in one result, over the 25,165,824"),
    ],
)
def test_a_result_no_request_could_carry_is_refused_naming_why(blocks: tuple[Any, ...], says: str) -> None:
    with pytest.raises(ContentError, match=re.escape(says)):
        blocks_of(ToolOutput(*blocks))


@pytest.mark.parametrize(
    ("raw", "pages"),
    [
        (pdf(3), 3),
        (pdf_with_object_stream(7), 7),  # the page tree compressed, as PDF 1.5 writers keep it
        (pdf(2).replace(b"/Count 2", b""), 2),  # no count: its page objects
        (b"%PDF-1.7 ...", None),  # no page tree to read
        (pdf_with_object_stream(7).replace(b"stream\n", b"stream\nbroken"), None),  # not inflated
    ],
)
def test_a_pdfs_pages_are_read_from_its_page_tree(raw: bytes, pages: int | None) -> None:
    assert pdf_pages(raw) == pages
    assert Document.from_pdf(raw).pages == pages


def test_a_pdf_of_more_pages_than_any_request_takes_is_refused_naming_them() -> None:
    with pytest.raises(ContentError, match=r"a PDF of 601 pages, over the 600 a request takes: split it"):
        Document.from_pdf(pdf(601))


def test_a_result_of_more_pdf_pages_than_a_request_takes_is_refused() -> None:
    with pytest.raises(ContentError, match=r"PDFs of 900 pages in one result, over the 600 a request takes"):
        blocks_of(ToolOutput(Document.from_pdf(pdf(450)), Document.from_pdf(pdf(450))))
