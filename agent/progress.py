"""No-progress detection: the loop is moving but the world is not."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from agent._codec import canonical_json
from agent._valid import is_whole
from agent.errors import ConfigError
from agent.journal import Answered, Entry, Reply, Result
from agent.stops import StopKind


def digest(state: str) -> str:
    """A short digest of an observed state (a tool result, or the agent's own fingerprint)."""
    if not isinstance(state, str):
        raise ConfigError(f"the agent's fingerprint must return a string, not {type(state).__name__}")
    return hashlib.blake2b(state.encode(errors="surrogatepass"), digest_size=8).hexdigest()


def replay(detector: ProgressDetector, journal: Iterable[Entry]) -> None:
    """Bring a fresh detector to where a run's journal left it: each tool that ran (or was denied: its
    result has a `seen`) is observed with the state digest it saw, and each completed turn is closed (a
    paused reply is not a turn)."""
    calls: dict[str, str] = {}
    turn_open = False
    for entry in journal:
        if isinstance(entry, Reply):
            if turn_open:
                detector.end_turn()
            turn_open = entry.stop != StopKind.PAUSED
            calls = {c.id: call_signature(c.name, c.arguments) for c in entry.calls}
        elif isinstance(entry, Result) and (entry.ran or entry.seen) and entry.call_id in calls:
            detector.observe(calls[entry.call_id], entry.seen or digest(entry.text))
        elif isinstance(entry, Answered):
            detector.heard()


def call_signature(name: str, arguments: dict[str, Any]) -> str:
    """Tool name plus canonical arguments: key order and spacing do not matter, and neither do
    what JSON holds to be the same value written two ways (`1` and `1.0`, `-0.0` and `0`) or the
    same text in two Unicode forms (`é` composed or as `e` and an accent): see `_plain`.

    A signature is only compared with others made by this function (progress is rebuilt from
    the journal on resume, never stored), so its digest may change between versions. Arguments
    whose canonical text is short are their own signature (no hash to pay for; they cannot pass
    for a digest: they start with `{`, or NUL when tagged)."""
    canonical = _canonical(arguments)
    if not canonical.isascii() or b"e+" in canonical or _WHOLE.search(canonical):  # see `_WHOLE`
        with suppress(RecursionError):  # a cycle, or nesting no model writes: taken as it was
            canonical = _canonical(_plain(arguments))
    if len(canonical) <= _SHORT:
        return f"{name}:{canonical.decode()}"  # UTF-8 (`_canonical` writes no lone surrogate)
    return f"{name}:{hashlib.blake2b(canonical, digest_size=8).hexdigest()}"


# A whole float in canonical JSON (`1.0`, `-0.0`; `1e+20` is found apart, as `e+`), maybe: a match
# in a string (`"v1.0]"`) only costs the walk of `_plain`, which finds nothing to change. Non-ASCII
# text is walked too, to be written in one Unicode form.
_WHOLE = re.compile(rb"\.0[,\]}]")
_SHORT = 48  # bytes of canonical arguments kept as they are in a signature; longer ones are hashed


def _plain(value: Any) -> Any:
    """`value` with each whole float as the integer it equals and each text in Unicode's NFC form
    (dict keys too, unless two keys would become one); `value` itself when nothing changes, so the
    usual arguments (ASCII text, integers) cost one walk and no copy."""
    if isinstance(value, str):
        return value if value.isascii() else unicodedata.normalize("NFC", value)
    if isinstance(value, float):
        return int(value) if value.is_integer() else value  # NaN and the infinities are not whole
    if isinstance(value, dict):
        items = [(_plain(k), _plain(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
            return value
        plain = dict(items)
        return plain if len(plain) == len(value) else {k: b for (_, b), k in zip(items, value, strict=True)}
    if isinstance(value, list | tuple):
        seq = [_plain(v) for v in value]
        return value if all(a is b for a, b in zip(seq, value, strict=True)) else seq
    return value


def _canonical(arguments: dict[str, Any]) -> bytes:
    """The arguments as JSON with sorted keys: orjson's (fast), or the standard library's for
    what orjson refuses (a non-string key, an integer past 64 bits, a lone surrogate) or cannot
    tell apart (it writes NaN and the infinities as null, as it writes None). What neither can
    write (a set, bytes, an object, keys of mixed types, a cycle, nesting past the recursion
    limit) gets a tagged text instead (`_tagged`): a signature is never an exception."""
    try:
        return canonical_json(arguments)
    except (TypeError, ValueError, RecursionError):
        return b"\x00" + _tagged(arguments, 0, frozenset()).encode(errors="backslashreplace")


_DEEPEST = 100  # `_tagged` cuts nesting below this (JSON that deep never comes from a model)


def _tagged(value: Any, depth: int, outer: frozenset[int]) -> str:
    """A canonical text for any value: type-tagged, containers by their items (a dict's and a set's
    sorted), each item length-prefixed so no text inside can pass for structure. A cycle, or
    nesting past `_DEEPEST`, is written as a marker."""
    if isinstance(value, str | bytes | int | float | type(None)):
        return f"{type(value).__qualname__}:{_repr(value)}"
    if id(value) in outer or depth > _DEEPEST:
        return "cut"
    inner = outer | {id(value)}
    if isinstance(value, dict):
        items = sorted(
            _item(_item(_tagged(k, depth + 1, inner)) + _item(_tagged(v, depth + 1, inner)))
            for k, v in value.items()
        )
        return "dict{" + "".join(items) + "}"
    if isinstance(value, list | tuple):
        return "list[" + "".join(_item(_tagged(v, depth + 1, inner)) for v in value) + "]"
    if isinstance(value, set | frozenset):
        return "set{" + "".join(sorted(_item(_tagged(v, depth + 1, inner)) for v in value)) + "}"
    return f"{type(value).__module__}.{type(value).__qualname__}:{_repr(value)}"


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # a broken __repr__ must not end the run
        return "?"


def _item(text: str) -> str:
    return f"{len(text)}:{text}"


@dataclass
class ProgressDetector:
    """Stops a run that repeats itself.

    Stuck when the same call (name plus canonical arguments) is made
    `max_repeats` times with no change in the state fingerprint between them,
    or when `max_idle_turns` turns in a row bring no observation not seen
    before. The fingerprint is the agent's own (rows changed, files written);
    without one, the call's result stands in for the state it observed.
    """

    max_repeats: int = 3
    max_idle_turns: int | None = 10
    _repeats: dict[str, tuple[str, int]] = field(default_factory=dict)
    _seen: set[str] = field(default_factory=set)
    _idle_turns: int = 0
    _turn_had_news: bool = False
    _worst: tuple[str, int] = ("", 0)  # the most repeated call so far and its count

    def __post_init__(self) -> None:
        repeats, idle = self.max_repeats, self.max_idle_turns
        if not (is_whole(repeats) and repeats >= 2):
            raise ConfigError(
                f"ProgressDetector.max_repeats must be a whole number >= 2 (the same call made that many "
                f"times is stuck; 1 would stop a run at its first call), not {repeats!r}"
            )
        if idle is not None and not (is_whole(idle) and idle >= 1):
            raise ConfigError(
                f"ProgressDetector.max_idle_turns must be a whole number >= 1, or None for no idle rule, "
                f"not {idle!r}"
            )

    def observe(self, signature: str, fingerprint: str) -> None:
        """Record one tool call and the state fingerprint after it."""
        last = self._repeats.get(signature)
        count = last[1] + 1 if last and last[0] == fingerprint else 1
        self._repeats[signature] = (fingerprint, count)
        if count >= self._worst[1]:
            self._worst = (signature, count)
        observation = f"{signature}|{fingerprint}"
        if observation not in self._seen:
            self._seen.add(observation)
            self._turn_had_news = True

    def stuck(self) -> bool:
        """Whether some call has been made `max_repeats` times in a row with no change in state (the
        run is stuck: it stops at this turn's end). Quick: asked before each call."""
        return self._worst[1] >= self.max_repeats

    def stuck_on(self, signature: str) -> int | None:
        """How many times in a row the call `signature` was made with no change in state, when that is
        `max_repeats` or more (a further such call would change nothing: it is not run); else None."""
        last = self._repeats.get(signature)
        return last[1] if last is not None and last[1] >= self.max_repeats else None

    def heard(self) -> None:
        """Count this turn as one that brought something new: a reply from a person (or the help
        policy's default) to the run's question or pending call, which the model has not read yet."""
        self._turn_had_news = True

    def end_turn(self) -> str | None:
        """Close a turn; the reason the run is stuck, or None."""
        self._idle_turns = 0 if self._turn_had_news else self._idle_turns + 1
        self._turn_had_news = False
        signature, count = self._worst
        if count >= self.max_repeats:
            name = signature.split(":", 1)[0]
            return f"{name} called {count} times with the same arguments and no change in state"
        if self.max_idle_turns is not None and self._idle_turns >= self.max_idle_turns:
            return f"{self._idle_turns} turns in a row brought nothing new"
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "repeats": {k: list(v) for k, v in self._repeats.items()},
            "seen": sorted(self._seen),
            "idle_turns": self._idle_turns,
        }

    def load_json(self, data: dict[str, Any]) -> None:
        self._repeats = {k: (v[0], int(v[1])) for k, v in data.get("repeats", {}).items()}
        self._worst = max(
            ((k, c) for k, (_, c) in self._repeats.items()), key=lambda kc: kc[1], default=("", 0)
        )
        self._seen = set(data.get("seen", []))
        self._idle_turns = int(data.get("idle_turns", 0))
