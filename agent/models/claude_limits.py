"""What one Messages API request may carry of images and PDFs, by the platform it goes to; and the
request's images and PDFs past those limits sent as notes, so the API never refuses the request.

From Anthropic's docs (read 2026-12-02):
- Vision, "General limits" (platform.claude.com/docs/en/build-with-claude/vision): an image's base64 is
  at most 10 MB on the Claude API and 5 MB on Amazon Bedrock and Vertex AI; request size limits are
  "32 MB for standard endpoints; lower on some partner-operated platforms, for example, Amazon Bedrock
  and Vertex AI".
- PDF support, "PDF requirements" (platform.claude.com/docs/en/build-with-claude/pdf-support): maximum
  request size 32 MB ("varies by platform"), maximum pages per request 600 (100 for models with a
  200k-token context window); "both limits are on the entire request payload, including any other
  content sent alongside PDFs".
- API overview, "Request size limits": 32 MB on the Messages API, past which the API answers 413
  `request_too_large`. Amazon Bedrock's InvokeModel takes a payload of at most 20 MB (its user guide,
  Anthropic Claude Messages API, "Request and Response"); the same is assumed of Vertex AI, for which
  the docs give no number.

The images of a request past 100, or past 20 and over 2000 px a side, are left out before
(agent.models._messages); here the rest: an image over its platform's size, a PDF of more pages than
the model takes, and, counted from the newest, the older images and PDFs past the request's room for
their base64 or past its pages. Each goes as a note naming what was left out.

A PDF given by URL is fetched by the API, so its pages are known only there (PDF support: a
document's source may be a URL; Token counting, platform.claude.com/docs/build-with-claude/
token-counting: the endpoint refuses "image or document blocks with a url or file source", so no
count can be asked before either). It is sent, counted as one page (its least) against the
request's pages: the older PDFs past those go as notes, and it goes as a note itself when the newer
ones take them all. When the API finds the request's PDFs over its pages all the same (a long PDF at
a URL), it refuses the request with a 400 ("A maximum of 100 PDF pages may be provided"), which the
adapter hands the loop as a full context (`PAGES_REFUSED`): the history policy clears older results
(an older PDF with them) and asks again, and the run stops `limit`/`context` with the API's words
when nothing more can go.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agent.content import MOST_PDF_PAGES, Block, Document, pdf_pages
from agent.journal import Entry, Result
from agent.summary import plural

Message = dict[str, Any]
MB = 1024 * 1024
REST = 8 * MB  # of a request's bytes, kept for what is not images or PDFs (text, tools, the JSON)
WINDOW_OF_100_PAGES = 200_000  # models with a context window this large or smaller take 100 PDF pages
PAGES_REFUSED = "pdf pages may be provided"  # the API's 400 for a request of more PDF pages than it takes
PAGES_REFUSED_HINT = (
    " (Endstate counts the pages of a base64 PDF and sends the older ones past a request's pages as notes; "
    "a PDF given by URL is counted by the API only, when it fetches it: return it as base64, "
    "Document.from_pdf, to have its pages counted)"
)


@dataclass(frozen=True)
class MediaLimits:
    """What one request may carry: an image's base64 (`image_base64`), the whole request's bytes
    (`request_bytes`, of which all but 8 MB are room for images' and PDFs' base64) and PDF pages."""

    image_base64: int
    request_bytes: int
    pdf_pages: int = MOST_PDF_PAGES

    @property
    def room(self) -> int:
        """The base64 of images and PDFs one request has room for."""
        return self.request_bytes - REST

    def for_window(self, context_window: int | None) -> MediaLimits:
        """These limits for a model of `context_window` tokens (unknown: taken as 200k, the smaller)."""
        small = context_window is None or context_window <= WINDOW_OF_100_PAGES
        return MediaLimits(self.image_base64, self.request_bytes, min(self.pdf_pages, 100 if small else 600))


CLAUDE_API = MediaLimits(image_base64=10 * MB, request_bytes=32 * MB)
PARTNER_PLATFORM = MediaLimits(image_base64=5 * MB, request_bytes=20 * MB)  # Amazon Bedrock, Vertex AI
# Bedrock's and Vertex AI's endpoints (Google managed: `{region}-aiplatform.googleapis.com`); not
# `claude.googleapis.com`, Claude Models on Google Cloud (Anthropic managed: the SDK's AnthropicGoogleCloud),
# which is the Claude API that Anthropic runs, reached through a Google Cloud project (Anthropic's docs,
# build-with-claude/claude-models-on-google-cloud/overview, read 2026-12-04): the Claude API's limits
_PARTNER_HOSTS = ("amazonaws.com", "aiplatform.googleapis.com")
_PARTNER_CLIENTS = ("Bedrock", "Vertex")  # the SDK's AsyncAnthropicBedrock, AsyncAnthropicVertex


def limits_for(client: Any) -> MediaLimits:
    """The limits of the platform `client` sends to: Bedrock's or Vertex AI's by its class or its base
    URL's host, else the Claude API's."""
    if any(name in type(client).__name__ for name in _PARTNER_CLIENTS):
        return PARTNER_PLATFORM
    host = urlsplit(str(getattr(client, "base_url", ""))).hostname or ""
    return PARTNER_PLATFORM if host.endswith(_PARTNER_HOSTS) else CLAUDE_API


# -- the notes sent in place of what a request cannot carry ---------------------------------------

BIG_IMAGE = (
    "[an image not sent: its {mb:.1f} MB of base64 are over the {most} MB an image the API takes here; "
    "call the tool again for a smaller one to see it]"
)
MANY_PAGES = (
    "[a PDF{title} of {pages} not sent: over the {most} pages a request takes on this model; "
    "call the tool again for fewer pages to read it]"
)
OLD_PAGES = (
    "[a PDF{title} of {pages} not sent: with it the request's PDFs would pass the {most} pages a "
    "request takes, and this is one of the oldest; call the tool again to read it]"
)
OLD_URL_PDF = (
    "[a PDF{title} at {url} not sent: the newer PDFs of the request take the {most} pages a request takes, "
    "and this is one of the oldest; call the tool again to read it]"
)
OLD_MEDIA = (
    "[{what} not sent: with it the request's images and PDFs would pass {mb} MB, and the API takes "
    "{request} MB a request; call the tool again to {see} it]"
)


@dataclass(frozen=True)
class _Media:
    """An image or PDF of a tool result in a request: where it is (message, result, block), its base64
    size and, for a PDF, its pages and title."""

    at: tuple[int, int, int]
    size: int
    pages: int = 0
    title: str = ""
    url: str = ""  # a PDF the API fetches: its pages unknown here, counted as 1, and no base64

    @property
    def pdf(self) -> bool:
        return self.pages > 0

    @property
    def length(self) -> str:
        return plural(self.pages, "page")

    def named(self) -> str:
        return f"a PDF{self.title} of {self.length}" if self.pdf else "an image"


def within_limits(messages: list[Message], journal: Sequence[Entry], limits: MediaLimits) -> list[Message]:
    """`messages` with each image and PDF of a tool result that the request cannot carry under `limits`
    sent as a note (see the module's docstring). `journal` is what the messages were made of: a PDF's
    pages are read from its `Document` there, not counted again."""
    held = {e.call_id: e.blocks for e in journal if isinstance(e, Result) and e.blocks}
    media = list(_media(messages, held)) if held else []  # no result of blocks: no image or PDF
    notes = _unsent(media, limits) if media else {}
    if not notes:
        return messages
    out = list(messages)
    for (i, j, k), note in notes.items():
        content = list(out[i]["content"])
        inner = list(content[j]["content"])
        inner[k] = {"type": "text", "text": note}
        content[j] = {**content[j], "content": inner}
        out[i] = {**out[i], "content": content}
    return out


def _unsent(media: list[_Media], limits: MediaLimits) -> dict[tuple[int, int, int], str]:
    """The notes for what the request cannot carry, by where each is: what no request here takes; then,
    counted from the newest, the older images and PDFs past the room for their base64, and the older
    PDFs past the pages a request takes."""
    notes = {m.at: note for m in media if (note := _too_big(m, limits))}
    room, pages = limits.room, limits.pdf_pages
    for m in reversed([m for m in media if m.at not in notes]):
        room, pages = room - m.size, pages - m.pages
        if room < 0:
            mb, request = limits.room // MB, limits.request_bytes // MB
            see = "read" if m.pdf else "see"
            notes[m.at] = OLD_MEDIA.format(what=m.named(), mb=mb, request=request, see=see)
        elif pages < 0:
            notes[m.at] = _old_pages(m, limits.pdf_pages)
            room += m.size  # not sent: its base64 takes no room
    return notes


def _old_pages(m: _Media, most: int) -> str:
    if m.url:
        return OLD_URL_PDF.format(title=m.title, url=m.url, most=most)
    return OLD_PAGES.format(title=m.title, pages=m.length, most=most)


def _too_big(m: _Media, limits: MediaLimits) -> str:
    if m.url:  # its pages and size are the API's to find
        return ""
    if m.pdf and m.pages > limits.pdf_pages:
        return MANY_PAGES.format(title=m.title, pages=m.length, most=limits.pdf_pages)
    if not m.pdf and m.size > limits.image_base64:
        return BIG_IMAGE.format(mb=m.size / MB, most=limits.image_base64 // MB)
    return ""


def _media(messages: list[Message], held: dict[str, tuple[Block, ...]]) -> Iterator[_Media]:
    """The base64 images and PDFs of the messages' tool results, oldest first (`held`: the blocks of
    the journal's results, by call id)."""
    for i, message in enumerate(messages):
        content = message["content"]
        if message["role"] != "user" or not isinstance(content, list):
            continue
        for j, result in enumerate(content):
            inner = result.get("content") if result.get("type") == "tool_result" else None
            if isinstance(inner, list):
                yield from _result_media(i, j, inner, held.get(result.get("tool_use_id"), ()))


def _result_media(i: int, j: int, blocks: list[Any], kept: tuple[Block, ...]) -> Iterator[_Media]:
    """The images and PDFs of one tool result's `blocks` (result `j` of message `i`; `kept`: the
    journal's blocks of that result)."""
    for k, block in enumerate(blocks):
        source = block.get("source")
        if _url_pdf(block, source):
            title = f" {block['title']!r}" if block.get("title") else ""
            yield _Media((i, j, k), 0, 1, title, url=str(source["url"]))
        if not (isinstance(source, dict) and source.get("type") == "base64"):
            continue
        size = len(source.get("data", ""))
        if block.get("type") == "document":
            known = kept[k] if k < len(kept) else None
            pages = _pages(known if isinstance(known, Document) else None, source.get("data", ""))
            title = f" {block['title']!r}" if block.get("title") else ""
            yield _Media((i, j, k), size, pages, title)
        elif block.get("type") == "image":
            yield _Media((i, j, k), size)


def _url_pdf(block: dict[str, Any], source: Any) -> bool:
    """A document block whose source is a URL: a PDF the API fetches (a URL source is for PDFs only)."""
    return block.get("type") == "document" and isinstance(source, dict) and source.get("type") == "url"


def _pages(known: Document | None, data: str) -> int:
    """A PDF's pages: its Document's count, else counted from its data; 1 when no count is found."""
    if known is not None and known.data == data:
        return known.pages or 1
    try:
        return pdf_pages(base64.b64decode(data)) or 1
    except (binascii.Error, ValueError):
        return 1
