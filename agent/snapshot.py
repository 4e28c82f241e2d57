"""A run's saved state as versioned JSON, so any process can take it back.

A snapshot is the journal plus what the loop keeps beside it (usage, the
agent's state, the verifier failures seen) and a kind (the progress detector
is rebuilt from the journal, so nothing beside it grows with the history):
a `checkpoint` taken inside a running segment, a run `suspended` for a person,
or a `cancelled` one. Version 1 (a list of provider messages with open result
slots) is read and upgraded; a newer version is refused with a clear error.
A run of another framework, suspended (agent.integrations), keeps that
framework's own state beside its journal (`foreign`, written only when set).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agent._codec import counted, decode_entry, encode_entry, fail, need
from agent._frozen import fast_init
from agent._upgrade import journal_from_v1
from agent.budget import Spent
from agent.errors import SnapshotError
from agent.journal import Entry, Journal, Stopped
from agent.stops import StopReason, Suspension

SNAPSHOT_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)


@dataclass(frozen=True)
class ForeignState:
    """A run of another framework, suspended: that framework's own saved state (agent.integrations).

    `state` is the framework's serialized state as JSON text (the OpenAI Agents SDK's `RunState`
    string, a LangGraph thread config, Pydantic AI's messages and deferred calls); None when it
    could not be saved, with `error` saying why (the suspension is kept all the same).
    """

    framework: str
    state: str | None
    error: str = ""


class SnapshotKind(StrEnum):
    """Why a snapshot was taken."""

    CHECKPOINT = "checkpoint"  # inside a running segment: recovery continues from it
    SUSPENDED = "suspended"  # waiting for a person
    CANCELLED = "cancelled"  # cancelled by the caller or a shutdown: resumable
    LIMITED = "limited"  # stopped at a limit: resumable with more budget (`Extension`)
    FINISHED = "finished"  # ended for good (kept for review and replay)


@dataclass
class Snapshot:
    """Everything a run needs to go on: its journal, what it spent, and its own state."""

    run_id: str
    agent: str
    task_type: str
    kind: SnapshotKind
    segment: int
    journal: list[Entry]
    usage: Spent
    state: dict[str, Any] = field(default_factory=dict)
    verifier_failures: list[str] = field(default_factory=list)
    trace_id: str | None = None
    span_id: str | None = None
    foreign: ForeignState | None = None  # a foreign framework's run: its own state, to resume it
    version: int = SNAPSHOT_VERSION
    # False for a journal read whole from a version-1 snapshot (not from a store's entries): a store
    # holds none of its entries apart yet (or those of an older state of it), so the runner that takes
    # the run stores its journal whole (`RunStore.store_whole`), and a run's first checkpoint writes it all
    entries_stored: bool = field(default=True, compare=False, repr=False)

    @property
    def task(self) -> str:
        return Journal(self.journal).task

    @property
    def suspension(self) -> Suspension | None:
        """What the run waits for, when it waits for a person."""
        waiting = Journal(self.journal).waiting()
        return waiting.suspension if waiting else None

    @property
    def reason(self) -> StopReason:
        """The stop reason of the segment that saved this snapshot (a checkpoint's: cancelled)."""
        if self.kind is SnapshotKind.SUSPENDED:
            return StopReason.NEED_HELP
        if self.kind is SnapshotKind.LIMITED:
            return StopReason.LIMIT
        if self.kind is SnapshotKind.FINISHED:
            stopped = next((e for e in reversed(self.journal) if isinstance(e, Stopped)), None)
            return stopped.reason if stopped else StopReason.ERROR
        return StopReason.CANCELLED

    @property
    def stopped_at(self) -> float | None:
        """When the segment that saved this snapshot stopped (a suspension: when it suspended), by
        the agent's clock; None when the snapshot does not say (a checkpoint: the segment never
        stopped; a snapshot saved before stops kept their time)."""
        if self.kind is SnapshotKind.SUSPENDED:
            s = self.suspension
            return s.suspended_at if s is not None and s.suspended_at > 0 else None
        last = self.journal[-1] if self.journal and self.kind is not SnapshotKind.CHECKPOINT else None
        return last.at if isinstance(last, Stopped) and last.at > 0 else None

    @property
    def last_text(self) -> str:
        return Journal(self.journal).last_text()

    # -- JSON -----------------------------------------------------------------------------------

    def head(self) -> dict[str, Any]:
        """Everything but the journal, JSON-ready (a store keeps the entries apart). What is empty
        or zero is left out: reading fills it in, and a store keeps thousands of heads."""
        head = {
            "version": self.version,
            "run_id": self.run_id,
            "agent": self.agent,
            "task_type": self.task_type,
            "kind": str(self.kind),
            "segment": self.segment,
            "usage": {k: v for k, v in vars(self.usage).items() if v != _NOTHING_SPENT[k]},
        }
        if self.state:
            head["state"] = self.state
        if self.verifier_failures:
            head["verifier_failures"] = self.verifier_failures
        if self.trace_id is not None:
            head["trace_id"] = self.trace_id
        if self.span_id is not None:
            head["span_id"] = self.span_id
        if self.foreign is not None:
            head["foreign"] = vars(self.foreign)
        return head

    def to_json(self) -> str:
        data = self.head() | {"journal": [encode_entry(e) for e in self.journal]}
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> Snapshot:
        """Parse a snapshot of any supported version; a `SnapshotError` says what is wrong."""
        data = _object(text)
        if data.get("version") == 1:
            return cls._from_v1(data)
        return cls.from_parts(data, need(data, "journal", list))

    @classmethod
    def from_parts(cls, head: dict[str, Any] | str, entries: list[Any]) -> Snapshot:
        """A snapshot from its head and its journal entries (dicts or their JSON)."""
        data = _object(head) if isinstance(head, str) else head
        version = data.get("version")
        if version not in SUPPORTED_VERSIONS:
            raise SnapshotError(
                f"snapshot version {version!r} is not supported; this Endstate reads versions "
                f"{', '.join(map(str, SUPPORTED_VERSIONS))}: upgrade Endstate to read newer ones"
            )
        if version == 1:  # whole: one the store's upgrade could not read then, or a version-1 worker
            return cls._from_v1(data)  # wrote since (a rolling deploy): any entries are of an older state
        journal = [
            decode_entry(_object(e) if isinstance(e, str | bytes) else e, i) for i, e in enumerate(entries)
        ]
        return cls(**_head_fields(data), journal=journal)

    @classmethod
    def _from_v1(cls, data: dict[str, Any]) -> Snapshot:
        """Upgrade a version-1 snapshot: provider messages and open result slots become a journal."""
        reason = need(data, "reason", str)
        kind = SnapshotKind.SUSPENDED if reason == StopReason.NEED_HELP else SnapshotKind.CANCELLED
        journal = journal_from_v1(data)
        v1_only = (
            "progress",
            "messages",
            "open_results",
            "calls",
            "reason",
            "suspension",
            "task",
            "last_text",
        )
        need(data, "progress", dict, {})  # version 1 kept it; it is rebuilt from the journal now
        head = {k: v for k, v in data.items() if k not in v1_only}
        fields = _head_fields({**head, "kind": kind, "version": SNAPSHOT_VERSION})
        return cls(**fields, journal=journal, entries_stored=False)


@fast_init
@dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint saves: the journal entries from index `first` on, and the head beside them."""

    head: Snapshot  # kind checkpoint, its journal left empty
    first: int
    entries: list[Entry]


def _object(text: str | bytes) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, nested too deep, a number too long
        raise SnapshotError(f"snapshot is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise SnapshotError(f"snapshot must be a JSON object, not {type(data).__name__}")
    return data


_NOTHING_SPENT = vars(Spent())  # a usage field at this value is left out of a head

_HEAD = {"version", "run_id", "agent", "task_type", "kind", "segment", "usage", "state"} | {
    "verifier_failures",
    "trace_id",
    "span_id",
    "journal",
    "foreign",
}


def _head_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The head's fields, each checked for its type; an unknown field is refused, not dropped."""
    if unknown := sorted(set(data) - _HEAD):
        raise SnapshotError(f"snapshot has unknown fields {unknown}: it was not written by Endstate")
    try:
        kind = SnapshotKind(need(data, "kind", str))
    except ValueError:
        fail("kind", f"one of {', '.join(k.value for k in SnapshotKind)}", data.get("kind"))
    return {
        "run_id": need(data, "run_id", str),
        "agent": need(data, "agent", str),
        "task_type": need(data, "task_type", str),
        "kind": kind,
        "segment": counted("segment", need(data, "segment", int)),
        "usage": _usage(need(data, "usage", dict)),
        "state": need(data, "state", dict, {}),
        "verifier_failures": [_str(f) for f in need(data, "verifier_failures", list, [])],
        "trace_id": need(data, "trace_id", str | None, None),
        "span_id": need(data, "span_id", str | None, None),
        "foreign": _foreign(need(data, "foreign", dict | None, None)),
    }


def _foreign(data: dict[str, Any] | None) -> ForeignState | None:
    if data is None:
        return None
    return ForeignState(
        need(data, "framework", str), need(data, "state", str | None), need(data, "error", str, "")
    )


def _usage(data: dict[str, Any]) -> Spent:
    ints = ("turns", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "unpriced")
    usage = Spent()
    for key in data:
        if not hasattr(usage, key):
            fail("usage", f"an object of {', '.join(vars(usage))}", {key: data[key]})
        value = need(data, key, int if key in ints else float)
        if not 0 <= value < math.inf:  # NaN too: a budget compared with it would never run out
            fail(f"usage.{key}", "a number >= 0 (and finite)", value)
        if key in ints:
            counted(f"usage.{key}", value)
        setattr(usage, key, value)
    return usage


def _str(value: Any) -> str:
    if not isinstance(value, str):
        fail("verifier_failures", "a list of strings", value)
    return value
