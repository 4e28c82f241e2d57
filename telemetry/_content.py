"""Messages as the GenAI conventions' JSON, for opt-in content capture.

Messages API blocks (`text`, `tool_use`, `tool_result`) become parts (`text`,
`tool_call`, `tool_call_response`). Every string goes through the redactor
before it is serialised, so a secret never reaches a span attribute; an image
or a PDF a tool returned is a placeholder (media type and size), never its data.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from telemetry.redact import redact_fields

Redact = Callable[[str], str]

MAX_JSON_CHARS = 64_000  # the oldest messages are left out past this


def messages_json(messages: Sequence[dict[str, Any]], redact: Redact) -> str:
    """`gen_ai.input.messages`: the history, newest kept when it is too long (the newest always).

    Messages are converted newest first, only until MAX_JSON_CHARS is reached: converting and
    redacting the whole history at every model call made each turn of a long run slower than the
    last (100 turns of 20 kB results: 0.5 s a turn)."""
    kept: list[str] = []
    size = 2  # the brackets
    for m in reversed(messages):
        text = json.dumps(_message(m.get("role", "user"), m.get("content"), redact))
        size += len(text) + 2  # and its separator
        if kept and size > MAX_JSON_CHARS:
            break
        kept.append(text)
    return "[" + ", ".join(reversed(kept)) + "]"


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
