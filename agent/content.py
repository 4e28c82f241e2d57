"""Rich tool results: content blocks a tool returns besides text.

A tool returns text as before (a `str`, or a value written as JSON). To give
the model more, it returns content blocks: an `Image` (a screenshot, a chart),
a `Document` (a PDF, or plain text the model may cite), a `SearchResult` (a
RAG hit the model cites) or a `ToolReference` (tool search), alone or in a
list with text (`str` items are text blocks), or a `ToolOutput` of them, which
also takes the Messages API's own block dicts:

    @tool
    def screenshot(url: str) -> Image:
        "A PNG of the page."
        return Image.from_bytes(browser.png(url), "image/png")

Blocks are checked when made (base64 that is no base64, a media type the API
does not take, an image over its size limit...): a bad one becomes the tool's
error result, naming what to fix, never a 400 from the API later. The journal
keeps the blocks as they are (frozen, written in the API's own shape); what
reads results as text (progress, verifiers, telemetry, evals) sees `text_of`:
the text blocks, and a short placeholder for each image or PDF.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent._frozen import fast_init
from agent.errors import EndstateError

# The API's limits, from Anthropic's docs (platform.claude.com/docs/en/build-with-claude/vision, "General
# limits", and .../pdf-support, "PDF requirements", read 2026-12-02). An image's base64 may be 10 MB on the
# Claude API itself and 5 MB on Amazon Bedrock and Vertex AI: a block takes up to the larger, and the Claude
# adapter sends one over its platform's limit as a note (agent.models.claude_limits).
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")  # the media types the API takes
MAX_IMAGE_BASE64 = 10 * 1024 * 1024  # no platform takes an image whose base64 is longer
MAX_IMAGE_SIDE = 8000  # pixels: the API refuses an image wider or taller
MANY_IMAGES = 20  # a request with more images than this takes none over MANY_IMAGES_SIDE pixels a side
MANY_IMAGES_SIDE = 2000
MOST_IMAGES = 100  # the images a request may hold (models with a 200k-token window; others take 600)
MOST_IMAGE_BASE64 = 24 * 1024 * 1024  # a request's room for images' and PDFs' base64, in the API's 32 MB
MAX_PDF_BASE64 = MOST_IMAGE_BASE64  # a longer PDF fits no request (the 32 MB hold the rest too)
MOST_PDF_PAGES = 600  # the PDF pages a request may hold (100 on models with a 200k-token window)
MEDIA_TOKENS = 1_600  # about the most an image costs the model (the API scales a larger one down)
# What a PDF costs the model, from Anthropic's docs (PDF support, "Estimate your costs", read 2026-12-02:
# platform.claude.com/docs/en/build-with-claude/pdf-support): its text, "typically 1,500-3,000 tokens
# per page depending on content density", and, since "each page is converted into an image", an image a
# page, priced as images are (vision, "Calculate image costs": about width x height / 750 tokens,
# MEDIA_TOKENS at most). The least text a page is taken: the history policy trims when a PDF would fill
# the window, and not long before.
PDF_PAGE_TOKENS = 1_500 + MEDIA_TOKENS
_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


class ContentError(EndstateError, ValueError):
    """A content block the model API would refuse; the message says what is wrong and how to fix it."""


@fast_init
@dataclass(frozen=True)
class Image:
    """An image: base64 `data` of `media_type` (made with `from_bytes` or `from_file`), or a `url`."""

    data: str = ""
    media_type: str = ""
    url: str = ""

    def __post_init__(self) -> None:
        if self.url:
            _need_url(self.url, "image", self.data)
            return
        if self.media_type not in IMAGE_TYPES:
            raise ContentError(
                f"image: media_type {self.media_type!r} is not one the API takes: {', '.join(IMAGE_TYPES)}"
            )
        raw = _decoded(self.data, "image", MAX_IMAGE_BASE64)
        found = _sniffed(raw)
        if found != self.media_type:
            what = f"holds {found}" if found else "is no JPEG, PNG, GIF or WebP image"
            raise ContentError(f"image: data {what}, but media_type says {self.media_type}")
        size = _dimensions(raw)
        if size is None or min(size) < 1:
            raise ContentError(
                f"image: the {self.media_type} header gives no size (a truncated or damaged file?), "
                "which the API would refuse: send the whole image file"
            )
        if max(size) > MAX_IMAGE_SIDE:
            raise ContentError(
                f"image: {size[0]}x{size[1]} pixels, over the {MAX_IMAGE_SIDE} a side the API takes: "
                "downscale it (or cut a tall screenshot into parts)"
            )
        object.__setattr__(self, "_pixels", size)  # not a field: no part of equality, made again when read

    @property
    def pixels(self) -> tuple[int, int] | None:
        """(width, height) as its header gives them; None for an image at a URL."""
        size: tuple[int, int] | None = self.__dict__.get("_pixels")
        return size

    @classmethod
    def from_bytes(cls, raw: bytes, media_type: str | None = None) -> Image:
        """An image of these bytes; its media type is read from them when not given."""
        if not isinstance(raw, bytes | bytearray | memoryview):  # a path or base64 text, say
            hint = ": for a file, use Image.from_file(path)" if isinstance(raw, str) else ""
            raise ContentError(f"image: from_bytes takes the image's bytes, not {type(raw).__name__}{hint}")
        found = media_type or _sniffed(bytes(raw[:16]))
        if found is None:
            raise ContentError(
                "image: the bytes are no JPEG, PNG, GIF or WebP image (the types the API takes)"
            )
        return cls(base64.b64encode(raw).decode("ascii"), found)

    @classmethod
    def from_file(cls, path: str | Path) -> Image:
        """The image in a file (JPEG, PNG, GIF or WebP)."""
        return cls.from_bytes(Path(path).read_bytes())


@fast_init
@dataclass(frozen=True)
class Document:
    """A document the model reads (and cites, with `citations`): a PDF as base64 `data` (made with
    `from_pdf`) or at a `url`, or plain `text`. `title` and `context` go with it, as the API takes them."""

    data: str = ""
    text: str = ""
    url: str = ""
    title: str = ""
    context: str = ""
    citations: bool = False

    def __post_init__(self) -> None:
        given = [k for k in ("data", "text", "url") if getattr(self, k)]
        if len(given) != 1:
            raise ContentError(
                f"document: give exactly one of data (a base64 PDF), text or url, not {given or 'none'}"
            )
        if self.url:
            _need_url(self.url, "document", "")
        elif self.data:
            object.__setattr__(self, "_pages", _checked_pdf(self.data))
        for name in ("text", "title", "context"):
            if not isinstance(getattr(self, name), str):
                raise ContentError(f"document: {name} must be text")
        if not isinstance(self.citations, bool):
            raise ContentError(f"document: citations must be True or False, not {self.citations!r}")

    @property
    def pages(self) -> int | None:
        """A PDF's pages, as its page tree counts them; None for text, a URL, or a PDF whose count
        is not found (a damaged file)."""
        pages: int | None = self.__dict__.get("_pages")
        return pages

    @classmethod
    def from_pdf(cls, raw: bytes, title: str = "", citations: bool = False) -> Document:
        """A PDF document of these bytes."""
        if not isinstance(raw, bytes | bytearray | memoryview):
            raise ContentError(f"document: from_pdf takes the PDF's bytes, not {type(raw).__name__}")
        return cls(base64.b64encode(raw).decode("ascii"), title=title, citations=citations)


@fast_init
@dataclass(frozen=True)
class SearchResult:
    """A search result the model can cite: where it is from (`source`, a URL or an id), its `title`
    and its text passages (`content`)."""

    source: str
    title: str
    content: tuple[str, ...]
    citations: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.content, str | list):  # one passage, or a list of them: kept as a tuple
            object.__setattr__(
                self, "content", (self.content,) if isinstance(self.content, str) else tuple(self.content)
            )
        if not isinstance(self.content, tuple):
            raise ContentError(
                "search result: content must be a passage or a list of them, "
                f"not {type(self.content).__name__}"
            )
        for name in ("source", "title"):
            if not (isinstance(getattr(self, name), str) and getattr(self, name).strip()):
                raise ContentError(f"search result: {name} must be text that is not blank")
        if not self.content or not all(isinstance(c, str) and c.strip() for c in self.content):
            raise ContentError(
                "search result: content must be one or more passages of text that are not blank"
            )
        if not isinstance(self.citations, bool):
            raise ContentError(f"search result: citations must be True or False, not {self.citations!r}")


@fast_init
@dataclass(frozen=True)
class ToolReference:
    """A tool the model may load (tool search): `tool_name`, one of the request's tools."""

    tool_name: str

    def __post_init__(self) -> None:
        if not (isinstance(self.tool_name, str) and self.tool_name):
            raise ContentError("tool reference: tool_name must name a tool")


Block = str | Image | Document | SearchResult | ToolReference
_BLOCKS = (Image, Document, SearchResult, ToolReference)
_TEXT_OR_BLOCKS = (str, *_BLOCKS)


class ToolOutput:
    """Content blocks a tool returns: text (`str`), `Image`, `Document`, `SearchResult`,
    `ToolReference`, or the Messages API's own block dicts (`{"type": "image", "source": ...}`).
    Each is checked when made, as the block classes are: a dict is read into its block, and one the
    API would refuse (an unknown type, a missing field, `cache_control`) raises `ContentError`."""

    __slots__ = ("blocks",)

    def __init__(self, *blocks: Block | dict[str, Any]) -> None:
        self.blocks: tuple[Block, ...] = tuple(_block(b, f"block {i}") for i, b in enumerate(blocks))

    def __repr__(self) -> str:
        return f"ToolOutput{self.blocks!r:.200}"


def blocks_of(value: Any) -> tuple[Block, ...] | None:
    """The content blocks a tool's return value holds, or None when it holds none (text, or any value
    written as JSON). Blank text blocks are left out (the API refuses them). Raises `ContentError`."""
    if isinstance(value, _BLOCKS):
        return (value,)
    if isinstance(value, ToolOutput):
        items: Sequence[Any] = value.blocks
    elif isinstance(value, list | tuple) and any(isinstance(v, _BLOCKS) for v in value):
        items = value
    else:
        return None
    blocks = tuple(b for i, item in enumerate(items) if not _blank(b := _block(item, f"block {i}")))
    _check_sendable(blocks)
    return blocks


def _check_sendable(blocks: Sequence[Block]) -> None:
    """Refuse blocks no request could carry: more images or PDF pages than a request takes, or more
    base64 than a request's room for images and PDFs."""
    images = [b for b in blocks if isinstance(b, Image)]
    if len(images) > MOST_IMAGES:
        raise ContentError(
            f"{len(images):,} images in one result, over the {MOST_IMAGES} a request takes: return fewer"
        )
    pdfs = [b for b in blocks if isinstance(b, Document) and b.data]
    if (pages := sum(b.pages or 1 for b in pdfs)) > MOST_PDF_PAGES:
        raise ContentError(
            f"PDFs of {pages:,} pages in one result, over the {MOST_PDF_PAGES} a request takes: return fewer"
        )
    if (size := sum(len(b.data) for b in images) + sum(len(b.data) for b in pdfs)) > MOST_IMAGE_BASE64:
        kinds = " and ".join(k for k, found in (("images", bool(images)), ("PDFs", bool(pdfs))) if found)
        raise ContentError(
            f"{kinds} of {size:,} characters of base64 in one result, over the {MOST_IMAGE_BASE64:,} a "
            "request has room for (the API takes 32 MB): return fewer or smaller ones"
        )


def _block(item: Any, where: str) -> Block:
    if isinstance(item, _TEXT_OR_BLOCKS):
        return item
    if isinstance(item, dict):
        try:
            return parse_block(item)
        except ContentError as exc:
            raise ContentError(f"{where}: {exc}") from None
    raise ContentError(
        f"{where} is a {type(item).__name__}: give text, Image, Document, SearchResult, ToolReference "
        "or a Messages API block dict"
    )


def _blank(block: Block) -> bool:
    return isinstance(block, str) and not block.strip()


# -- the Messages API's shape: what is sent, and what the journal writes ------------------------------


def api_block(block: Block) -> dict[str, Any]:
    """The block as the Messages API takes it in a tool_result's content."""
    if isinstance(block, str):
        return {"type": "text", "text": block}
    if isinstance(block, Image):
        source = {"type": "url", "url": block.url} if block.url else _base64(block.media_type, block.data)
        return {"type": "image", "source": source}
    if isinstance(block, Document):
        return _api_document(block)
    if isinstance(block, SearchResult):
        passages = [{"type": "text", "text": c} for c in block.content]
        found = {"type": "search_result", "source": block.source, "title": block.title, "content": passages}
        return found | {"citations": {"enabled": block.citations}}
    return {"type": "tool_reference", "tool_name": block.tool_name}


def _api_document(doc: Document) -> dict[str, Any]:
    if doc.url:
        source: dict[str, Any] = {"type": "url", "url": doc.url}
    elif doc.data:
        source = _base64("application/pdf", doc.data)
    else:
        source = {"type": "text", "media_type": "text/plain", "data": doc.text}
    out: dict[str, Any] = {"type": "document", "source": source}
    extra = {"title": doc.title, "context": doc.context}
    out |= {k: v for k, v in extra.items() if v}
    return out | ({"citations": {"enabled": True}} if doc.citations else {})


def _base64(media_type: str, data: str) -> dict[str, str]:
    return {"type": "base64", "media_type": media_type, "data": data}


def parse_block(d: Any) -> Block:
    """A block from the Messages API's shape (as `api_block` writes it). Raises `ContentError`
    naming the field that is wrong."""
    if not isinstance(d, dict):
        raise ContentError(f"a content block must be an object, not {type(d).__name__}")
    kind = d.get("type")
    parse = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parse is None or not isinstance(kind, str):
        raise ContentError(f"type {kind!r} is not a tool result block: use one of {', '.join(_PARSERS)}")
    if unknown := sorted(set(d) - _FIELDS[kind]):
        why = _CACHE_CONTROL if "cache_control" in unknown else ""
        raise ContentError(
            f"{kind} block: fields {unknown} are not taken (taken: {sorted(_FIELDS[kind])}){why}"
        )
    try:
        return parse(d)
    except KeyError as exc:
        raise ContentError(f"{kind} block: the field {exc.args[0]!r} is missing") from None
    except (TypeError, AttributeError) as exc:
        raise ContentError(f"{kind} block: a field has the wrong type ({exc})") from None


def _text(d: dict[str, Any]) -> str:
    return _str(d["text"], "text")


def _image(d: dict[str, Any]) -> Image:
    source = _source(d, ("base64", "url"))
    if source["type"] == "url":
        return Image(url=_str(source["url"], "source.url"))
    return Image(_str(source["data"], "source.data"), _str(source["media_type"], "source.media_type"))


def _document(d: dict[str, Any]) -> Document:
    source = _source(d, ("base64", "text", "url"))
    meta: dict[str, Any] = {"title": _str(d.get("title") or "", "title"), "citations": _enabled(d)}
    meta["context"] = _str(d.get("context") or "", "context")
    if source["type"] == "url":
        return Document(url=_str(source["url"], "source.url"), **meta)
    media = source["media_type"]
    wanted = "application/pdf" if source["type"] == "base64" else "text/plain"
    if media != wanted:
        raise ContentError(
            f"document block: a {source['type']} source's media_type must be {wanted}, not {media!r}"
        )
    data = _str(source["data"], "source.data")
    return Document(data=data, **meta) if source["type"] == "base64" else Document(text=data, **meta)


def _search_result(d: dict[str, Any]) -> SearchResult:
    passages = d["content"]
    if not isinstance(passages, list) or not all(
        isinstance(p, dict) and p.get("type") == "text" for p in passages
    ):
        raise ContentError("search_result block: content must be a list of text blocks")
    texts = tuple(_text(p) for p in passages)
    return SearchResult(_str(d["source"], "source"), _str(d["title"], "title"), texts, _enabled(d))


def _source(d: dict[str, Any], kinds: tuple[str, ...]) -> dict[str, Any]:
    source = d["source"]
    kind = source.get("type") if isinstance(source, dict) else None
    if kind not in kinds:
        why = " (a file needs the Files API beta, which Endstate does not send)" if kind == "file" else ""
        raise ContentError(
            f"{d['type']} block: source type {kind!r} is not taken: use {' or '.join(kinds)}{why}"
        )
    return source


def _enabled(d: dict[str, Any]) -> bool:
    """A block's citations setting: off when not given, as the API reads it."""
    citations = d.get("citations")
    if citations is None:
        return False
    if not (isinstance(citations, dict) and isinstance(citations.get("enabled", False), bool)):
        raise ContentError(f"{d['type']} block: citations must be {{'enabled': true or false}}")
    return bool(citations.get("enabled", False))


def _str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise ContentError(f"the field {field!r} must be text, not {type(value).__name__}")
    return value


_CACHE_CONTROL = (
    "; cache_control: the Claude adapter places the request's cache breakpoints itself (cache=...), as "
    "many as the API takes, so one more in a result would have the request refused"
)
_PARSERS: dict[str, Any] = {
    "text": _text,
    "image": _image,
    "document": _document,
    "search_result": _search_result,
    "tool_reference": lambda d: ToolReference(_str(d["tool_name"], "tool_name")),
}
_FIELDS = {
    "text": {"type", "text"},
    "image": {"type", "source"},
    "document": {"type", "source", "title", "context", "citations"},
    "search_result": {"type", "source", "title", "content", "citations"},
    "tool_reference": {"type", "tool_name"},
}


# -- as text --------------------------------------------------------------------------------------


def text_of(blocks: Iterable[Block]) -> str:
    """The blocks as text, for what reads results as text: text as it is, a search result or a text
    document with its passages, and a placeholder for an image or a PDF (its media type, its size and
    a checksum of its data, so two screenshots that differ read differently; never the data)."""
    return "\n".join(_text_form(b) for b in blocks)


def _text_form(block: Block) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, Image):
        return f"[image {block.url}]" if block.url else f"[image {block.media_type}, {_sized(block.data)}]"
    if isinstance(block, Document):
        head = f"[document{f' {block.title!r}' if block.title else ''}"
        if block.url:
            return f"{head} {block.url}]"
        return f"{head} application/pdf, {_sized(block.data)}]" if block.data else f"{head}]\n{block.text}"
    if isinstance(block, SearchResult):
        return f"[search result {block.title!r} from {block.source}]\n" + "\n".join(block.content)
    return f"[tool reference {block.tool_name}]"


def _sized(data: str) -> str:
    size = len(data) * 3 // 4 - data[-2:].count("=")
    return f"{size:,} bytes, crc32 {zlib.crc32(data.encode('ascii')):08x}"


def text_chars(blocks: Iterable[Block]) -> int:
    """How many characters of text the blocks hold (what a cap on a result's length counts)."""
    return sum(len(t) for b in blocks for t in _texts(b))


def _texts(block: Block) -> tuple[str, ...]:
    if isinstance(block, str):
        return (block,)
    if isinstance(block, SearchResult):
        return block.content
    return (block.text,) if isinstance(block, Document) and block.text else ()


def media_count(blocks: Iterable[Block]) -> int:
    """How many images and PDFs the blocks hold (what they cost the model is not in their text)."""
    return sum(1 for b in blocks if isinstance(b, Image) or (isinstance(b, Document) and not b.text))


def media_tokens(blocks: Iterable[Block]) -> int:
    """About the tokens the images and PDFs of the blocks cost the model: `MEDIA_TOKENS` an image (the
    most one costs), `PDF_PAGE_TOKENS` a page of a PDF (a PDF at a URL, whose pages are not known
    until the API fetches it, as one page; the reply's usage counts it then)."""
    return sum(_media_tokens(b) for b in blocks)


def _media_tokens(block: Block) -> int:
    if isinstance(block, Image):
        return MEDIA_TOKENS
    if isinstance(block, Document) and not block.text:
        return PDF_PAGE_TOKENS * (block.pages or 1)
    return 0


def cut_text(blocks: Sequence[Block], cap: int) -> tuple[Block, ...]:
    """The blocks with their text cut to `cap` characters in all (the first kept); an image, a PDF or a
    tool reference is kept whole, and a block whose text is all cut is left out."""
    out: list[Block] = []
    left = cap
    for block in blocks:
        texts = _texts(block)
        if not texts:
            out.append(block)
            continue
        kept = []
        for t in texts:
            kept.append(t[: max(left, 0)])
            left -= len(t)
        if any(k.strip() for k in kept):
            out.append(_with_texts(block, tuple(k for k in kept if k.strip())))
    return tuple(out)


def _with_texts(block: Block, texts: tuple[str, ...]) -> Block:
    if isinstance(block, str):
        return texts[0]
    if isinstance(block, SearchResult):
        return replace(block, content=texts)
    return replace(block, text=texts[0]) if isinstance(block, Document) else block


# -- checks --------------------------------------------------------------------------------------


def _decoded(data: Any, what: str, most: int) -> bytes:
    """The bytes of base64 `data`, checked: text, base64, and at most `most` characters."""
    if not isinstance(data, str) or not data:
        raise ContentError(f"{what}: data must be base64 text (use from_bytes to give bytes)")
    if len(data) > most:
        raise ContentError(
            f"{what}: data is {len(data):,} characters of base64, over the {most:,} the API takes: "
            "make it smaller (downscale an image, or send it as JPEG)"
        )
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        raise ContentError(f"{what}: data is not base64 ({exc}): encode the bytes with from_bytes") from None


def _checked_pdf(data: str) -> int | None:
    """The pages of base64 PDF `data`, checked: a PDF, of no more pages than a request takes."""
    raw = _decoded(data, "document", MAX_PDF_BASE64)
    if not raw.startswith(b"%PDF-"):
        raise ContentError("document: data is no PDF (it does not start with %PDF-); for text, pass text=")
    pages = pdf_pages(raw)
    if pages is not None and pages > MOST_PDF_PAGES:
        raise ContentError(
            f"document: a PDF of {pages:,} pages, over the {MOST_PDF_PAGES} a request takes: split it into "
            "parts (or return the pages asked for)"
        )
    return pages


_PAGE_TREE = re.compile(rb"/Type\s*/Pages\b")
_COUNT = re.compile(rb"/Count\s+(\d+)")
_PAGE = re.compile(rb"/Type\s*/Page\b(?!s)")
_OBJECT_STREAM = re.compile(rb"/Type\s*/ObjStm\b.*?stream\r?\n", re.S)
MOST_INFLATED = 16 * 1024 * 1024  # bytes an object stream is inflated to, at most, to find the page tree


def pdf_pages(raw: bytes) -> int | None:
    """How many pages a PDF has: the largest `/Count` of a page tree node (the root's counts them all),
    in the file or in its compressed object streams; else the page objects found; None when neither is
    there. Read without a PDF library: a damaged file gives None, never an error."""
    parts = [raw, *_object_streams(raw)]
    counts = [int(c) for part in parts for c in _tree_counts(part)]
    if counts:
        return max(counts)
    pages = sum(len(_PAGE.findall(part)) for part in parts)
    return pages or None


def _tree_counts(part: bytes) -> list[bytes]:
    """The `/Count` values of the page tree nodes in `part` (each dictionary's own, before its `>>`)."""
    found = []
    for node in _PAGE_TREE.finditer(part):
        start = part.rfind(b"<<", 0, node.start())
        end = part.find(b">>", node.end())
        if start >= 0 and end >= 0 and (count := _COUNT.search(part, start, end)):
            found.append(count.group(1))
    return found


def _object_streams(raw: bytes) -> list[bytes]:
    """The inflated object streams of a PDF (where a PDF 1.5 file may keep its page tree)."""
    found = []
    for head in _OBJECT_STREAM.finditer(raw):
        end = raw.find(b"endstream", head.end())
        try:
            found.append(zlib.decompressobj().decompress(raw[head.end() : end], MOST_INFLATED))
        except zlib.error:
            continue
    return found


def _sniffed(raw: bytes) -> str | None:
    """The image media type the bytes start with, or None."""
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return next((media for magic, media in _MAGIC.items() if raw.startswith(magic)), None)


def _dimensions(raw: bytes) -> tuple[int, int] | None:
    """(width, height) read from an image's header; None when the header is not where it is looked for."""
    if raw.startswith(b"\x89PNG") and raw[12:16] == b"IHDR" and len(raw) >= 24:
        return _be(raw[16:20]), _be(raw[20:24])
    if raw.startswith(b"GIF") and len(raw) >= 10:
        return _le(raw[6:8]), _le(raw[8:10])
    if raw.startswith(b"RIFF") and len(raw) >= 30:
        return _webp_dimensions(raw)
    return _jpeg_dimensions(raw) if raw.startswith(b"\xff\xd8") else None


def _webp_dimensions(raw: bytes) -> tuple[int, int] | None:
    kind = raw[12:16]
    if kind == b"VP8X":
        return 1 + _le(raw[24:27]), 1 + _le(raw[27:30])
    if kind == b"VP8L":
        bits = _le(raw[21:25])
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    return (_le(raw[26:28]) & 0x3FFF, _le(raw[28:30]) & 0x3FFF) if kind == b"VP8 " else None


def _jpeg_dimensions(raw: bytes) -> tuple[int, int] | None:
    """The size in a JPEG's frame header (SOF0 to SOF15, but DHT, JPG and DAC), found marker by marker
    (fill bytes before a marker skipped, markers that stand alone stepped over)."""
    at = 2
    while at + 9 <= len(raw) and raw[at] == 0xFF:
        marker = raw[at + 1]
        if marker == 0xFF:  # a fill byte
            at += 1
        elif 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return _be(raw[at + 7 : at + 9]), _be(raw[at + 5 : at + 7])
        elif marker == 0x01 or 0xD0 <= marker <= 0xD7:  # TEM, RSTn: no length
            at += 2
        elif (length := _be(raw[at + 2 : at + 4])) >= 2:
            at += 2 + length
        else:
            return None
    return None


def _be(data: bytes) -> int:
    return int.from_bytes(data, "big")


def _le(data: bytes) -> int:
    return int.from_bytes(data, "little")


def _need_url(url: Any, what: str, data: str) -> None:
    if data:
        raise ContentError(f"{what}: give data or a url, not both")
    if not (isinstance(url, str) and _web_url(url)):
        raise ContentError(f"{what}: url must be an http(s) URL, not {url!r:.80}")


def _web_url(url: str) -> bool:
    """An http(s) URL with a host and no whitespace or control character (the API fetches it)."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return False
    try:
        parts = urlsplit(url)
    except ValueError:  # a bad IPv6 host, a port that is no number
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)
