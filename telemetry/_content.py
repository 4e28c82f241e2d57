"""Messages as the GenAI conventions' JSON, for opt-in content capture.

Messages API blocks (`text`, `tool_use`, `tool_result`) become parts (`text`,
`tool_call`, `tool_call_response`). Every string goes through the redactor
before it is serialised, so a secret never reaches a span attribute; an image
or a PDF a tool returned is a placeholder (media type and size), never its data.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from agent.journal import FrozenDict, FrozenList
from telemetry.redact import redact_fields

Redact = Callable[[str], str]

MAX_JSON_CHARS = 64_000  # the oldest messages are left out past this


def messages_json(messages: Sequence[dict[str, Any]], redact: Redact) -> str:
    """`gen_ai.input.messages`: the history, newest kept when it is too long (the newest always).
    Each message is converted and redacted afresh: a run's spans use a `HistoryJson` of their own,
    which converts each message once."""
    return HistoryJson(redact)(messages)


class HistoryJson:
    """`messages_json` for one run's model calls, each message converted and redacted once.

    Messages are converted newest first, only until MAX_JSON_CHARS is reached: converting and
    redacting the whole history at every model call made each turn of a long run slower than the
    last (100 turns of 20 kB results: 0.5 s a turn). Within that window each call converted every
    message again (some 700 redactions a call in a run of short tool results: 20 ms a turn at 2,000
    turns): a message's JSON is kept, by its content, for as long as the window still shows it (the
    messages the last call wrote: at most about MAX_JSON_CHARS of JSON). A message holding anything
    but JSON-like values (dict, list, tuple, str, int, float, bool, None) is converted every time."""

    def __init__(self, redact: Redact) -> None:
        self._redact = redact
        self._kept: dict[Hashable, str] = {}  # a message's content (`_key`) -> its JSON

    def __call__(self, messages: Sequence[dict[str, Any]]) -> str:
        kept, used = self._kept, dict[Hashable, str]()
        shown: list[str] = []
        size = 2  # the brackets
        for m in reversed(messages):
            key = _key(m)
            text = kept.get(key) if key is not None else None
            if text is None:
                text = json.dumps(_message(m.get("role", "user"), m.get("content"), self._redact))
            if key is not None:
                used[key] = text
            size += len(text) + 2  # and its separator
            if shown and size > MAX_JSON_CHARS:
                break
            shown.append(text)
        self._kept = used  # what the window no longer shows is let go
        return "[" + ", ".join(reversed(shown)) + "]"


_LEAVES = (str, int, float, bool, type(None))
_MAX_KEY_DEPTH = 64  # a message nested deeper is converted every time


def _key(value: Any, depth: int = 0) -> Hashable | None:
    """`value` as a hashable key that is equal only for values written as the same JSON (each leaf
    with its type: `1`, `1.0` and `True` are equal in Python; a float by its `repr`: `-0.0` equals
    `0.0`), or None for a value holding anything else (whose `str` or equality could be anything)
    or nested deeper than _MAX_KEY_DEPTH. A string is its own key (it keeps its hash: the
    journal's texts are hashed once, however long)."""
    kind = type(value)
    if kind is str:
        return value
    if depth > _MAX_KEY_DEPTH:
        return None
    if kind is dict or kind is FrozenDict:  # a journal's own data is frozen (agent.journal.frozen)
        return _dict_key(value, depth + 1)
    if kind is list or kind is tuple or kind is FrozenList:
        return _items_key(list if kind is FrozenList else kind, value, depth + 1)
    if kind is float:
        return (float, repr(value))
    return (kind, value) if kind in _LEAVES else None


def _dict_key(value: dict[Any, Any], depth: int) -> Hashable | None:
    items = []
    for k, v in value.items():  # most keys and values are strings: no call for them
        kk = k if type(k) is str else _key(k, depth)
        vk = v if type(v) is str else _key(v, depth)
        if kk is None or vk is None:
            return None
        items.append((kk, vk))
    return (dict, tuple(items))


def _items_key(kind: type, value: Sequence[Any], depth: int) -> Hashable | None:
    items = []
    for v in value:
        if (vk := v if type(v) is str else _key(v, depth)) is None:
            return None
        items.append(vk)
    return (kind, tuple(items))


def output_json(content: Sequence[dict[str, Any]], finish_reason: str, redact: Redact) -> str:
    """`gen_ai.output.messages`: the one assistant message a reply holds."""
    message = _message("assistant", list(content), redact) | {"finish_reason": finish_reason}
    return json.dumps([message])


def system_json(system: str, redact: Redact) -> str:
    """`gen_ai.system_instructions`."""
    return json.dumps([{"type": "text", "content": redact(system)}])


def value_json(value: Any, redact: Redact) -> str:
    """A tool's arguments or result as redacted text (fields named like secrets out first). Each
    string is redacted before the JSON is written, as JSON escapes a secret that holds a quote, a
    backslash or a non-ASCII letter (`p\\u00e4ss`): the text written would no longer hold it."""
    if isinstance(value, str):
        return redact(value)
    return redact(json.dumps(redact_fields(value, text=redact), default=str, sort_keys=True))


def _without_data(content: Any) -> Any:
    """A tool result's content with each base64 image or PDF as a placeholder (its media type and
    size): the data would fill the span, and no reader of a trace can see it anyway."""
    if not isinstance(content, list):
        return content
    return [_placeholder(b) if _has_data(b) else b for b in content]


def _has_data(block: Any) -> bool:
    source = block.get("source") if isinstance(block, dict) else None
    return isinstance(source, dict) and source.get("type") == "base64"


def _placeholder(block: dict[str, Any]) -> dict[str, Any]:
    source = block["source"]
    data = source.get("data")
    size = len(data) * 3 // 4 if isinstance(data, str) else 0
    shown = {**source, "data": f"[{source.get('media_type')}, about {size:,} bytes, not captured]"}
    return {**block, "source": shown}


def _message(role: str, content: Any, redact: Redact) -> dict[str, Any]:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    return {"role": role, "parts": [_part(b, redact) for b in blocks if isinstance(b, dict)]}


def _part(block: dict[str, Any], redact: Redact) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "tool_use":
        args = value_json(block.get("input") or {}, redact)
        return {"type": "tool_call", "id": block.get("id"), "name": block.get("name"), "arguments": args}
    if kind == "tool_result":
        response = value_json(_without_data(block.get("content", "")), redact)
        return {"type": "tool_call_response", "id": block.get("tool_use_id"), "response": response}
    if kind == "text":
        return {"type": "text", "content": redact(str(block.get("text", "")))}
    return {"type": str(kind)}
