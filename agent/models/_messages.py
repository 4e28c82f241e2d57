"""The journal as Messages-API messages: the layout Anthropic's API and the scripted model read.

A reply's calls are answered in one user message that holds their results in
the reply's call order; the loop's notes and the task are user messages of
their own; suspensions, answers and stops are the loop's business and are
not sent (an answer reaches the model as the result of the call it answers).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.content import (
    MANY_IMAGES,
    MANY_IMAGES_SIDE,
    MOST_IMAGE_BASE64,
    MOST_IMAGES,
    Block,
    Image,
    api_block,
)
from agent.journal import NO_DATA, Call, Entry, Note, Opaque, Reply, Result, Task, Text

Message = dict[str, Any]


def messages_of(journal: Iterable[Entry]) -> list[Message]:
    """The history as the Messages API takes it (empty replies and blank text left out: the API
    refuses them)."""
    out: list[Message] = []
    results: list[Result] = []
    order: dict[str, int] = {}
    entries = journal if isinstance(journal, list | tuple) else list(journal)
    rules = _Rules(unsent=_unsent_images(entries))
    for entry in entries:
        if isinstance(entry, Result):
            results.append(entry)
            continue
        if isinstance(entry, Task | Note | Reply):
            _flush(out, results, order, rules)
        if isinstance(entry, Task | Note):
            out.append({"role": "user", "content": entry.text})
        elif isinstance(entry, Reply):
            order = {c.id: i for i, c in enumerate(entry.calls)}
            if blocks := [block_of(p) for p in entry.parts if not _blank(p)]:
                out.append({"role": "assistant", "content": blocks})
    _flush(out, results, order, rules)
    return out


def message_count(journal: Sequence[Entry]) -> int:
    """`len(messages_of(journal))`, counted without building a message: each task and note, each
    reply with something to send, and each run of tool results between them."""
    count, results = 0, False
    for entry in journal:
        if isinstance(entry, Result):
            results = True
        elif isinstance(entry, Task | Note | Reply):
            sent = not isinstance(entry, Reply) or any(not _blank(p) for p in entry.parts)
            count, results = count + results + sent, False
    return count + results


@dataclass
class _Rules:
    """What one request must hold to the API's rules across its tool results: the citations setting
    of each kind so far (see `_cited_alike`), and the images not sent, each with the note sent instead
    (see `_unsent_images`), by (id of the result, index of the block)."""

    cited: dict[str, bool] = field(default_factory=dict)
    unsent: dict[tuple[int, int], str] = field(default_factory=dict)


def _flush(out: list[Message], results: list[Result], order: dict[str, int], rules: _Rules) -> None:
    if results:
        ordered = sorted(results, key=lambda r: order.get(r.call_id, len(order)))
        out.append({"role": "user", "content": [result_block(r, rules) for r in ordered]})
        results.clear()


OLD_IMAGE = (
    "[an image not sent: a request takes at most {most} images, and this is one of the oldest; "
    "call the tool again to see it]"
)
LARGE_IMAGES = (
    "[an image not sent: with it the request's images would pass {mb} MB, and the API takes 32 MB "
    "a request; call the tool again to see it]"
)
BIG_IMAGE = (
    "[an image of {w}x{h} pixels not sent: a request of more than {many} images takes none over "
    "{side} pixels a side; call the tool again for a smaller one to see it]"
)


def _unsent_images(entries: Sequence[Entry]) -> dict[tuple[int, int], str]:
    """The images of tool results the API would refuse in this request, each with the note sent in its
    place: the oldest past `MOST_IMAGE_BASE64` of base64 or past `MOST_IMAGES`, and past `MANY_IMAGES`
    those over `MANY_IMAGES_SIDE` a side.
    A run of screenshots would otherwise end in an error, every later request refused the same way."""
    images = [
        ((id(e), i), b)
        for e in entries
        if isinstance(e, Result) and e.blocks
        for i, b in enumerate(e.blocks)
        if isinstance(b, Image)
    ]
    unsent = _past_room(images)
    if len(images) <= MANY_IMAGES:
        return unsent
    oldest = max(0, len(images) - MOST_IMAGES)
    unsent |= {key: OLD_IMAGE.format(most=MOST_IMAGES) for key, _ in images[:oldest]}
    for key, image in images[oldest:]:
        if key not in unsent and image.pixels and max(image.pixels) > MANY_IMAGES_SIDE:
            w, h = image.pixels
            unsent[key] = BIG_IMAGE.format(w=w, h=h, many=MANY_IMAGES, side=MANY_IMAGES_SIDE)
    return unsent


def _past_room(images: list[tuple[tuple[int, int], Image]]) -> dict[tuple[int, int], str]:
    """The older images past `MOST_IMAGE_BASE64` of base64 in all, counted from the newest (the API
    refuses a request over 32 MB: a run of large screenshots would pass it in a few turns)."""
    room, unsent = MOST_IMAGE_BASE64, {}
    for key, image in reversed(images):
        room -= len(image.data)
        if room < 0:
            unsent[key] = LARGE_IMAGES.format(mb=MOST_IMAGE_BASE64 // 2**20)
    return unsent


def _blank(part: Text | Call | Opaque) -> bool:
    """A text part with no visible text: the API refuses it in a request, and it says nothing."""
    return isinstance(part, Text) and not part.text.strip()


def block_of(part: Text | Call | Opaque) -> dict[str, Any]:
    """The content block of a reply part, with the provider's own fields it came with."""
    block: dict[str, Any]
    if isinstance(part, Text):
        block = {"type": "text", "text": part.text}
    elif isinstance(part, Call):
        block = {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
    else:
        return dict(part.data)
    data = part.provider_data
    return block if data is NO_DATA or not data else {**data, **block}  # `is`: most parts, and quick


def result_block(result: Result, rules: _Rules | None = None) -> dict[str, Any]:
    """A result as a tool_result block: its text, or its content blocks (agent.content) as they are,
    but as the request's `rules` say (citations alike, images the API would refuse left out)."""
    if not result.blocks:
        content: str | list[dict[str, Any]] = result.text
    else:
        rules = rules or _Rules()
        content = [_sent(result, i, b, rules) for i, b in enumerate(result.blocks)]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id, "content": content}
    return block | {"is_error": True} if result.is_error else block


# The fields of a text and of a tool_use block the journal types; a block's others are provider data.
TEXT_FIELDS = frozenset({"type", "text"})
CALL_FIELDS = frozenset({"type", "id", "name", "input"})


UNKNOWN_TOOL = "[a reference to the tool {name!r} not sent: this request defines no tool of that name]"


def with_known_references(messages: list[Message], tools: Iterable[str]) -> list[Message]:
    """The messages with each tool_reference to a tool the request does not define sent as a note
    instead: the API refuses a whole request for one (a tool may name any tool, and an agent's tools
    may change between a suspension and its resume)."""
    names = set(tools)
    return [_known_references(m, names) if _references(m) else m for m in messages]


def _references(message: Message) -> bool:
    content = message["content"]
    return message["role"] == "user" and isinstance(content, list) and any(_refers(b) for b in content)


def _refers(block: dict[str, Any]) -> bool:
    inner = block.get("content") if block.get("type") == "tool_result" else None
    return isinstance(inner, list) and any(b.get("type") == "tool_reference" for b in inner)


def _known_references(message: Message, names: set[str]) -> Message:
    content = [_known_in(b, names) if _refers(b) else b for b in message["content"]]
    return {**message, "content": content}


def _known_in(result: dict[str, Any], names: set[str]) -> dict[str, Any]:
    def known(b: dict[str, Any]) -> dict[str, Any]:
        if b.get("type") != "tool_reference" or b.get("tool_name") in names:
            return b
        return {"type": "text", "text": UNKNOWN_TOOL.format(name=b.get("tool_name"))}

    return {**result, "content": [known(b) for b in result["content"]]}


def _sent(result: Result, index: int, block: Block, rules: _Rules) -> dict[str, Any]:
    if (note := rules.unsent.get((id(result), index))) is not None:
        return {"type": "text", "text": note}
    return _cited_alike(api_block(block), rules.cited)


def _cited_alike(block: dict[str, Any], cited: dict[str, bool]) -> dict[str, Any]:
    """The API refuses a request whose search results, or whose documents, do not all have citations
    on or all off: each is sent with the setting of the first of its kind in the request (the first
    stays as it was sent before, so a cached prefix holds)."""
    kind = block["type"]
    if kind not in ("search_result", "document"):
        return block
    on = bool(block.get("citations", {}).get("enabled", False))
    first = cited.setdefault(kind, on)
    return block if first == on else block | {"citations": {"enabled": first}}


def part_of(block: dict[str, Any]) -> Text | Call | Opaque:
    """A reply part from a Messages-API content block (anything but text and tool_use kept verbatim;
    the other fields of a text or tool_use block, such as `citations` or `caller`, too)."""
    kind = block.get("type")
    if kind == "text":
        return Text(block["text"], _others(block, TEXT_FIELDS) if len(block) > 2 else NO_DATA)
    if kind == "tool_use":
        others = _others(block, CALL_FIELDS) if len(block) > 4 else NO_DATA
        return Call(block["id"], block["name"], dict(block.get("input") or {}), others)
    return Opaque(dict(block))


def _others(block: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """The fields of `block` the journal does not type, but `cache_control`: a breakpoint belongs to
    a request, not to what the model wrote."""
    return {k: v for k, v in block.items() if k not in known and k != "cache_control"}
