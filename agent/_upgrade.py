"""Version-1 snapshots (Messages-API dicts with open result slots) turned into a journal."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agent._codec import _blocks, _suspension, need
from agent.content import text_of
from agent.errors import SnapshotError
from agent.journal import Call, Entry, Note, Opaque, Part, Reply, Result, Suspended, Task, Text

_NOT_RUN = ("Not run:", "Error: there is no tool")
# how version 1 worded the result of a call it did not run because it was denied (by a person, or by
# the help policy at the deadline): "Denied by {who}: {reason}. Do not retry this call."
_DENIED_BY = ("Denied by a person: ", "Denied by the help policy, as nobody answered in time: ")
_DENIED_END = ". Do not retry this call."


def journal_of_messages(messages: list[dict[str, Any]]) -> list[Entry]:
    """The journal that Messages-API messages describe (the first user message is the task)."""
    journal: list[Entry] = []
    calls: dict[str, Call] = {}
    for i, message in enumerate(messages):
        journal.extend(_entries(message, i, calls))
    return journal


def journal_from_v1(data: dict[str, Any]) -> list[Entry]:
    """The journal a version-1 snapshot describes."""
    messages = need(data, "messages", list)
    journal: list[Entry] = []
    calls: dict[str, Call] = {}
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise SnapshotError(f"snapshot field 'messages[{i}]' must be an object")
        journal.extend(_entries(message, i, calls))
    if not journal or not isinstance(journal[0], Task):
        journal.insert(0, Task(need(data, "task", str)))
    journal.extend(_open_results(data, calls, journal))
    return journal


def _entries(message: dict[str, Any], index: int, calls: dict[str, Call]) -> list[Entry]:
    role, content = message.get("role"), message.get("content")
    if role == "assistant":
        reply = Reply(tuple(_part(b, index) for b in content or []) if isinstance(content, list) else ())
        calls.update({c.id: c for c in reply.calls})
        return [reply]
    if isinstance(content, str):
        return [Task(content) if index == 0 else Note(content)]
    if isinstance(content, list):
        return [_result(b, calls) for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    if content is None:
        return []
    raise SnapshotError(f"snapshot field 'messages[{index}]' has content of an unknown shape")


def _part(block: Any, index: int) -> Part:
    if not isinstance(block, dict):
        raise SnapshotError("a version-1 message block must be an object")
    if block.get("type") == "text":
        return Text(str(block.get("text", "")))
    if block.get("type") == "tool_use":
        try:
            return Call(
                need(block, "id", str), need(block, "name", str), need(block, "input", dict | None) or {}
            )
        except SnapshotError as exc:
            raise SnapshotError(f"snapshot field 'messages[{index}]', a tool_use block: {exc}") from exc
    return Opaque(dict(block))


def _result(block: dict[str, Any], calls: dict[str, Call]) -> Result:
    call_id = str(block.get("tool_use_id", ""))
    content = block.get("content", "")
    blocks = _blocks(content) if isinstance(content, list) else ()
    text = content if isinstance(content, str) else text_of(blocks) if blocks else str(content)
    call = calls.get(call_id)
    ran = call.name if call and call.name != "finish" and not _not_run(text) else None
    return Result(call_id, text, bool(block.get("is_error", False)), ran, blocks=blocks)


def _not_run(text: str) -> bool:
    """True when a version-1 result says its call never ran: not run for a pause, no such tool, denied."""
    return text.startswith(_NOT_RUN) or (text.startswith(_DENIED_BY) and text.endswith(_DENIED_END))


def _open_results(data: dict[str, Any], calls: dict[str, Call], journal: list[Entry]) -> list[Entry]:
    """The results of a turn in flight, and the suspension at its open slot."""
    slots = need(data, "open_results", list, [])
    last = next((e for e in reversed(journal) if isinstance(e, Reply)), None)
    reply_calls = last.calls if last else []
    out: list[Entry] = []
    suspension = need(data, "suspension", dict | None, None)
    for call, slot in zip(reply_calls, slots, strict=False):
        if slot is None and suspension is not None:
            s = _suspension(suspension)
            call_id = s.pending.tool_use_id if s.pending else call.id
            out.append(Suspended(replace(s, call_id=call_id)))
        elif isinstance(slot, dict):
            out.append(_result(slot, calls))
    if suspension is not None and not any(isinstance(e, Suspended) for e in out):
        out.append(Suspended(_suspension(suspension)))
    # the suspension goes after the results of the other calls, as the loop writes them now
    return sorted(out, key=lambda e: isinstance(e, Suspended))
