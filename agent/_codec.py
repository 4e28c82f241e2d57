"""Journal entries to JSON-ready dicts and back, checking every field's type on the way in."""

from __future__ import annotations

import dataclasses
import json
import math
import types
from collections.abc import Mapping
from typing import Any, NoReturn

import orjson

from agent.content import Block, ContentError, api_block, parse_block, text_of
from agent.errors import SnapshotError
from agent.journal import (
    NO_DATA,
    Answer,
    Answered,
    Approval,
    Call,
    Denial,
    Entry,
    Extended,
    HumanReply,
    Note,
    Opaque,
    Part,
    Reply,
    Result,
    Shrunk,
    Started,
    Stopped,
    Suspended,
    Task,
    Text,
)
from agent.stops import LimitKind, PendingAction, StopKind, StopReason, Suspension, kind_named, kind_to_keep

_MISSING = object()


def fail(where: str, expected: str, value: Any) -> NoReturn:
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    raise SnapshotError(f"snapshot field {where!r} must be {expected}, not {shown}")


def need(data: dict[str, Any], key: str, kind: Any, default: Any = _MISSING) -> Any:
    """`data[key]` checked against `kind` (a type or a union); `default` when absent."""
    value = data.get(key, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise SnapshotError(f"snapshot is missing the field {key!r}")
        return default
    if type(value) in (_AS_IS.get(kind) or _as_is(kind)):  # the usual case: exactly a type it allows
        return value
    allowed = kind.__args__ if isinstance(kind, types.UnionType) else (kind,)
    if not any(_fits(value, t) for t in allowed):
        fail(key, " or ".join("null" if t is type(None) else t.__name__ for t in allowed), value)
    if float in allowed and type(value) is int:  # JSON's 5 is the number 5.0
        try:
            return float(value)
        except OverflowError:
            fail(key, "a float", value)
    return value


def _fits(value: Any, t: type) -> bool:
    """Whether `value` is a `t`: a bool is no number, and an int is a float (JSON says `5` for 5.0)."""
    if t is type(None):
        return value is None
    if isinstance(value, bool):
        return t is bool
    return isinstance(value, int | float) if t is float else isinstance(value, t)


def _as_is(kind: Any) -> frozenset[type]:
    """The types a value of `kind` is taken as it is: those allowed, but an int where a float is
    allowed (it becomes one). A subclass (a bool for an int) goes the checked way."""
    allowed = set(kind.__args__ if isinstance(kind, types.UnionType) else (kind,))
    found = _AS_IS[kind] = frozenset(allowed - {int} if float in allowed else allowed)
    return found


_AS_IS: dict[Any, frozenset[type]] = {}


# -- encode -------------------------------------------------------------------------------------


def encode_entry(entry: Entry) -> dict[str, Any]:
    if isinstance(entry, Reply):
        encoded = {"type": "reply", **_plain(entry), "parts": [_encode_part(p) for p in entry.parts]}
        if (kept := kind_to_keep(entry.stop_reason, entry.stop)) is not None:
            encoded["stop"] = str(kept)  # only when its stop reason would not give it: see `kind_to_keep`
        return encoded
    if isinstance(entry, Suspended):
        return {"type": "suspended", "suspension": _suspension_dict(entry.suspension)}
    if isinstance(entry, Answered):
        return {"type": "answered", "at": entry.at, "by": entry.by, "reply": _encode_reply(entry.reply)}
    if isinstance(entry, Stopped):
        stopped = {"type": "stopped", "reason": str(entry.reason)}
        cut, at = entry.turn_cut or None, entry.at or None
        return stopped | _present(limit=entry.limit, note=entry.note, turn_cut=cut, at=at)
    if type(entry) is Result and entry.blocks:
        return _encode_blocks(entry)
    return {"type": _TYPE_OF[type(entry)], **_plain(entry)}


def _encode_blocks(result: Result) -> dict[str, Any]:
    """A result of content blocks: the blocks in the Messages API's shape, beside their text (their
    `text_of`: a placeholder for each image or PDF). A release before blocks reads the text and
    passes the blocks by, so a rolling deploy over one store does not fail on a new row; this
    release makes the text again from the blocks."""
    return {"type": "result", **_plain(result), "blocks": [api_block(b) for b in result.blocks]}


def _plain(entry: Any) -> dict[str, Any]:
    """The entry's fields but its parts, leaving out those at their default (decoding fills them in:
    a value is left out when it is its default, or equal to it and of its type)."""
    fields = _FIELDS.get(type(entry)) or _fields_of(type(entry))
    got = vars(entry)
    plain = {k: v for k, d in fields if (v := got[k]) is not d and (type(v) is not type(d) or v != d)}
    if "provider_data" in plain:  # a reply's: a mapping, written as an object (left out when empty)
        plain["provider_data"] = dict(plain["provider_data"])
        if not plain["provider_data"]:
            del plain["provider_data"]
    return plain


def _fields_of(kind: type) -> tuple[tuple[str, Any], ...]:
    """(name, default) of each field of an entry type but those written apart; `_MISSING` for no
    default."""
    found = _FIELDS[kind] = tuple(
        (f.name, _MISSING if f.default is dataclasses.MISSING else f.default)
        for f in dataclasses.fields(kind)
        if f.name not in _APART
    )
    return found


_FIELDS: dict[type, tuple[tuple[str, Any], ...]] = {}
_APART = ("parts", "stop")  # a reply's fields written apart (see `encode_entry`)


def _encode_part(part: Part) -> dict[str, Any]:
    encoded: dict[str, Any]
    if isinstance(part, Text):
        encoded = {"type": "text", "text": part.text}
    elif isinstance(part, Call):
        encoded = {"type": "call", "id": part.id, "name": part.name, "arguments": part.arguments}
    else:
        return {"type": "opaque", "data": part.data}
    data = part.provider_data
    return encoded if data is NO_DATA or not data else encoded | {"provider_data": dict(data)}


def _encode_reply(reply: HumanReply) -> dict[str, Any]:
    if isinstance(reply, Answer):
        return {"type": "answer", "text": reply.text}
    if isinstance(reply, Denial):
        return {"type": "denial", "reason": reply.reason}
    return {"type": "approval"}


def _suspension_dict(s: Suspension) -> dict[str, Any]:
    pending = vars(s.pending) if s.pending else None
    must = {"question": s.question, "deadline": s.deadline, "suspended_at": s.suspended_at}
    return must | _present(pending=pending, call_id=s.call_id)


def _present(**fields: Any) -> dict[str, Any]:
    """The fields that say something: None and empty text are what decoding assumes when absent."""
    return {k: v for k, v in fields.items() if v is not None and v != ""}


_TYPE_OF: dict[type, str] = {
    Task: "task",
    Note: "note",
    Result: "result",
    Started: "started",
    Shrunk: "shrunk",
    Extended: "extended",
}


def unkept(reply: Reply) -> str | None:
    """Why the journal cannot keep `reply` as it is (None when it can): a part of a type not in
    the journal, tool arguments or a provider block that are not JSON (`json_problem`), or two tool
    calls of one id (results and approvals are matched to calls by id).

    orjson checks the usual reply at C speed; what it refuses (an integer past 64 bits, a lone
    surrogate: JSON all the same) and what it writes as null (NaN, None: the store writes those with
    the standard library, which refuses an enum or a UUID that orjson takes) are checked in full."""
    return None if _usual(reply) else _reply_problem(reply)


def _usual(reply: Reply) -> bool:
    """Whether `reply` is one the journal keeps as it is, judged in one quick pass: text and tool calls
    with no provider data, names that are strings, distinct call ids, and arguments orjson writes with
    no null. Nearly every reply is; any other gets the full check (`_reply_problem`)."""
    if reply.provider_data is not NO_DATA or not (
        type(reply.stop_reason) is str and type(reply.model) is str and type(reply.response_id) is str
    ):
        return False
    ids: set[str] = set()
    arguments = []
    for part in reply.parts:
        if type(part) is Call and type(part.id) is type(part.name) is str and part.provider_data is NO_DATA:
            if part.id in ids:
                return False
            ids.add(part.id)
            arguments.append(part.arguments)
        elif not (type(part) is Text and type(part.text) is str and part.provider_data is NO_DATA):
            return False
    return not arguments or _plain_json(arguments)


def _reply_problem(reply: Reply) -> str | None:
    """`unkept`, every field checked."""
    if problem := _head_problem(reply):
        return problem
    plain, ids = True, set()
    for part in reply.parts:
        if isinstance(part, Call):
            if not (type(part.id) is str and type(part.name) is str) and (
                problem := _not_str(part.id, "id") or _not_str(part.name, "name")
            ):
                return f"tool call {part.name!r}: {problem}"
            if part.id in ids:
                return f"two tool calls share the id {part.id!r:.60}"
            ids.add(part.id)
            plain = plain and _plain_json(part.arguments)
        elif isinstance(part, Opaque):
            plain = plain and _plain_json(part.data)
        elif not isinstance(part, Text) or not isinstance(part.text, str):
            return f"a reply part {part!r:.60} is not text, a tool call or a provider block"
    return None if plain else _first_problem(reply.parts)


def _head_problem(reply: Reply) -> str | None:
    """Why the names or the provider data of `reply` or of its parts cannot be kept (None when they can)."""
    if not (type(reply.stop_reason) is str and type(reply.model) is str and type(reply.response_id) is str):
        for name in ("stop_reason", "model", "response_id"):
            if problem := _not_str(getattr(reply, name), name):
                return problem
    # `is not NO_DATA` first, as in `block_of`: most replies and parts have none, and the test is quick
    data = reply.provider_data
    if data is not NO_DATA and data and (problem := _data_problem(data, "the reply's provider data")):
        return problem
    for part in reply.parts:
        if isinstance(part, Text | Call) and (data := part.provider_data) is not NO_DATA and data:
            what = f"tool call {part.name!r}'s" if isinstance(part, Call) else "a text's"
            if problem := _data_problem(data, f"{what} provider data"):
                return problem
    return None


def _data_problem(data: Any, what: str) -> str | None:
    """Why provider data cannot be kept (None when it can): not a mapping, or not JSON."""
    try:
        plain = dict(data)
    except (TypeError, ValueError):
        return f"{what} is a {type(data).__name__}, not a mapping"
    return None if _plain_json(plain) else json_problem(plain, what)


def _first_problem(parts: tuple[Part, ...]) -> str | None:
    for part in parts:
        if isinstance(part, Call) and (problem := json_problem(part.arguments, "arguments")):
            return f"tool call {part.name!r}: {problem}"
        if isinstance(part, Opaque) and (problem := json_problem(part.data, "a provider block")):
            return problem
    return None


def _plain_json(value: Any) -> bool:
    """True when orjson writes `value`, writes no null, and what it writes reads back as `value` (the
    common case: nothing more to check). Not an enum or a UUID, which orjson writes as text but the
    standard library refuses: a snapshot's `to_json` writes with it, and so does the store an entry
    with a null anywhere in it (a text that says "null"). A tuple reads back as a list: checked in full."""
    try:
        text = orjson.dumps(value, option=_REFUSE_DATACLASS_AND_DATETIME)
    except TypeError:  # orjson.JSONEncodeError is one
        return False
    return b"null" not in text and orjson.loads(text) == value


_REFUSE_DATACLASS_AND_DATETIME = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def unwritable(value: Any) -> str | None:
    """Why a store (or `Snapshot.to_json`) cannot write `value` as JSON, None when it can: the same
    encoders in the same order (`canonical_json`), so that what passes here is written there; and
    no deeper than `MAX_DEPTH` levels, which the standard library's encoder writes (past orjson's
    limit) but every reader of the store's JSON, the service's responses included, chokes on."""
    # orjson writes no more than MAX_DEPTH levels; what it writes but does not read back as it was (an
    # enum, a UUID: the standard library, `Snapshot.to_json`'s, refuses them) is checked by the latter
    if (written := _orjson_canonical(value)) is not None and orjson.loads(written) == value:
        return None
    try:
        text = _stdlib_canonical(value)
    except RecursionError:  # how deep it gets first is the version's (3.13's writes 5,000 levels)
        return f"values nest deeper than {MAX_DEPTH} levels"
    except (TypeError, ValueError) as exc:  # ValueError: a cycle
        return str(exc) or type(exc).__name__
    if text.count("[") + text.count("{") > MAX_DEPTH and _nests_too_deep(value):  # counted first: quick
        return f"values nest deeper than {MAX_DEPTH} levels"
    return None


def canonical_json(value: Any) -> bytes:
    """`value` as JSON with sorted keys: orjson's (fast), or the standard library's for what orjson
    refuses (a non-string key, an integer past 64 bits, a lone surrogate, nesting past MAX_DEPTH) or
    writes as null (it writes NaN and the infinities as it writes None). Raises TypeError, ValueError
    (a cycle) or RecursionError when neither can write it (a set, bytes, an object, mixed key types)."""
    text = _orjson_canonical(value)
    return text if text is not None else _stdlib_canonical(value).encode()


def _orjson_canonical(value: Any) -> bytes | None:
    """orjson's canonical JSON for `value`; None when it refuses it or writes a null (see above)."""
    try:
        text = orjson.dumps(value, option=_CANONICAL_ORJSON)
    except TypeError:  # orjson.JSONEncodeError is one
        return None
    return text if b"null" not in text else None


def _nests_too_deep(value: Any) -> bool:
    """Whether `value` holds more than `MAX_DEPTH` dicts and lists inside each other (a level at a
    time, so no recursion)."""
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [item for v in level for item in _inside(v)]
        if not level:
            return False
    return any(isinstance(v, dict | list | tuple) for v in level)


def _inside(value: Any) -> Any:
    if isinstance(value, dict):
        return value.values()
    return value if isinstance(value, list | tuple) else ()


_CANONICAL_ORJSON = _REFUSE_DATACLASS_AND_DATETIME | orjson.OPT_SORT_KEYS
# made once (`json.dumps` with options builds an encoder per call)
_stdlib_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
MAX_DEPTH = 255  # JSON nested deeper is not kept (orjson's own limit; no model writes such arguments)
_LEAVES = (str, int, float, type(None))


def json_problem(value: Any, what: str, depth: int = 0) -> str | None:
    """What in `value` JSON cannot hold as it is (None when it can): objects with string keys,
    arrays, strings, numbers, true, false and null, at most `MAX_DEPTH` levels deep."""
    if isinstance(value, _LEAVES):
        return None
    if depth >= MAX_DEPTH:
        return f"{what} nest deeper than {MAX_DEPTH} levels (or hold themselves)"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{what} have a key {key!r:.60} that is not a string, which JSON cannot hold"
            if problem := json_problem(item, what, depth + 1):
                return problem
        return None
    if isinstance(value, list | tuple):
        return next((p for item in value if (p := json_problem(item, what, depth + 1))), None)
    return f"{what} hold a value of type {type(value).__name__} ({value!r:.60}), which JSON cannot hold"


def _not_str(value: Any, what: str) -> str | None:
    return None if isinstance(value, str) else f"its {what} {value!r:.60} is not a string"


# -- decode -------------------------------------------------------------------------------------


def decode_entry(data: Any, index: int) -> Entry:
    """One entry from its dict; a `SnapshotError` names the entry and the field that is wrong."""
    if not isinstance(data, dict):
        fail(f"journal[{index}]", "an object", data)
    kind = need(data, "type", str)
    decoder = _DECODERS.get(kind)
    if decoder is None:
        fail(f"journal[{index}].type", f"one of {', '.join(_DECODERS)}", kind)
    try:
        return decoder(data)
    except SnapshotError as exc:
        raise SnapshotError(f"journal[{index}] ({kind}): {exc}") from exc


def _reply(d: dict[str, Any]) -> Reply:
    parts = tuple(_part(p) for p in need(d, "parts", list))
    return Reply(
        parts,
        input_tokens=_count(d, "input_tokens"),
        output_tokens=_count(d, "output_tokens"),
        cache_read_tokens=_count(d, "cache_read_tokens"),
        cache_write_tokens=_count(d, "cache_write_tokens"),
        stop_reason=need(d, "stop_reason", str, "end_turn"),
        model=need(d, "model", str, ""),
        response_id=need(d, "response_id", str, ""),
        provider_data=_provider_data(d),
        stop=_kind(d),
    )


def _kind(d: dict[str, Any]) -> StopKind | None:
    """A reply's `stop`; None (the kind its stop reason gives) when the entry has none (written
    before entries kept it, or by the Messages API's words) or one this release does not know."""
    return kind_named(need(d, "stop", str, None))


MOST = 2**63 - 1  # the largest count a store's integer column holds


def _count(d: dict[str, Any], key: str) -> int:
    return counted(key, need(d, key, int, 0))


def counted(key: str, value: int) -> int:
    """`value`, a count a store can hold (0 to 2**63 - 1), or a `SnapshotError` naming `key`."""
    if not 0 <= value <= MOST:
        fail(key, "a count from 0 to 2**63 - 1", value)
    return int(value)


def _part(d: Any) -> Part:
    if not isinstance(d, dict):
        fail("parts", "a list of objects", d)
    kind = need(d, "type", str)
    if kind == "text":
        return Text(need(d, "text", str), _provider_data(d))
    if kind == "call":
        return Call(need(d, "id", str), need(d, "name", str), need(d, "arguments", dict), _provider_data(d))
    if kind == "opaque":
        return Opaque(need(d, "data", dict))
    fail("parts[].type", "text, call or opaque", kind)


def _provider_data(d: dict[str, Any]) -> Mapping[str, Any]:
    """The provider data of a reply or a part (absent in journals written before it was kept)."""
    data: dict[str, Any] | None = need(d, "provider_data", dict | None, None)
    return data if data else NO_DATA


def _result(d: dict[str, Any]) -> Result:
    blocks = _blocks(need(d, "blocks", list, []))
    return Result(
        need(d, "call_id", str),
        text_of(blocks) if blocks else need(d, "text", str),
        need(d, "is_error", bool, False),
        need(d, "ran", str | None, None),
        need(d, "seen", str, ""),
        blocks,
    )


def _blocks(data: list[Any]) -> tuple[Block, ...]:
    """A result's content blocks (absent in journals written before results held them)."""
    try:
        return tuple(parse_block(b) for b in data)
    except ContentError as exc:
        raise SnapshotError(f"a result's content block cannot be read: {exc}") from exc


def _suspension(d: dict[str, Any]) -> Suspension:
    pending = need(d, "pending", dict | None, None)
    if pending is not None:
        pending = PendingAction(
            need(pending, "tool_use_id", str), need(pending, "name", str), need(pending, "arguments", dict)
        )
    return Suspension(
        question=need(d, "question", str),
        deadline=_moment(d, "deadline", never=True),  # never: an endless wait stays readable
        suspended_at=_moment(d, "suspended_at"),
        pending=pending,
        call_id=need(d, "call_id", str, ""),
    )


def _moment(d: dict[str, Any], key: str, never: bool = False) -> float:
    """A time (seconds since the epoch) at `key`, finite (`never`: or +inf, no end). A NaN deadline
    is neither passed nor not (an answer goes in, and the sweep expires the run, alike), and a wait
    from a NaN or infinite moment has no length."""
    value: float = need(d, key, float)
    if not (-math.inf < value < math.inf or (never and value == math.inf)):
        fail(key, "a finite time in seconds" + (" (or Infinity)" if never else ""), value)
    return value


def _human(d: Any) -> HumanReply:
    if not isinstance(d, dict):
        fail("reply", "an object", d)
    kind = need(d, "type", str)
    if kind == "answer":
        return Answer(need(d, "text", str))
    if kind == "denial":
        return Denial(need(d, "reason", str, ""))
    if kind == "approval":
        return Approval()
    fail("reply.type", "answer, approval or denial", kind)


def _answered(d: dict[str, Any]) -> Answered:
    by = need(d, "by", str, "person")
    if by not in ("person", "policy"):
        fail("by", "'person' or 'policy'", by)
    return Answered(_human(need(d, "reply", dict)), need(d, "at", float), by)


def _stopped(d: dict[str, Any]) -> Stopped:
    try:
        reason = StopReason(need(d, "reason", str))
        limit = need(d, "limit", str | None, None)
        note, cut = need(d, "note", str, ""), need(d, "turn_cut", bool, False)
        return Stopped(reason, LimitKind(limit) if limit else None, note, cut, need(d, "at", float, 0.0))
    except ValueError as exc:
        raise SnapshotError(f"bad stop: {exc}") from exc


_DECODERS: dict[str, Any] = {
    "task": lambda d: Task(need(d, "text", str)),
    "reply": _reply,
    "note": lambda d: Note(need(d, "text", str)),
    "result": lambda d: _result(d),
    "started": lambda d: Started(need(d, "call_id", str)),
    "shrunk": lambda d: Shrunk(need(d, "upto", int), need(d, "summary", str | None, None)),
    "extended": lambda d: Extended(
        _count(d, "turns"),
        need(d, "seconds", float, 0.0),
        _count(d, "tokens"),
        need(d, "cost_usd", float, 0.0),
        need(d, "at", float, 0.0),
    ),
    "suspended": lambda d: Suspended(_suspension(need(d, "suspension", dict))),
    "answered": _answered,
    "stopped": _stopped,
}
