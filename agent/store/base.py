"""The run store's interface: what every backend keeps, and the errors it raises."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from agent.errors import EndstateError
from agent.result import PendingAction, RunResult, StopReason
from agent.snapshot import Snapshot


class StoreError(EndstateError):
    """The store cannot be opened, read or written; the message says which and why."""


class RunExists(StoreError):
    """A run with this id is already stored."""


class WriteRefused(StoreError):
    """The database refused a write that breaks one of its constraints (say, a duplicate id)."""


class UnknownRun(StoreError):
    """No run has this id."""


class NotClaimable(StoreError):
    """The run is not in a state that allows what was asked (e.g. it is not waiting)."""


class LeaseLost(StoreError):
    """Another worker took the run over; this worker must stop writing to it."""


class RunStatus(StrEnum):
    """Where a run is. `stop_reason` says how its last segment ended."""

    RUNNING = "running"  # a worker holds its lease
    WAITING = "waiting"  # suspended for a person (need_help)
    CANCELLED = "cancelled"  # checkpointed and resumable
    FINISHED = "finished"  # ended for good: success, limit, gave_up, no_progress, help_timeout, error


@dataclass(frozen=True)
class NewRun:
    """A run about to start."""

    run_id: str
    agent: str
    task: str
    task_type: str
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRecord:
    """One row of the store: the run, its last result and what it waits for."""

    run_id: str
    agent: str
    task: str
    task_type: str
    status: RunStatus
    state: dict[str, Any]
    started_at: float
    updated_at: float
    stop_reason: StopReason | None = None
    stop_limit: str | None = None
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    active_seconds: float = 0.0
    waiting_seconds: float = 0.0
    ended_at: float | None = None
    trace_id: str | None = None
    note: str = ""
    summary: str = ""
    output: str = ""
    verified: bool = False
    error_type: str | None = None
    segments: int = 0
    question: str | None = None
    pending: PendingAction | None = None
    deadline: float | None = None
    suspended_at: float | None = None
    interrupted: bool = False  # cancelled by a shutdown: recovery resumes it
    owner: str | None = None
    lease_until: float | None = None
    answer: str | None = None  # what the run was claimed with, for a worker that takes over
    approved: bool | None = None
    answered_at: float | None = None  # when that answer came
    snapshot_json: str | None = field(default=None, repr=False)

    @property
    def snapshot(self) -> Snapshot | None:
        """The suspension snapshot or the last checkpoint, if any."""
        return Snapshot.from_json(self.snapshot_json) if self.snapshot_json else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, without the snapshot."""
        data = {k: v for k, v in self.__dict__.items() if k not in ("snapshot_json", "owner")}
        data["status"] = str(self.status)
        data["stop_reason"] = str(self.stop_reason) if self.stop_reason else None
        data["pending"] = self.pending.__dict__ if self.pending else None
        return data


@dataclass(frozen=True)
class Outcome:
    """What a segment's end writes to the store."""

    status: RunStatus
    result: RunResult
    snapshot_json: str | None
    interrupted: bool = False

    @classmethod
    def of(cls, result: RunResult, *, interrupted: bool = False) -> Outcome:
        snap = snapshot_json(result.snapshot) if result.snapshot is not None else None
        if result.reason is StopReason.NEED_HELP:
            return cls(RunStatus.WAITING, result, snap)
        if result.reason is StopReason.CANCELLED:
            return cls(RunStatus.CANCELLED, result, snap, interrupted)
        return cls(RunStatus.FINISHED, result, None)

    @property
    def keeps_answer(self) -> bool:
        """True when the segment was cancelled before the answer it was claimed with landed
        (say, a shutdown cut the approved call short): the run keeps that answer for its resume."""
        snap = self.result.snapshot
        return self.status is RunStatus.CANCELLED and snap is not None and snap.suspension is not None


@dataclass(frozen=True)
class Lease:
    """Who holds a run and until when; every write checks the holder."""

    owner: str
    until: float


class RunStore(Protocol):
    """A durable home for runs. Every backend passes the same test suite.

    Claims are atomic: of two workers claiming the same run at once, exactly
    one gets the record, the other `NotClaimable`. Writes by a worker check
    its lease and raise `LeaseLost` once another worker has taken over.
    Times are seconds since the epoch (UTC), as `time.time()` gives them.
    """

    url: str
    shown: str  # the URL to show people: no password in it

    def create(self, run: NewRun, lease: Lease, now: float) -> RunRecord: ...

    def checkpoint(
        self, run_id: str, snapshot: Snapshot, lease: Lease, now: float, text: str | None = None
    ) -> None: ...

    def record(self, run_id: str, outcome: Outcome, lease: Lease, now: float) -> RunRecord: ...

    def claim(
        self,
        run_id: str,
        statuses: tuple[RunStatus, ...],
        lease: Lease,
        now: float,
        answer: str | None = None,
        approved: bool | None = None,
        segments: int | None = None,
        expired: bool | None = None,
    ) -> RunRecord:
        """Take the run if its status is one of `statuses`; exactly one of concurrent callers wins.

        When given, the run must still be in segment `segments` (so an answer
        read for one question never lands on the next), and its deadline must
        have passed by `now` (`expired=True`, the sweep) or not (`expired=False`,
        an answer). An answer or approval is kept with the time it came; a claim
        without one keeps what the run holds (a cut-off approval, say).
        """
        ...

    def take_over(self, run_id: str, old_owner: str, lease: Lease, now: float) -> RunRecord: ...

    def release(self, run_id: str, status: RunStatus, lease: Lease, now: float) -> None: ...

    def heartbeat(self, lease: Lease, run_ids: Sequence[str] | None = None) -> int:
        """Extend the lease of the running runs `lease.owner` holds (only `run_ids`, when given)."""
        ...

    def get(self, run_id: str) -> RunRecord | None: ...

    def list_runs(self, status: RunStatus | None = None, limit: int | None = 100) -> list[RunRecord]: ...

    def expired(self, now: float) -> list[RunRecord]: ...

    def interrupted(self) -> list[RunRecord]: ...

    def pending_summary(self) -> list[tuple[str, str, float]]: ...

    def schema_version(self) -> int: ...

    def close(self) -> None: ...


def snapshot_json(snapshot: Snapshot) -> str:
    """The text of `Snapshot.to_json()`, written without `dataclasses.asdict`'s deep copy.

    A checkpoint is written several times a turn; the deep copy of the whole
    history was most of its cost. The store tests check both give the same text.
    """
    return json.dumps(snapshot, default=_fields_of, sort_keys=True)


class SnapshotEncoder:
    """`snapshot_json` for the successive checkpoints of one run, encoding each message once.

    Messages and call records are never changed once added to a run, so their
    JSON is kept (with the object, so an id is never mistaken) and reused. The
    text is the same as `Snapshot.to_json()` gives; the store tests check it.
    """

    _GROWING = ("calls", "messages")

    def __init__(self) -> None:
        self._seen: dict[int, tuple[object, str]] = {}
        self._last: dict[str, tuple[list[Any], str]] = {}  # per growing key: the last list and its JSON

    def encode(self, snapshot: Snapshot) -> str:
        fields = _fields_of(snapshot)
        parts: list[str] = []
        plain: dict[str, Any] = {}
        for key in sorted(fields):  # the keys in order; each growing list is spliced in at its place
            if key in self._GROWING:
                parts.append(_dumps(plain)[1:-1])
                parts.append(f'"{key}": {self._list(key, fields[key])}')
                plain = {}
            else:
                plain[key] = fields[key]
        parts.append(_dumps(plain)[1:-1])
        return "{" + ", ".join(p for p in parts if p) + "}"

    def _list(self, key: str, items: list[Any]) -> str:
        """The list's JSON; when it extends the last one seen, only the new items are encoded."""
        before, text = self._last.get(key, ([], "[]"))
        n = len(before)
        if n and len(items) >= n and items[:n] == before:
            new = ", ".join(self._one(item) for item in items[n:])
            text = text[:-1] + (", " + new if new else "") + "]"
        else:
            text = "[" + ", ".join(self._one(item) for item in items) + "]"
        self._last[key] = (list(items), text)
        return text

    def _one(self, item: Any) -> str:
        known = self._seen.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        text = _dumps(item)
        self._seen[id(item)] = (item, text)
        return text


def _dumps(value: Any) -> str:
    return json.dumps(value, default=_fields_of, sort_keys=True)


_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields_of(obj: Any) -> dict[str, Any]:
    names = _FIELDS.get(type(obj))
    if names is None:
        if not dataclasses.is_dataclass(obj):
            raise TypeError(f"{type(obj).__name__} is not JSON serializable")
        names = _FIELDS[type(obj)] = tuple(f.name for f in dataclasses.fields(obj))
    return {name: getattr(obj, name) for name in names}


def when(timestamp: float) -> str:
    """A stored time for a message: `2026-09-14 08:30:00 UTC`."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def pending_of(text: str | None) -> PendingAction | None:
    return PendingAction(**json.loads(text)) if text else None
