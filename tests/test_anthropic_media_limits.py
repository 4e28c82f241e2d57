"""What one request may carry of images and PDFs (agent.models.claude_limits), through the real
`anthropic` SDK against the local Messages API server, which refuses what the API refuses: a PDF past
the pages a request takes, or past the request's size, goes as a note naming it (oldest first), never a
400 or a 413; an image of up to 10 MB goes to the Claude API, over 5 MB not to Bedrock or Vertex AI."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import anthropic
import pytest
from media_files import pdf, png
from messages_api import MessagesAPI, message, tool_use

from agent import Agent, Budget, Document, HistoryPolicy, Image, LimitKind, StopReason, ToolOutput, tool
from agent.history import CLEARED
from agent.models.anthropic import AnthropicModel
from agent.models.claude_limits import CLAUDE_API, PARTNER_PLATFORM, MediaLimits, limits_for

MODEL = "claude-haiku-4-5"  # a 200k-token window: 100 PDF pages a request
MB = 2**20
DONE = tool_use("finish", {"kind": "done", "note": "ok"})


@tool
def report(pages: int, mb: float = 0) -> ToolOutput:
    """A report of so many pages, padded to about so many MB of base64."""
    raw = pdf(pages, pad=int(mb * MB * 3 / 4))
    return ToolOutput(f"report of {pages} pages", Document.from_pdf(raw, title=f"Report {pages}"))


def big_png(mb: float) -> bytes:
    """A PNG whose base64 is about `mb` MB (a small image with bytes after its end, as a camera adds)."""
    return png(4, 3) + bytes(int(mb * MB * 3 / 4))


@tool
def photo(mb: float) -> Image:
    """A photo of about so many MB of base64."""
    return Image.from_bytes(big_png(mb))


def run(api: MessagesAPI, calls: list[dict[str, Any]], name: str = MODEL, **options: Any) -> Any:
    api.enqueue(*[message(c) for c in calls], message(DONE))
    model = AnthropicModel(name, api_key="sk-test", base_url=api.url, **options)
    budget = Budget(max_turns=len(calls) + 2, max_seconds=None)
    return Agent("reader", model, tools=[report, photo], budget=budget).run("Read the reports.")


def results(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The content of each tool_result a request sent, in order."""
    return [
        b["content"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]


def test_pdfs_past_the_pages_a_request_takes_the_oldest_goes_as_a_note_naming_it() -> None:
    """60 + 50 pages in one request: the API refuses it (100 pages on a 200k window); the run ended in
    error on every later request."""
    calls = [tool_use("report", {"pages": 60}), tool_use("report", {"pages": 50})]
    with MessagesAPI() as api:
        result = run(api, calls)
    assert result.reason is StopReason.SUCCESS, result.note
    older, newer = results(api.bodies[-1])
    assert older[1]["text"] == (
        "[a PDF 'Report 60' of 60 pages not sent: with it the request's PDFs would pass the 100 pages a "
        "request takes, and this is one of the oldest; call the tool again to read it]"
    )
    assert newer[1]["type"] == "document" and newer[1]["title"] == "Report 50"
    assert results(api.bodies[1])[0][1]["type"] == "document"  # alone, the 60 pages went


def test_a_pdf_of_more_pages_than_the_model_takes_goes_as_a_note_and_the_run_goes_on() -> None:
    with MessagesAPI() as api:
        result = run(api, [tool_use("report", {"pages": 150})])
    assert result.reason is StopReason.SUCCESS, result.note
    ((_, note),) = results(api.bodies[-1])
    assert note["text"].startswith("[a PDF 'Report 150' of 150 pages not sent: over the 100 pages a request")


def test_a_model_with_a_larger_window_takes_600_pages() -> None:
    with MessagesAPI() as api:
        api.pdf_pages = 600
        result = run(api, [tool_use("report", {"pages": 150})], "claude-fable-5-1")  # a 1M-token window
    assert result.reason is StopReason.SUCCESS, result.note
    assert results(api.bodies[-1])[0][1]["type"] == "document"


def test_pdfs_past_the_requests_32_mb_the_oldest_goes_as_a_note_never_a_413() -> None:
    """20 MB and 14 MB of PDFs in one request: over 32 MB, which the API answers with a 413."""
    calls = [tool_use("report", {"pages": 1, "mb": 20}), tool_use("report", {"pages": 2, "mb": 14})]
    with MessagesAPI() as api:
        result = run(api, calls)
    assert result.reason is StopReason.SUCCESS, result.note
    older, newer = results(api.bodies[-1])
    assert older[1]["text"] == (
        "[a PDF 'Report 1' of 1 page not sent: with it the request's images and PDFs would pass 24 MB, "
        "and the API takes 32 MB a request; call the tool again to read it]"
    )
    assert newer[1]["type"] == "document"


def test_a_pdf_shares_the_requests_room_with_the_images_the_older_images_go_as_notes() -> None:
    """Two 9 MB screenshots (18 MB: within the images' 24 MB) and then a 15 MB PDF: 33 MB in one request,
    which the API answers with a 413."""
    calls = [
        tool_use("photo", {"mb": 9}),
        tool_use("photo", {"mb": 9}),
        tool_use("report", {"pages": 3, "mb": 15}),
    ]
    with MessagesAPI() as api:
        result = run(api, calls)
    assert result.reason is StopReason.SUCCESS, result.note
    (first,), (second,), (_, document) = results(api.bodies[-1])
    note = (
        "[an image not sent: with it the request's images and PDFs would pass 24 MB, and the API takes "
        "32 MB a request; call the tool again to see it]"
    )
    assert first["text"] == second["text"] == note
    assert document["type"] == "document"


def test_an_image_of_up_to_10_mb_goes_to_the_claude_api_as_it_is() -> None:
    """The Claude API takes 10 MB of base64 an image (it was refused over 5 MB, as Bedrock refuses)."""
    with MessagesAPI() as api:
        result = run(api, [tool_use("photo", {"mb": 7})])
    assert result.reason is StopReason.SUCCESS, result.note
    ((image,),) = results(api.bodies[-1])
    assert image["type"] == "image" and len(image["source"]["data"]) > 7 * MB


def test_on_bedrock_or_vertex_an_image_over_5_mb_goes_as_a_note() -> None:
    with MessagesAPI() as api:
        api.max_image_base64, api.max_request_bytes = 5 * MB, 20 * MB  # as Bedrock takes them
        calls = [tool_use("photo", {"mb": 7}), tool_use("photo", {"mb": 4})]
        result = run(api, calls, media_limits=PARTNER_PLATFORM)
    assert result.reason is StopReason.SUCCESS, result.note
    (big,), (small,) = results(api.bodies[-1])
    assert big["text"] == (
        "[an image not sent: its 7.0 MB of base64 are over the 5 MB an image the API takes here; call the "
        "tool again for a smaller one to see it]"
    )
    assert small["type"] == "image"


@pytest.mark.parametrize(
    ("base_url", "limits"),
    [
        ("https://api.anthropic.com", CLAUDE_API),
        ("https://bedrock-runtime.us-east-1.amazonaws.com", PARTNER_PLATFORM),
        ("https://us-east5-aiplatform.googleapis.com/v1", PARTNER_PLATFORM),
        ("http://127.0.0.1:8080", CLAUDE_API),
    ],
)
def test_the_limits_follow_the_platform_the_base_url_names(base_url: str, limits: MediaLimits) -> None:
    assert limits_for(anthropic.AsyncAnthropic(api_key="k", base_url=base_url)) == limits


def test_the_sdks_bedrock_and_vertex_clients_get_their_platforms_limits() -> None:
    class AsyncAnthropicBedrock:  # the SDK's class needs boto3; its name is what is read
        base_url = "https://bedrock-runtime.example"

    assert limits_for(AsyncAnthropicBedrock()) == PARTNER_PLATFORM


def _pdf_block(pages: int) -> dict[str, Any]:
    data = base64.b64encode(pdf(pages)).decode()
    return {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}}


def _image_block(mb: float) -> dict[str, Any]:
    data = base64.b64encode(big_png(mb)).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


@pytest.mark.parametrize(
    ("blocks", "status", "says"),
    [
        ([_pdf_block(60), _pdf_block(41)], 400, "A maximum of 100 PDF pages may be provided"),
        ([_image_block(10.5)], 400, "image exceeds 10 MB maximum"),
        ([_image_block(9)] * 3 + [_image_block(6)], 413, "exceeds the maximum allowed number of bytes"),
    ],
)
def test_the_test_api_refuses_pages_images_and_requests_the_api_refuses(
    blocks: list[dict[str, Any]], status: int, says: str
) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "look", "input": {}}
    messages = [
        {"role": "user", "content": "Look."},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": blocks}]},
    ]
    with MessagesAPI(message(DONE)) as api:
        client = anthropic.Anthropic(api_key="sk-test", base_url=api.url, max_retries=0)
        with pytest.raises(anthropic.APIStatusError, match=re.escape(says)) as raised:
            client.messages.create(model=MODEL, max_tokens=10, messages=messages)  # type: ignore[arg-type]
    assert raised.value.status_code == status


NOTE = "lorem ipsum " * 3_400  # 40,800 characters: cut to the policy's 40,000, some 10,000 tokens


@tool
def notes(part: int) -> str:
    """A long part of the notes."""
    return f"part {part}: {NOTE}"


@tool
def manual(pages: int) -> Document:
    """The manual, as a PDF of so many pages."""
    return Document.from_pdf(pdf(pages), title="Manual")


def test_a_90_page_pdf_trims_the_history_before_the_request_not_after_the_api_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 long results (some 85,000 tokens), then a 90-page PDF (some 350,000 tokens as the API counts
    PDFs, some 9,000 as its base64 would count): on a 400,000-token window the request with all of it
    is too long. The PDF is priced by its pages (it was priced as one image), so the older results are
    shrunk before the request goes, and the API takes every request."""
    table = tmp_path / "models.toml"
    row = "context_window = 400000\nmax_output = 8192\ninput = 1\noutput = 5\n"
    table.write_text(f'[models."claude-reader-400k"]\n{row}')
    monkeypatch.setenv("ENDSTATE_MODELS", str(table))
    calls = [tool_use("notes", {"part": i}) for i in range(8)] + [tool_use("manual", {"pages": 90})]
    with MessagesAPI(context_window=400_000) as api:
        api.pdf_pages = 600
        api.enqueue(*[message(c) for c in calls], message(DONE))
        model = AnthropicModel("claude-reader-400k", api_key="sk-test", base_url=api.url)
        budget = Budget(max_turns=len(calls) + 2, max_seconds=None)
        agent = Agent("reader", model, tools=[notes, manual], budget=budget)
        result = agent.run("Read the notes and the manual.")
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == len(api.usages) == len(calls) + 1  # each request answered, none refused
    assert results(api.bodies[-1])[-1][0]["type"] == "document"  # the manual went, whole
    assert len(pdf(90)) * 4 // 3 // 4 < 10_000  # its base64 alone would not have told


SPEC = "https://docs.example/spec.pdf"
ANNEX = "https://docs.example/annex.pdf"


@tool
def linked(url: str) -> Document:
    """A PDF the API fetches from its URL."""
    return Document(url=url, title=url.rpartition("/")[2])


def url_run(api: MessagesAPI, calls: list[dict[str, Any]], **options: Any) -> Any:
    api.enqueue(*[message(c) for c in calls], message(DONE))
    model = AnthropicModel(MODEL, api_key="sk-test", base_url=api.url)
    budget = Budget(max_turns=len(calls) + 2, max_seconds=None)
    return Agent("reader", model, tools=[report, linked], budget=budget, **options).run("Read them.")


def test_a_pdf_by_url_counts_as_a_page_so_an_older_pdf_of_100_pages_goes_as_a_note() -> None:
    """100 pages of base64 PDF, then a PDF by URL (5 pages, as the API finds when it fetches it): the
    URL's PDF was counted as no page, and the API refused the request of 105."""
    with MessagesAPI() as api:
        api.url_pdf_pages[SPEC] = 5
        result = url_run(api, [tool_use("report", {"pages": 100}), tool_use("linked", {"url": SPEC})])
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 3  # none refused
    older, newer = results(api.bodies[-1])
    assert older[1]["text"].startswith(
        "[a PDF 'Report 100' of 100 pages not sent: with it the request's PDFs"
    )
    assert newer == [{"type": "document", "source": {"type": "url", "url": SPEC}, "title": "spec.pdf"}]


def test_a_pdf_by_url_is_a_note_when_the_newer_pdfs_take_the_requests_pages() -> None:
    with MessagesAPI() as api:
        result = url_run(api, [tool_use("linked", {"url": SPEC}), tool_use("report", {"pages": 100})])
    assert result.reason is StopReason.SUCCESS, result.note
    older, newer = results(api.bodies[-1])
    assert older == [
        {
            "type": "text",
            "text": f"[a PDF 'spec.pdf' at {SPEC} not sent: the newer PDFs of the request take the 100 pages "
            "a request takes, and this is one of the oldest; call the tool again to read it]",
        }
    ]
    assert newer[1]["type"] == "document"


def test_when_the_api_finds_a_url_pdf_too_long_the_history_clears_the_older_one_and_the_run_goes_on() -> None:
    """Two PDFs by URL of 80 and 30 pages: counted as a page each, sent; the API refuses the request
    of 110 pages. The refusal is met as a full context (it ended the run as error): the older result
    is cleared and the request asked again, which the API takes."""
    with MessagesAPI() as api:
        api.url_pdf_pages |= {SPEC: 80, ANNEX: 30}
        calls = [tool_use("linked", {"url": SPEC}), tool_use("linked", {"url": ANNEX})]
        result = url_run(api, calls, history=HistoryPolicy(keep_last=1))
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(api.requests) == 4 and len(api.usages) == 3  # one refused, asked again
    older, newer = results(api.bodies[-1])
    assert older == CLEARED.format(held="0 characters, 1 PDF")
    assert newer[0]["source"] == {"type": "url", "url": ANNEX}


def test_a_url_pdf_over_the_models_pages_stops_the_run_as_a_full_context_saying_what_to_do() -> None:
    with MessagesAPI() as api:
        api.url_pdf_pages[SPEC] = 300
        result = url_run(api, [tool_use("linked", {"url": SPEC})])
    assert result.reason is StopReason.LIMIT and result.limit is LimitKind.CONTEXT, result.note
    assert "A maximum of 100 PDF pages may be provided." in result.note
    assert "a PDF given by URL is counted by the API only, when it fetches it" in result.note
