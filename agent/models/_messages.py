"""The journal as Messages-API messages: the layout Anthropic's API and the scripted model read.

A reply's calls are answered in one user message that holds their results in
the reply's call order; the loop's notes and the task are user messages of
their own; suspensions, answers and stops are the loop's business and are
not sent (an answer reaches the model as the result of the call it answers).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent.journal import Call, Entry, Note, Opaque, Reply, Result, Task, Text

Message = dict[str, Any]


def messages_of(journal: Iterable[Entry]) -> list[Message]:
    """The history as the Messages API takes it (empty replies and blank text left out: the API
    refuses them)."""
    out: list[Message] = []
    results: list[Result] = []
    order: dict[str, int] = {}
    for entry in journal:
        if isinstance(entry, Result):
            results.append(entry)
            continue
        if isinstance(entry, Task | Note | Reply):
            _flush(out, results, order)
        if isinstance(entry, Task | Note):
            out.append({"role": "user", "content": entry.text})
        elif isinstance(entry, Reply):
            order = {c.id: i for i, c in enumerate(entry.calls)}
            if blocks := [block_of(p) for p in entry.parts if not _blank(p)]:
                out.append({"role": "assistant", "content": blocks})
    _flush(out, results, order)
    return out


def _flush(out: list[Message], results: list[Result], order: dict[str, int]) -> None:
    if results:
        ordered = sorted(results, key=lambda r: order.get(r.call_id, len(order)))
        out.append({"role": "user", "content": [result_block(r) for r in ordered]})
        results.clear()


def _blank(part: Text | Call | Opaque) -> bool:
    """A text part with no visible text: the API refuses it in a request, and it says nothing."""
    return isinstance(part, Text) and not part.text.strip()


def block_of(part: Text | Call | Opaque) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Call):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
    return dict(part.data)


def result_block(result: Result) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id, "content": result.text}
    return block | {"is_error": True} if result.is_error else block


def part_of(block: dict[str, Any]) -> Text | Call | Opaque:
    """A reply part from a Messages-API content block (anything but text and tool_use kept verbatim)."""
    kind = block.get("type")
    if kind == "text":
        return Text(block["text"])
    if kind == "tool_use":
        return Call(block["id"], block["name"], dict(block.get("input") or {}))
    return Opaque(dict(block))
