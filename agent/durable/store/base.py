"""The run store's interface: what every backend keeps, and the errors it raises."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Protocol

import orjson

from agent.audit import Audit, AuditOutcome
from agent.errors import EndstateError, SnapshotError, TakenOver
from agent.result import PendingAction, RunResult, StopReason
from agent.snapshot import Checkpoint, Snapshot
from agent.text import without_lone_surrogates
from agent.usage import Usage, WithUsage


class StoreError(EndstateError):
    """The store cannot be opened, read or written; the message says which and why."""


class StoreTimeout(StoreError):
    """The store did not answer within its timeout (a server that hangs, a network that drops
    packets): the call was given up, and the message says after how long."""


DEFAULT_TIMEOUT = 10.0  # seconds a store call may wait for a database server (see `open_store`)
# the longest it may be: a lock wait past the platform's time_t raised OverflowError, and PostgreSQL
# takes no statement_timeout past 24.8 days (2**31 ms)
MAX_STORE_TIMEOUT = 86400.0


class RunExists(StoreError):
    """A run with this id is already stored."""


class StartingNow(RunExists):
    """A start of a run id whose start is under way (its catalog's `prepare` runs, in this runner, or
    in another process holding the id on the store: `PostgresStore.starting`, `SqliteStore.starting`):
    refused, nothing changed; the first goes on. Sent again once that start is answered, it gets the run."""


class PrunedRunId(RunExists):
    """The id of a pruned run whose review label or audit the store keeps: nothing was stored."""


class WriteRefused(StoreError):
    """The database refused a write that breaks one of its constraints (say, a duplicate id)."""


class UnknownRun(StoreError):
    """No run has this id."""


class NotClaimable(StoreError):
    """The run is not in a state that allows what was asked (e.g. it is not waiting)."""


class LeaseLost(StoreError, TakenOver):
    """Another worker took the run over; this worker must stop writing to it."""


class UnreadableSnapshot(StoreError, SnapshotError):
    """A run's stored snapshot or journal cannot be read (edited by hand, damaged, or written by a
    newer Endstate, which a retry on an upgraded host may read): a 503 over HTTP. A journal that lacks
    an entry is a `DamagedJournal`, a 409."""


class DamagedRun(StoreError):
    """A run whose stored rows disagree with each other or lack a journal entry (edited by hand, or
    a damaged store): no retry mends it, so it is no passing outage (a 409 over HTTP, not a 503). The
    message says how to fix it (`damaged_run`)."""


class DamagedJournal(DamagedRun, UnreadableSnapshot):
    """A run's stored journal lacks an entry: a damaged run whose snapshot cannot be read."""


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
class RunRecord(WithUsage):
    """One row of the store: the run, its last result and what it waits for.

    `usage` is what the run used over all its segments; its cost is None when
    unknown (a model without a price in any segment).
    """

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
    usage: Usage = field(default_factory=Usage)
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
    lease_until: float | None = None  # by the store's clock (see `Lease`)
    answer: str | None = None  # what the run was claimed with, for a worker that takes over
    approved: bool | None = None
    answered_at: float | None = None  # when that answer came
    refused: str | None = None  # why the last answer given was not taken (None: none was, since it moved on)
    snapshot_json: str | None = field(default=None, repr=False)  # the head: the snapshot without its journal
    # the snapshot version of that head, as the store lists it (None: no head, or one saved before the
    # store kept its version, by an Endstate no newer than the one that began to)
    head_version: int | None = None
    # the length of the lease its holder last wrote (None: none, or written by an Endstate before the
    # store kept it): a sweep waits as long before it takes a lease that looks run out
    lease_seconds: float | None = None
    # the last answer the run was claimed with, kept after it goes on (schema 14; None before): who
    # gave it (None: no name given), when, its kind ('answer', 'approved' or 'denied') and its text
    last_answer_by: str | None = None
    last_answer_at: float | None = None
    last_answer_kind: str | None = None
    last_answer: str | None = None
    # how many journal entries the run stored, as its last write recorded (schema 15; None before: its
    # journal is read unchecked until then); and, in the waiting runs' listing only, whether the store
    # holds fewer than that (its journal lost its end: the run cannot be answered)
    journal_length: int | None = None
    journal_short: bool = False

    @property
    def answered_note(self) -> str:
        """Who answered the run last, when and what, for a person whose answer was refused:
        `answered by ana at 2026-09-14 08:30:00 UTC: denied 'too wide'`; '' when no answer was recorded."""
        return answered_note(
            self.last_answer_by, self.last_answer_at, self.last_answer_kind, self.last_answer
        )

    @property
    def damage(self) -> str | None:
        """Why the run cannot be answered, when the waiting runs' listing found its journal short
        (`journal_short`); None otherwise."""
        if not self.journal_short:
            return None
        return (
            f"run {self.run_id}: its journal lacks its last entries (the run recorded "
            f"{self.journal_length}); it cannot be answered. {damaged_run(self.run_id)}"
        )

    @property
    def asked_at(self) -> float | None:
        """When a waiting run asked its person: its suspension's time, or when a suspension does not
        say (0 or none: unknown), when its row last changed (stored waiting, or an answer given back),
        so a wait is at least that long, never counted from the epoch (as `pending_groups` counts it).
        None when it does not wait and never said."""
        if self.suspended_at is not None and self.suspended_at > 0:
            return self.suspended_at
        return self.updated_at if self.status is RunStatus.WAITING else None

    @property
    def asked(self) -> list[Any]:
        """What the run asks a person to read before answering: its question, and the pending
        call's name and arguments (an empty question and no call when it asks nothing)."""
        call = [self.pending.name, self.pending.arguments] if self.pending else []
        return [self.question or "", *call]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready and flat (the usage's fields beside the rest; `cost_usd` null when unknown),
        without the snapshot; `last_answer_by` and the rest of `last_answer_*` say who answered last."""
        data: dict[str, Any] = {}
        for k, v in self.__dict__.items():
            if k == "usage":
                data |= self.usage.flat()
            elif k not in ("snapshot_json", "head_version", "owner", "lease_seconds", *_JOURNAL):
                data[k] = v
        data["status"] = str(self.status)
        data["stop_reason"] = str(self.stop_reason) if self.stop_reason else None
        data["pending"] = self.pending.__dict__ if self.pending else None
        return data


_JOURNAL = ("journal_length", "journal_short")  # for the store's checks (a listing says `damaged`)

# the long texts an overview cuts
CUT_TEXTS = ("task", "note", "summary", "output", "question", "answer", "refused", "last_answer")
CUT_OBJECTS = ("state", "pending")  # JSON: an overview gives each whole, or none when it is longer


class Listing(list["RunRecord"]):
    """The records of a listing, the ids of rows left out because they could not be read, and for
    a listing whose long texts were cut (`SqlStore.overview`), each cut field's whole length by run."""

    def __init__(self, records: Sequence[RunRecord] = (), damaged: Sequence[str] = ()) -> None:
        super().__init__(records)
        self.damaged = list(damaged)
        self.cut: dict[str, dict[str, int]] = {}


@dataclass(frozen=True)
class Outcome:
    """What a segment's end writes to the store."""

    status: RunStatus
    result: RunResult
    snapshot: Snapshot | None
    interrupted: bool = False
    rest: Checkpoint | None = None  # what the segment's last checkpoint failed to write: recorded with it
    keep_answer: bool = False  # the run keeps the answer it was claimed with (see `keeps_answer`)

    @classmethod
    def of(cls, result: RunResult, *, interrupted: bool = False, rest: Checkpoint | None = None) -> Outcome:
        if result.reason is StopReason.NEED_HELP:
            return cls(RunStatus.WAITING, result, result.snapshot, rest=rest)
        if result.reason is StopReason.CANCELLED:
            return cls(RunStatus.CANCELLED, result, result.snapshot, interrupted, rest)
        return cls(RunStatus.FINISHED, result, None, rest=rest)

    @property
    def keeps_answer(self) -> bool:
        """True when the segment was cancelled before the answer it was claimed with landed
        (say, a shutdown cut the approved call short), or the run ended before it could be rebuilt
        to take it (`keep_answer`): the run keeps that answer for its resume."""
        return self.keep_answer or (
            self.status is RunStatus.CANCELLED
            and self.snapshot is not None
            and self.snapshot.suspension is not None
        )


@dataclass(frozen=True)
class Review:
    """A label a person gave a finished run (`endstate review label`); the latest one of a run counts."""

    id: int
    run_id: str
    agent: str
    task_type: str
    label: str
    note: str
    labelled_at: float
    by: str = ""  # who gave it: the name typed in the inbox, or the CLI's --by ('' before schema 8)


@dataclass(frozen=True)
class AuditRecord(Audit):
    """An audit as `RunStore.list_audits` lists it: the audit, and the trace id of its run (None when the
    run's row has none, or was pruned: its audit is kept)."""

    trace_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: `outcome` null for an audit still due, `checked_at` null until it is made."""
        return {**self.__dict__, "outcome": str(self.outcome) if self.outcome else None}


@dataclass(frozen=True)
class Lease:
    """Who holds a run, and for how long: each write that takes or renews it holds it `seconds`
    past the store's clock (the database's, not the worker's: workers whose clocks disagree still
    judge a lease alike). Every write checks the holder."""

    owner: str
    seconds: float


class RunStore(Protocol):
    """A durable home for runs. Every backend passes the same test suite.

    Claims are atomic: of two workers claiming the same run at once, exactly
    one gets the record, the other `NotClaimable`. Writes by a worker check
    its lease and raise `LeaseLost` once another worker has taken over.
    Times are seconds since the epoch (UTC), as `time.time()` gives them: the
    caller's `now`, except a lease's end, which the store's clock sets and judges.
    """

    url: str
    shown: str  # the URL to show people: no password in it

    def create(self, run: NewRun, lease: Lease, now: float) -> RunRecord: ...

    def checkpoint(self, run_id: str, checkpoint: Checkpoint, lease: Lease, now: float) -> None:
        """Append the checkpoint's new journal entries and save its head, under the lease."""
        ...

    def store_whole(self, run_id: str, snapshot: Snapshot, lease: Lease, now: float) -> None:
        """Replace the run's journal entries and head with `snapshot`'s, under the lease: a run whose
        snapshot a version-1 worker wrote whole, upgraded in place as the store's upgrade does."""
        ...

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
        by: str | None = None,
    ) -> RunRecord:
        """Take the run if its status is one of `statuses`; exactly one of concurrent callers wins.

        When given, the run must still be in segment `segments` (so an answer
        read for one question never lands on the next), and its deadline must
        have passed by `now` (`expired=True`, the sweep) or not (`expired=False`,
        an answer). An answer or approval is kept with the time it came, and, after the run goes
        on, as its last answer with who gave it (`by`, checked by `answerer`); a claim without one
        keeps what the run holds (a cut-off approval, say).
        """
        ...

    def take_over(
        self,
        run_id: str,
        old_owner: str,
        lease: Lease,
        now: float,
        only_lapsed: bool = True,
        as_seen: RunRecord | None = None,
    ) -> RunRecord:
        """Take a running run from `old_owner`: only once its lease ran out by the store's clock,
        unless `only_lapsed` is False (its worker's process is known to be gone), and, given `as_seen`
        (the run as the taker last read it), only while its lease is still that one (the same end and
        segment: not renewed or taken since); else `NotClaimable`."""
        ...

    def release(
        self, run_id: str, status: RunStatus, lease: Lease, now: float, refused: str | None = None
    ) -> None:
        """Give a claimed run back as `status`; `refused` says why the answer it was claimed with
        was not taken (kept on the run until it moves on)."""
        ...

    def heartbeat(self, lease: Lease, run_ids: Sequence[str] | None = None) -> int:
        """Extend the lease of the running runs `lease.owner` holds (only `run_ids`, when given)."""
        ...

    def now(self) -> float:
        """The store's clock (seconds since the epoch), by which leases run out."""
        ...

    def get(self, run_id: str) -> RunRecord | None: ...

    def schedule_audit(self, audit: Audit) -> None: ...

    def due_audits(self, now: float, limit: int = 100, agents: Sequence[str] | None = None) -> list[Audit]:
        """The audits due by `now`, the earliest first: of `agents` only, when given."""
        ...

    def claim_audit(self, audit: Audit, until: float) -> bool:
        """Take a due audit (as listed) to make it, due again at `until`; of concurrent callers one wins."""
        ...

    def record_audit(self, run_id: str, outcome: AuditOutcome, note: str, now: float) -> bool: ...

    def audit_of(self, run_id: str) -> Audit | None: ...

    def list_audits(
        self,
        outcome: AuditOutcome | None = None,
        limit: int = 100,
        agent: str | None = None,
        task_type: str | None = None,
        due: bool = False,
    ) -> list[AuditRecord]:
        """The audits made, the newest verdict first (`checked_at`, then the run id), of `outcome`, `agent`
        and `task_type` when given; with `due`, the audits still to make too (no outcome yet), each at the
        time it is due. At most `limit`, each with its run's trace id."""
        ...

    def snapshot(self, run_id: str) -> Snapshot | None:
        """The run's snapshot: its saved head and every journal entry appended so far."""
        ...

    def list_runs(
        self,
        status: RunStatus | None = None,
        limit: int | None = 100,
        agent: str | None = None,
        task_type: str | None = None,
    ) -> Listing:
        """The newest runs first, of `status`, `agent` and `task_type` when given; a row it cannot read
        is left out (and logged), its id in `damaged`."""
        ...

    def finished_since(self, since: float | None, limit: int = 1_000_000) -> Listing:
        """The finished runs that ended at `since` or later (all of them when None), newest first, with
        their stop and usage only (no texts, state or journal): what `limits suggest` reads."""
        ...

    def waiting(
        self, limit: int, offset: int = 0, agent: str | None = None, task_type: str | None = None
    ) -> Listing:
        """Runs waiting for a person, the longest waiting first (`suspended_at`, then the run id):
        `limit` from `offset`, of `agent` and `task_type` when given; a row it cannot read is left
        out (and logged), its id in `damaged`."""
        ...

    def waiting_counts(self) -> list[tuple[str, str, int]]:
        """How many runs wait for a person, by (agent, task type)."""
        ...

    def expired(self, now: float) -> list[RunRecord]: ...

    def interrupted(self) -> list[RunRecord]: ...

    def pending_groups(self) -> list[tuple[str, str, int, float]]:
        """(agent, task type, how many wait for a person, the oldest one's `suspended_at`, or for a
        run that does not say, when its row last changed): a `telemetry.PendingSource` of groups."""
        ...

    def add_review(self, run_id: str, label: str, note: str, now: float, by: str = "") -> Review:
        """Label a finished run, saying who did (`UnknownRun`, or `NotClaimable` for a run that has
        not finished)."""
        ...

    def reviews(self, after: int = 0, run_ids: Sequence[str] | None = None) -> list[Review]:
        """Labels in the order given: those with an id above `after`, of `run_ids` when given."""
        ...

    def review_queue(
        self,
        reasons: Sequence[StopReason],
        success_share: float,
        limit: int | None = 100,
        offset: int = 0,
        agent: str | None = None,
        task_type: str | None = None,
        order: Literal["oldest", "newest"] = "oldest",
    ) -> list[RunRecord]:
        """Finished runs no one labelled yet, oldest end first (`order="newest"`: latest end first):
        those that stopped for one of `reasons`, and a stable sample of about `success_share` of the
        successes; `limit` of them from `offset`, of `agent` and `task_type` when given."""
        ...

    def review_counts(
        self, reasons: Sequence[StopReason], success_share: float
    ) -> list[tuple[str, str, int]]:
        """How many runs `review_queue` holds, by (agent, task type)."""
        ...

    def labelled(
        self, limit: int, offset: int = 0, agent: str | None = None, task_type: str | None = None
    ) -> list[Review]:
        """The latest label of each labelled run, most recent first; `limit` from `offset`."""
        ...

    def prune(self, ended_before: float, batch: int = 500) -> int:
        """Delete finished runs that ended before `ended_before`, with their journal entries;
        a running, waiting or cancelled run, or one whose success audit is still due, is never
        deleted (labels and audit outcomes stay). Returns how many runs went."""
        ...

    def schema_version(self) -> int: ...

    def close(self) -> None: ...


ANSWERER_CHARS = 100  # the longest name an answer may carry
_SHOWN_ANSWER = 200  # how much of the last answer a refusal repeats


def _quoted(text: str) -> str:
    cut = text if len(text) <= _SHOWN_ANSWER else text[:_SHOWN_ANSWER] + "..."
    return repr(cut)


def answered_note(by: str | None, at: float | None, kind: str | None, answer: str | None) -> str:
    """`answered by NAME at TIME: KIND 'what'` (`RunRecord.answered_note`, and a Temporal run's
    refusals); '' when no answer was recorded (no time or kind)."""
    if at is None or kind is None:
        return ""
    what = f"{kind} {_quoted(answer)}" if answer else kind
    return f"answered by {by or 'someone who gave no name'} at {when(at)}: {what}"


def answer_kind(answer: str | None, approved: bool | None) -> str:
    """What an answer is, as the store keeps it: 'answer', 'approved' or 'denied'."""
    if approved is None:
        return "answer"
    return "approved" if approved else "denied"


def unplain(name: str) -> bool:
    """`name` holds a control or invisible character (a line break, an escape, a bidi mark): no name
    a page or a terminal shows as it is."""
    return any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in name)


FILTER_BYTES = 2048  # the longest agent or task type a listing filters on: Temporal's keyword bound


def filter_name(what: str, value: str) -> str:
    """An agent or task type (`what`) to list the runs of, as an alert's label names it: not blank, no
    control or invisible character, at most `FILTER_BYTES` bytes (as a run's agent and task type on
    Temporal). `ValueError` says why not."""
    if not value.strip():
        raise ValueError(f"the {what} to list must not be empty: name one, or leave the option out for all")
    if unplain(value):
        raise ValueError(
            f"the {what} to list ({value[:60]!r}) holds control or invisible characters (a line break, "
            "an escape, a bidi mark): give the name as plain text on one line, as the alert's label shows it"
        )
    if len(value.encode("utf-8", "surrogatepass")) > FILTER_BYTES:
        raise ValueError(
            f"the {what} to list ({value[:40]!r}...) is over {FILTER_BYTES:,} bytes, longer than any "
            "run's: give the name as the alert's label shows it"
        )
    return value


def answerer(by: object) -> str | None:
    """The name an answer is given under, checked: None (or blank) for none; else text without
    control characters, at most `ANSWERER_CHARS` characters once trimmed. `ValueError` says why not."""
    if by is None:
        return None
    if not isinstance(by, str):
        raise ValueError(
            f"the answerer's name must be text (a name, such as 'ana'), not {type(by).__name__}: "
            "give a name, or leave it out to answer without one"
        )
    name = by.strip()
    if len(name) > ANSWERER_CHARS:
        raise ValueError(
            f"the answerer's name is {len(name)} characters long; at most {ANSWERER_CHARS} are kept: "
            "give a shorter name"
        )
    if unplain(name):
        raise ValueError(
            f"the answerer's name {name!r} holds control or invisible characters (a line break, an "
            "escape, a bidi mark): give the name as plain text on one line"
        )
    return name or None


def when(timestamp: float) -> str:
    """A stored time for a message or a page: `2026-09-14 08:30:00 UTC`; a time no calendar holds (a
    row edited by hand, a clock that counts milliseconds: 1e308, 1.8e12, infinity) said as it is."""
    try:
        return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"(no such time: {timestamp!r})"


def damaged_run(run_id: str) -> str:
    """What to do about a run whose stored rows disagree or lack a journal entry, in a sentence. Its
    way out by `endstate end` is `ENDS_IT`, which a note of a run ended for the damage leaves out."""
    return (
        "The store was edited by hand or is damaged: restore the run's rows from a backup of the store, "
        f"or `endstate end {run_id}` ends it (its journal is kept for review)"
    )


ENDS_IT = re.compile(r", or `endstate end [^`]*` ends it \(its journal is kept for review\)")


def short_journal(run_id: str, stored: int, recorded: int) -> DamagedJournal:
    """The refusal of a run whose stored journal holds fewer entries than the run recorded writing."""
    lost = recorded - stored
    return DamagedJournal(
        f"run {run_id}: its journal ends after {stored} entries, but the run recorded {recorded} (its last "
        f"{lost} {'is' if lost == 1 else 'are'} missing); nothing was changed. {damaged_run(run_id)}"
    )


# What ends a store's run whose deadline passed: a sweep, which only a service runs on its own.
LATE_ENDS_IT = (
    "A deadline sweep ends the run under its help policy: a service on this store sweeps on its own; "
    "without one, `endstate recover` does"
)


def too_late(run_id: str, deadline: float, ends_it: str) -> NotClaimable:
    """The refusal of an answer that came after the run's deadline; `ends_it`: what ends the run under
    its help policy instead, in a sentence (a store's deadline sweep, a Temporal run's timer)."""
    return NotClaimable(
        f"run {run_id}'s deadline passed at {when(deadline)}; the answer came too late and nothing was "
        f"changed. {ends_it}"
    )


# What orjson writes as the standard library would not is refused here and written by the latter:
# a dataclass or a datetime (an error, as before), a non-string key, an integer past 64 bits.
_ORJSON = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_stdlib = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode  # made once, not per call


def dumps(value: Any) -> str:
    """Compact JSON with sorted keys, as the store writes it: orjson where it can (serialising was
    the larger half of a SQLite checkpoint's time), the standard library where it cannot.

    orjson writes NaN and the infinities as `null`, so a text with a `null` in it is written again
    by the standard library (`NaN`, `Infinity`: read back as they were); a checkpoint has none."""
    try:
        text = orjson.dumps(value, option=_ORJSON)
    except TypeError:  # orjson.JSONEncodeError is one
        return _stdlib(value)
    return text.decode() if b"null" not in text else _stdlib(value)


def column_text(value: Any) -> Any:
    """A string as every store's text columns keep it: NUL (PostgreSQL cannot hold it) and lone
    surrogates (text decoded with `surrogateescape`, such as a non-UTF-8 file name: no UTF-8) become
    U+FFFD. JSON columns escape both, so the journal keeps the exact text."""
    if not isinstance(value, str):
        return value
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode()
    except UnicodeEncodeError:
        return without_lone_surrogates(value)
    return value


def pending_of(text: str | None) -> PendingAction | None:
    return PendingAction(**json.loads(text)) if text else None
