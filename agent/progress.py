"""No-progress detection: the loop is moving but the world is not."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from agent.journal import Entry, Reply, Result


def digest(state: str) -> str:
    """A short digest of an observed state (a tool result, or the agent's own fingerprint)."""
    return hashlib.blake2b(state.encode(errors="replace"), digest_size=8).hexdigest()


def replay(detector: ProgressDetector, journal: Iterable[Entry]) -> None:
    """Bring a fresh detector to where a run's journal left it: each tool that ran is observed
    with the state digest it saw, and each completed turn is closed (a paused reply is not a turn)."""
    calls: dict[str, str] = {}
    turn_open = False
    for entry in journal:
        if isinstance(entry, Reply):
            if turn_open:
                detector.end_turn()
            turn_open = entry.stop_reason != "pause_turn"
            calls = {c.id: call_signature(c.name, c.arguments) for c in entry.calls}
        elif isinstance(entry, Result) and entry.ran and entry.call_id in calls:
            detector.observe(calls[entry.call_id], entry.seen or digest(entry.text))


def call_signature(name: str, arguments: dict[str, Any]) -> str:
    """Tool name plus canonical arguments: key order and spacing do not matter.

    A signature is only compared with others made by this function (progress is rebuilt from
    the journal on resume, never stored), so its digest may change between versions."""
    return f"{name}:{hashlib.blake2b(_canonical(arguments), digest_size=8).hexdigest()}"


def _canonical(arguments: dict[str, Any]) -> bytes:
    """The arguments as JSON with sorted keys: orjson's (fast), or the standard library's for
    what orjson refuses (a non-string key, an integer past 64 bits, a lone surrogate) or cannot
    tell apart (it writes NaN and the infinities as null, as it writes None)."""
    try:
        text = orjson.dumps(arguments, default=str, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        text = b"null"
    return text if b"null" not in text else _stdlib_canonical(arguments).encode()


# made once (`json.dumps` with options builds an encoder per call); the same text as
# json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
_stdlib_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode


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
