"""The SQL both backends share; each backend supplies a connection and its dialect."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import time
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from importlib import resources
from typing import Any, Literal

from agent._codec import encode_entry
from agent.audit import Audit, AuditOutcome
from agent.budget import Spent
from agent.durable.store.base import (
    CUT_OBJECTS,
    CUT_TEXTS,
    LATE_ENDS_IT,
    AuditRecord,
    DamagedJournal,
    DamagedRun,
    Lease,
    LeaseLost,
    Listing,
    NewRun,
    NotClaimable,
    Outcome,
    PrunedRunId,
    Review,
    RunExists,
    RunRecord,
    RunStatus,
    StoreError,
    UnknownRun,
    UnreadableSnapshot,
    WriteRefused,
    answer_kind,
    damaged_run,
    dumps,
    pending_of,
    short_journal,
    too_late,
)
from agent.errors import SnapshotError
from agent.journal import Entry
from agent.result import StopReason
from agent.snapshot import Checkpoint, Snapshot, SnapshotKind
from agent.usage import Usage

TABLE = "endstate_runs"
ENTRIES = "endstate_entries"
REVIEWS = "endstate_reviews"
REVIEW_COLUMNS = "id, run_id, agent, task_type, label, note, labelled_at, labelled_by"
SAMPLE_SCALE = 10_000  # success sampling in steps of 0.01%
AUDITS = "endstate_audits"
SCHEMA_TABLE = "endstate_schema"
JOURNAL_VERSION = 4  # the schema version that brought the journal table
LIST_COLUMNS = (
    "run_id, agent, task, task_type, status, state, started_at, updated_at, ended_at, stop_reason, "
    "stop_limit, turns, input_tokens, output_tokens, cost_usd, cost_known, cache_read_tokens, "
    "cache_write_tokens, active_seconds, waiting_seconds, trace_id, "
    "note, summary, output, verified, error_type, segments, question, pending, deadline, suspended_at, "
    "interrupted, owner, lease_until, answer, approved, answered_at, refused, head_version, lease_seconds, "
    "last_answer_by, last_answer_at, last_answer_kind, last_answer, journal_length"
)
ALL_COLUMNS = LIST_COLUMNS + ", snapshot"
# A finished run's stop and usage, and the columns a record must have (read as empty): `finished_since`
USAGE_COLUMNS = (
    "run_id, agent, '' AS task, task_type, status, NULL AS state, NULL AS pending, started_at, updated_at, "
    "ended_at, stop_reason, stop_limit, turns, input_tokens, output_tokens, cost_usd, cost_known, "
    "cache_read_tokens, cache_write_tokens, active_seconds, waiting_seconds, verified, interrupted, segments"
)
# The runs waiting for a person, with the status written out: the partial indexes of schema 10 hold
# these rows only, and a planner can match a literal condition to them without knowing a parameter.
WAITING = f"status = '{RunStatus.WAITING}'"
# Whether a listed run's journal lost its end: the store lacks the last entry the run recorded (one
# look-up in the entries' key per run, whatever the journal's length). NULL (false) for a run whose
# length was never recorded (schema 15), or that recorded none. A scalar subquery (the key makes it
# one row or none), not NOT EXISTS, which PostgreSQL may plan as a hash of the whole entries table.
JOURNAL_SHORT = (
    f"(r.journal_length > 0 AND (SELECT 1 FROM {ENTRIES} e WHERE e.run_id = r.run_id "
    "AND e.seq = r.journal_length - 1) IS NULL) AS journal_short"
)
Row = dict[str, Any]
log = logging.getLogger("endstate.store")


def migrations(dialect: str) -> list[tuple[int, str]]:
    """The versioned SQL files of a dialect, in order: (version, sql)."""
    folder = resources.files("agent.durable.store").joinpath("migrations", dialect)
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            found.append((int(entry.name.split("_", 1)[0]), entry.read_text()))
    return sorted(found)


def latest_version(dialect: str) -> int:
    return migrations(dialect)[-1][0]


def split_statements(sql: str) -> list[str]:
    """A migration file's statements (no semicolons inside statements, by convention)."""
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


# Journal entries one INSERT adds at most: 3 values each, under what every SQLite takes in one statement
# (999 before 3.32, 32,766 after, by default) and PostgreSQL's 65,535.
ENTRY_ROWS = 300


class SqlStore:
    """`RunStore` over a DB-API connection; subclasses give `_rows`, `_tx` and the dialect.

    Statements are written with `?` placeholders; a backend that wants
    another style converts them in `_rows`. `clock` is the database's time in
    SQL (seconds since the epoch): leases are set and judged by it, in the
    statement, never by a worker's own clock. `retry=True` marks a statement
    that is safe to send again, on a new connection, when the first one broke.
    A constraint the database enforces raises `WriteRefused`.
    """

    url: str
    shown: str
    dialect: str
    clock: str
    octets: str  # the SQL of a text's size in bytes, `{}` the column
    waiting_order = "suspended_at, run_id"  # SQLite sorts a missing time (NULL) first, as the index does

    def _rows(self, sql: str, params: Sequence[Any] = (), retry: bool = False) -> list[Row]:
        raise NotImplementedError

    def _count(self, sql: str, params: Sequence[Any] = (), retry: bool = False) -> int:
        raise NotImplementedError

    def _tx(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    # -- schema -----------------------------------------------------------

    def schema_version(self) -> int:
        return max(self._applied(retry=True), default=0)

    def _applied(self, retry: bool = False) -> set[int]:
        """The schema versions the store records as applied. One that is no whole number (the table
        edited by hand, or written by another program) makes it a damaged store: `StoreError` saying
        so, before anything in it is changed (it raised ValueError: a traceback)."""
        rows = self._rows(f"SELECT version FROM {SCHEMA_TABLE}", retry=retry)
        return {self._version(r["version"]) for r in rows}

    def _version(self, value: object) -> int:
        """A schema table's version as a number (digits in a text column too), else `StoreError`."""
        if isinstance(value, str) and value.isascii() and value.isdigit():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value  # `answers` probes a write with -1, rolled back: no number is refused
        raise StoreError(
            f"the run store {self.shown} is damaged: its table {SCHEMA_TABLE} holds the schema version "
            f"{str(value)[:40]!r}, not a whole number; restore the store from a backup, or move it "
            "aside and pass another --store"
        )

    def _up_to_date(self) -> bool:
        """True when every migration is applied (a newer schema is not: `_apply_migrations` refuses it)."""
        applied = self._applied()
        needed = {v for v, _ in migrations(self.dialect) if v > JOURNAL_VERSION}
        return max(applied, default=0) == latest_version(self.dialect) and needed <= applied

    def _refuse_newer(self) -> int:
        """The store's schema version; `StoreError` when a newer Endstate wrote it (never changed here)."""
        current, latest = self.schema_version(), latest_version(self.dialect)
        if current > latest:
            raise StoreError(
                f"the store at {self.shown} has schema version {current}, newer than this Endstate "
                f"reads ({latest}); upgrade Endstate"
            )
        return current

    def _apply_migrations(self) -> int:
        """Bring the schema to the latest version; refuse a newer one. How many migrations it applied."""
        current = self._refuse_newer()
        applied = self._applied()
        due = [
            (version, sql)
            for version, sql in migrations(self.dialect)
            # a gap after the journal is filled too: branches merged out of order (5 after 6) still apply
            if version > current or (version > JOURNAL_VERSION and version not in applied)
        ]
        for version, sql in due:
            for statement in split_statements(sql):
                self._rows(statement)
            if version == JOURNAL_VERSION:
                self._upgrade_v1_snapshots()
            self._rows(
                f"INSERT INTO {SCHEMA_TABLE} (version, applied_at) VALUES (?, ?)", (version, time.time())
            )
        return len(due)

    def _upgrade_v1_snapshots(self) -> None:
        """Version-1 snapshots become a head and journal entries, in place (same transaction)."""
        rows = self._rows(f"SELECT run_id, status, snapshot FROM {TABLE} WHERE snapshot IS NOT NULL")
        for row in rows:
            try:
                snap = Snapshot.from_json(row["snapshot"])
            except SnapshotError as exc:  # kept as it is: resuming the run says what is wrong with it
                log.error("run %s: its version-1 snapshot cannot be upgraded: %s", row["run_id"], exc)
                continue
            if row["status"] == RunStatus.RUNNING:  # a checkpoint that version 1 labelled cancelled
                snap = dataclasses.replace(snap, kind=SnapshotKind.CHECKPOINT)
            self._rows(
                f"UPDATE {TABLE} SET snapshot = ? WHERE run_id = ?", (dumps(snap.head()), row["run_id"])
            )
            self._insert_entries(row["run_id"], [(i, entry_json(e)) for i, e in enumerate(snap.journal)])

    # -- writes -----------------------------------------------------------

    def create(self, run: NewRun, lease: Lease, now: float) -> RunRecord:
        values = {
            **{"run_id": run.run_id, "agent": run.agent, "task": run.task, "task_type": run.task_type},
            **{"status": RunStatus.RUNNING, "state": dumps(run.state), "started_at": now, "updated_at": now},
            **{"segments": 1, "owner": lease.owner, "lease_until": float(lease.seconds)},
            "lease_seconds": float(lease.seconds),
            "journal_length": 0,
        }
        marks = ", ".join(f"{self.clock} + ?" if c == "lease_until" else "?" for c in values)
        # not the id of a pruned run whose label or audit is kept: this run would take them over
        kept = " AND ".join(f"NOT EXISTS (SELECT 1 FROM {t} WHERE run_id = ?)" for t in (REVIEWS, AUDITS))
        try:
            rows = self._rows(
                f"INSERT INTO {TABLE} ({', '.join(values)}) SELECT {marks} WHERE {kept} "
                f"RETURNING {LIST_COLUMNS}",
                [*values.values(), run.run_id, run.run_id],
            )
        except WriteRefused as exc:  # the primary key: another worker stored this id first
            raise RunExists(f"a run with id {run.run_id!r} already exists; pick another id") from exc
        if not rows:
            raise PrunedRunId(
                f"run id {run.run_id!r} belonged to a run that was pruned, whose review label or audit is "
                "kept under that id (a new run would take them over); pick another id"
            )
        return record_of(rows[0])

    def checkpoint(self, run_id: str, checkpoint: Checkpoint, lease: Lease, now: float) -> None:
        """Append the new journal entries and save the head, in one transaction under the lease."""
        values, entries = checkpoint_rows(checkpoint, lease, now)
        if not self._append(run_id, values, entries, lease):
            raise lease_lost(run_id, lease)

    def _append(
        self, run_id: str, values: dict[str, Any], entries: list[tuple[int, str]], lease: Lease
    ) -> bool:
        """Update the run's row if `lease` holds it, then add the entries; False when it does not."""
        with self._tx():
            n = self._count(
                checkpoint_update(tuple(values), self.clock),
                [*values.values(), run_id, lease.owner, RunStatus.RUNNING],
            )
            if n == 1:
                self._insert_entries(run_id, entries)
        return n == 1

    def store_whole(self, run_id: str, snapshot: Snapshot, lease: Lease, now: float) -> None:
        entries = [(i, entry_json(e)) for i, e in enumerate(snapshot.journal)]
        values = head_values(snapshot) | {"journal_length": len(entries), "updated_at": now}
        held = "WHERE run_id = ? AND owner = ? AND status = ?"
        with self._tx():
            n = self._count(
                f"UPDATE {TABLE} SET {assign(values, self.clock)} {held}",
                [*values.values(), run_id, lease.owner, RunStatus.RUNNING],
            )
            if n == 1:
                self._rows(f"DELETE FROM {ENTRIES} WHERE run_id = ?", (run_id,))
                self._insert_entries(run_id, entries)
        if n != 1:
            raise lease_lost(run_id, lease)

    def _insert_entries(self, run_id: str, entries: list[tuple[int, str]]) -> None:
        """Add `entries` (seq, JSON) to the run's journal, `ENTRY_ROWS` a statement (a journal stored in
        one go, such as an upgraded one, may be any length)."""
        for at in range(0, len(entries), ENTRY_ROWS):
            rows = entries[at : at + ENTRY_ROWS]
            marks = ", ".join("(?, ?, ?)" for _ in rows)
            params = [v for seq, text in rows for v in (run_id, seq, text)]
            self._rows(
                f"INSERT INTO {ENTRIES} (run_id, seq, entry) VALUES {marks} ON CONFLICT DO NOTHING", params
            )

    def record(self, run_id: str, outcome: Outcome, lease: Lease, now: float) -> RunRecord:
        values = _result_values(outcome) | {
            "ended_at": now if outcome.status is RunStatus.FINISHED else None,
            "updated_at": now,
            "owner": None,
            "lease_until": None,  # no lease: the clock plus NULL is NULL
        }
        if not outcome.keeps_answer:
            values |= {"answer": None, "approved": None, "answered_at": None}
        if (rest := outcome.rest) is not None and outcome.snapshot is None:  # its head, as it would have
            values |= head_values(rest.head)
        if (length := _length(outcome)) is not None:  # the journal's, written with its last entries
            values["journal_length"] = length
        sql = (
            f"UPDATE {TABLE} SET {assign(values, self.clock)} WHERE run_id = ? AND owner = ? "
            f"RETURNING {LIST_COLUMNS}"
        )
        params = [*values.values(), run_id, lease.owner]
        if outcome.snapshot is None:  # the result and the last entries, if any
            rows = self._record_rows(sql, params, run_id, entry_rows(rest) if rest is not None else [])
        else:
            with self._tx():
                rows = self._rows(sql, params)
                if rows and rest is not None:
                    self._insert_entries(run_id, entry_rows(rest))
                if rows and outcome.snapshot is not None:
                    self._save_rest(run_id, outcome.snapshot)
        if not rows:
            raise LeaseLost(f"run {run_id} is no longer held by {lease.owner}; its result was not recorded")
        return record_of(rows[0])

    def _record_rows(
        self, sql: str, params: list[Any], run_id: str, entries: list[tuple[int, str]]
    ) -> list[Row]:
        """Run the record's `UPDATE ... RETURNING` and add the entries if it updated the row, atomically:
        without entries one statement (no transaction: one round trip), with them one transaction."""
        if not entries:
            return self._rows(sql, params)
        with self._tx():
            rows = self._rows(sql, params)
            if rows:
                self._insert_entries(run_id, entries)
        return rows

    def _save_rest(self, run_id: str, snap: Snapshot) -> None:
        """Append the entries of a segment's final snapshot that its checkpoints did not save."""
        saved = self._rows(f"SELECT COUNT(*) AS n FROM {ENTRIES} WHERE run_id = ?", (run_id,))[0]["n"]
        rest = snap.journal[int(saved) :]
        self._insert_entries(run_id, [(int(saved) + i, entry_json(e)) for i, e in enumerate(rest)])

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
        sets: dict[str, Any] = {"status": RunStatus.RUNNING, "owner": lease.owner}
        sets |= {
            "lease_until": float(lease.seconds),
            "lease_seconds": float(lease.seconds),
            "updated_at": now,
        }
        if answer is not None or approved is not None:
            sets |= {"answer": answer, "approved": _flag(approved), "answered_at": now}
            sets |= {"last_answer_by": by, "last_answer_at": now, "last_answer": answer}
            sets |= {"last_answer_kind": answer_kind(answer, approved)}
        where, params = [f"status IN ({', '.join('?' for _ in statuses)})"], list[Any](statuses)
        if segments is not None:
            where, params = [*where, "segments = ?"], [*params, segments]
        if expired is not None:
            deadline = "deadline <= ?" if expired else "(deadline IS NULL OR deadline > ?)"
            where, params = [*where, deadline], [*params, now]
        # `interrupted` is kept: a run given back (`release`) is still one recovery continues, and the
        # segment's record says whether a shutdown cut it again
        with self._tx():  # a row it cannot read (damaged) is a StoreError, and the claim is undone
            rows = self._rows(
                f"UPDATE {TABLE} SET {assign(sets, self.clock)}, segments = segments + 1 "
                f"WHERE run_id = ? AND {' AND '.join(where)} RETURNING {ALL_COLUMNS}",
                [*sets.values(), run_id, *params],
            )
            if rows:
                return record_of(rows[0])
        raise self._refusal(run_id, statuses, segments, expired)

    def _refusal(
        self, run_id: str, statuses: tuple[RunStatus, ...], segments: int | None, expired: bool | None
    ) -> StoreError:
        """Why a claim took nothing (it changed nothing either)."""
        current = self.get(run_id)
        if current is None:
            return UnknownRun(f"no run with id {run_id!r}")
        said = f" ({current.answered_note})" if current.answered_note else ""
        if current.status not in statuses:
            wanted = " or ".join(str(s) for s in statuses)
            return NotClaimable(f"run {run_id} is {current.status}, not {wanted}{said}; nothing was changed")
        if segments is not None and current.segments != segments:
            return NotClaimable(
                f"run {run_id} moved on (segment {current.segments}) before this answer landed{said}; "
                "nothing was changed: read the run again and answer its current question"
            )
        if expired is False and current.deadline is not None:
            return too_late(run_id, current.deadline, LATE_ENDS_IT)
        return NotClaimable(f"run {run_id}'s deadline has not passed; nothing was changed")

    def take_over(
        self,
        run_id: str,
        old_owner: str,
        lease: Lease,
        now: float,
        only_lapsed: bool = True,
        as_seen: RunRecord | None = None,
    ) -> RunRecord:
        lapsed = f" AND (lease_until IS NULL OR lease_until < {self.clock})" if only_lapsed else ""
        same, seen = ("", ()) if as_seen is None else (_AS_SEEN, _seen_params(as_seen))
        rows = self._rows(
            f"UPDATE {TABLE} SET owner = ?, lease_until = {self.clock} + ?, lease_seconds = ?, "
            f"updated_at = ?, segments = segments + 1 "
            f"WHERE run_id = ? AND status = ? AND owner = ?{lapsed}{same} RETURNING {ALL_COLUMNS}",
            (lease.owner, *[float(lease.seconds)] * 2, now, run_id, RunStatus.RUNNING, old_owner, *seen),
        )
        if not rows:
            raise NotClaimable(
                f"run {run_id} is held again (its worker renewed the lease) or another worker took it "
                "over first; nothing was changed"
            )
        return record_of(rows[0])

    def release(
        self, run_id: str, status: RunStatus, lease: Lease, now: float, refused: str | None = None
    ) -> None:
        """Give a claimed run back as `status`; one that waits again forgets what it was claimed with.
        `refused` (why that answer was not taken) is kept on the run until it moves on: a release with
        none (a sweep's failed expiry) keeps the one a person was given before."""
        forget = ", answer = NULL, approved = NULL, answered_at = NULL" if status is RunStatus.WAITING else ""
        self._count(
            f"UPDATE {TABLE} SET status = ?, owner = NULL, lease_until = NULL, updated_at = ?, "
            f"segments = segments - 1, refused = COALESCE(?, refused){forget} WHERE run_id = ? AND owner = ?",
            (status, now, refused, run_id, lease.owner),
        )

    def heartbeat(self, lease: Lease, run_ids: Sequence[str] | None = None) -> int:
        if run_ids is not None and not run_ids:
            return 0
        only = "" if run_ids is None else f" AND run_id IN ({', '.join('?' for _ in run_ids)})"
        return self._count(
            f"UPDATE {TABLE} SET lease_until = {self.clock} + ?, lease_seconds = ? WHERE owner = ? "
            f"AND status = ?{only}",
            (*[float(lease.seconds)] * 2, lease.owner, RunStatus.RUNNING, *(run_ids or ())),
            retry=True,
        )

    # -- success audits ---------------------------------------------------------------------------

    def schedule_audit(self, audit: Audit) -> None:
        """Plan an audit of a finished run (once: a second plan for the same run changes nothing)."""
        self._rows(
            f"INSERT INTO {AUDITS} (run_id, agent, task_type, due_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (audit.run_id, audit.agent, audit.task_type, audit.due_at),
        )

    def due_audits(self, now: float, limit: int = 100, agents: Sequence[str] | None = None) -> list[Audit]:
        if agents is not None and not agents:
            return []
        only = "" if agents is None else f" AND agent IN ({', '.join('?' for _ in agents)})"
        rows = self._rows(
            f"SELECT run_id, agent, task_type, due_at FROM {AUDITS} WHERE outcome IS NULL AND due_at <= ?"
            f"{only} ORDER BY due_at LIMIT {int(limit)}",
            (now, *(agents or ())),
            retry=True,
        )
        return [Audit(r["run_id"], r["agent"], r["task_type"], float(r["due_at"])) for r in rows]

    def claim_audit(self, audit: Audit, until: float) -> bool:
        """Take a due audit to make it: its due time moves to `until` (when it is due again, should its
        maker die first), if no other worker took it or recorded it since it was listed. False then."""
        n = self._count(
            f"UPDATE {AUDITS} SET due_at = ? WHERE run_id = ? AND outcome IS NULL AND due_at = ?",
            (until, audit.run_id, audit.due_at),
        )
        return n == 1

    def record_audit(self, run_id: str, outcome: AuditOutcome, note: str, now: float) -> bool:
        """Keep an audit's outcome; False when another worker recorded it first."""
        n = self._count(
            f"UPDATE {AUDITS} SET outcome = ?, note = ?, checked_at = ? WHERE run_id = ? AND outcome IS NULL",
            (outcome, note, now, run_id),
        )
        return n == 1

    def audit_of(self, run_id: str) -> Audit | None:
        rows = self._rows(f"SELECT * FROM {AUDITS} WHERE run_id = ?", (run_id,), retry=True)
        if not rows:
            return None
        r = rows[0]
        outcome = AuditOutcome(r["outcome"]) if r["outcome"] else None
        checked = float(r["checked_at"]) if r["checked_at"] is not None else None
        return Audit(r["run_id"], r["agent"], r["task_type"], float(r["due_at"]), outcome, r["note"], checked)

    def list_audits(
        self,
        outcome: AuditOutcome | None = None,
        limit: int = 100,
        agent: str | None = None,
        task_type: str | None = None,
        due: bool = False,
    ) -> list[AuditRecord]:
        """The audits' page is read first, filtered, ordered and cut in SQL; each of its rows then looks
        its run's trace id up by the runs' key: at most `limit` runs read, whatever the store holds."""
        where, params = _audits_where(outcome, agent, task_type, due)
        order = "ORDER BY COALESCE(checked_at, due_at) DESC, run_id"
        page = f"SELECT run_id, agent, task_type, due_at, outcome, note, checked_at FROM {AUDITS} {where}"
        trace = f"(SELECT trace_id FROM {TABLE} r WHERE r.run_id = a.run_id) AS trace_id"
        sql = f"SELECT a.*, {trace} FROM ({page} {order} LIMIT {int(limit)}) a {order}"
        return audit_records(self._rows(sql, params, retry=True))

    # -- reads ------------------------------------------------------------

    def now(self) -> float:
        return float(self._rows(f"SELECT {self.clock} AS now", retry=True)[0]["now"])

    def get(self, run_id: str) -> RunRecord | None:
        rows = self._rows(f"SELECT {ALL_COLUMNS} FROM {TABLE} WHERE run_id = ?", (run_id,), retry=True)
        return record_of(rows[0]) if rows else None

    def snapshot(self, run_id: str) -> Snapshot | None:
        record = self.get(run_id)
        if record is None or not record.snapshot_json:
            return None
        rows = self._rows(
            f"SELECT seq, entry FROM {ENTRIES} WHERE run_id = ? ORDER BY seq", (run_id,), retry=True
        )
        for i, row in enumerate(rows):
            if int(row["seq"]) != i:  # a journal with a hole is another run: never read it as one
                raise DamagedJournal(
                    f"run {run_id}: its journal entry {i} is missing (the next is {row['seq']}); nothing "
                    f"was changed. {damaged_run(run_id)}"
                )
        if record.journal_length is not None and len(rows) < record.journal_length:  # its end is lost
            raise short_journal(run_id, len(rows), record.journal_length)
        try:
            return Snapshot.from_parts(record.snapshot_json, [r["entry"] for r in rows])
        except SnapshotError as exc:
            raise UnreadableSnapshot(
                f"run {run_id}: its stored snapshot cannot be read ({exc}); nothing was changed. If a newer "
                "Endstate wrote it, upgrade this Endstate; if it was edited by hand or the store is damaged, "
                "fix the row or delete the run"
            ) from exc

    def journal_tail(self, run_id: str, count: int) -> Snapshot | None:
        """The run's snapshot with only the last `count` entries of its journal (all of them when it
        holds fewer), read and decoded alone: what a page that shows a run's last steps needs, at a
        cost that does not grow with the run's length. Its end is checked as `snapshot` checks the
        whole (an entry missing among them, or its last ones lost: `DamagedJournal`); the entries
        before it are not read. A version-1 snapshot (no entries of its own) is read whole."""
        record = self.get(run_id)
        if record is None or not record.snapshot_json:
            return None
        length = record.journal_length
        if length is None or count >= length or _head_version(record.snapshot_json) == 1:
            whole = self.snapshot(run_id)
            return None if whole is None else dataclasses.replace(whole, journal=whole.journal[-count:])
        rows = self._rows(
            f"SELECT seq, entry FROM {ENTRIES} WHERE run_id = ? AND seq >= ? ORDER BY seq",
            (run_id, length - count),
            retry=True,
        )
        first = length - count
        for i, row in enumerate(rows):
            if int(row["seq"]) != first + i:
                raise DamagedJournal(
                    f"run {run_id}: its journal entry {first + i} is missing (the next is {row['seq']}); "
                    f"nothing was changed. {damaged_run(run_id)}"
                )
        if len(rows) < count:
            raise short_journal(run_id, first + len(rows), length)
        try:
            return Snapshot.from_parts(record.snapshot_json, [r["entry"] for r in rows])
        except SnapshotError as exc:
            raise UnreadableSnapshot(f"run {run_id}: its stored snapshot cannot be read ({exc})") from exc

    def list_runs(
        self,
        status: RunStatus | None = None,
        limit: int | None = 100,
        agent: str | None = None,
        task_type: str | None = None,
    ) -> Listing:
        where, params = _runs_where(status=status, agent=agent, task_type=task_type)
        cap = f" LIMIT {int(limit)}" if limit is not None else ""
        sql = f"SELECT {LIST_COLUMNS} FROM {TABLE} {where} ORDER BY started_at DESC{cap}"
        rows = self._rows(sql, params, retry=True)
        return records_of(rows)

    def finished_since(self, since: float | None, limit: int = 1_000_000) -> Listing:
        """The finished runs that ended at `since` or later (all of them when None), newest first,
        with what their usage and stop say (no texts, state or journal): what `limits suggest` reads.
        The window is the store's to apply, so a week's suggestion reads the week's runs, not every
        run the store ever kept (and each whole)."""
        when = " AND COALESCE(ended_at, updated_at) >= ?" if since is not None else ""
        sql = (
            f"SELECT {USAGE_COLUMNS} FROM {TABLE} WHERE status = ?{when} ORDER BY started_at DESC "
            f"LIMIT {int(limit)}"
        )
        params: list[Any] = [RunStatus.FINISHED, *([since] if since is not None else [])]
        return records_of(self._rows(sql, params, retry=True))

    def overview(
        self,
        status: RunStatus | None,
        limit: int,
        chars: int,
        agent: str | None = None,
        task_type: str | None = None,
    ) -> Listing:
        """`list_runs`, each long text cut in SQL to its first `chars` characters (a JSON column
        longer than that left out), so what is read is bounded by `limit` whatever the runs hold;
        each cut field's whole size in bytes is in the listing's `cut`, by run."""
        where, params = _runs_where(status=status, agent=agent, task_type=task_type)
        columns = cut_columns(chars, self.octets)
        sql = f"SELECT {columns} FROM {TABLE} {where} ORDER BY started_at DESC LIMIT {int(limit)}"
        return records_of(self._rows(sql, params, retry=True), cut=True)

    def expired(self, now: float) -> list[RunRecord]:
        rows = self._rows(
            f"SELECT {LIST_COLUMNS} FROM {TABLE} WHERE status = ? AND deadline <= ? ORDER BY deadline",
            (RunStatus.WAITING, now),
            retry=True,
        )
        return records_of(rows)

    def interrupted(self) -> list[RunRecord]:
        rows = self._rows(
            f"SELECT {LIST_COLUMNS} FROM {TABLE} WHERE status = ? AND interrupted = 1 ORDER BY started_at",
            (RunStatus.CANCELLED,),
            retry=True,
        )
        return records_of(rows)

    def waiting(
        self, limit: int, offset: int = 0, agent: str | None = None, task_type: str | None = None
    ) -> Listing:
        """Runs waiting for a person, the longest waiting first (`suspended_at`, then the run id),
        `limit` of them from `offset`, of `agent` and `task_type` when given: ordered, filtered and
        cut in SQL, over the waiting runs' own index (schema 10). A row it cannot read is left out
        (and logged), its id in `damaged`: the page holds `len(listing) + len(listing.damaged)` rows."""
        where, params = _waiting_where(agent, task_type)
        cut = f"ORDER BY {self.waiting_order} LIMIT {int(limit)} OFFSET {int(offset)}"
        return records_of(self._rows(self._journal_checked(where, cut), params, retry=True))

    def _journal_checked(self, where: str, cut: str) -> str:
        """The waiting runs' page (`where`, ordered and cut by `cut`), each row with `JOURNAL_SHORT`,
        looked up for the page's rows only. SQLite skips the rows an offset passes over before it
        computes a column, and would sort a page read as a subquery again: one select. PostgreSQL
        computes the columns of the rows it skips too (a look-up for each run the offset passes), so
        it reads the page first, as a subquery, whose order its outer select keeps without a sort."""
        if self.dialect == "sqlite":
            return f"SELECT {LIST_COLUMNS}, {JOURNAL_SHORT} FROM {TABLE} r WHERE {where} {cut}"
        page = f"SELECT {LIST_COLUMNS} FROM {TABLE} WHERE {where} {cut}"
        return f"SELECT r.*, {JOURNAL_SHORT} FROM ({page}) r ORDER BY {self.waiting_order}"

    def waiting_counts(self) -> list[tuple[str, str, int]]:
        """How many runs wait for a person, by (agent, task type): counted in SQL, from the index."""
        sql = (
            f"SELECT agent, task_type, COUNT(*) AS n FROM {TABLE} WHERE {WAITING} "
            "GROUP BY agent, task_type ORDER BY agent, task_type"
        )
        return [(r["agent"], r["task_type"], int(r["n"])) for r in self._rows(sql, retry=True)]

    def pending_groups(self) -> list[tuple[str, str, int, float]]:
        """(agent, task type, how many runs wait for a person, when the oldest of them asked), for the
        help gauges at every scrape: counted in SQL, from the waiting runs' index alone. A run whose
        asking time is unknown (a suspension that does not say) is taken to have asked when its row
        last changed (stored waiting, or an answer given back): an age of at least that, never 0, so
        its wait can still page. Only such runs' rows are read for it, and only when there are some."""
        known = "CASE WHEN suspended_at > 0 THEN suspended_at END"
        sql = (
            f"SELECT agent, task_type, COUNT(*) AS n, MIN({known}) AS oldest, COUNT(*) - COUNT({known}) "
            f"AS untimed FROM {TABLE} WHERE {WAITING} GROUP BY agent, task_type ORDER BY agent, task_type"
        )
        rows = self._rows(sql, retry=True)
        since = self._untimed_since() if any(r["untimed"] for r in rows) else {}
        groups = []
        for r in rows:
            times = [float(t) for t in (r["oldest"], since.get((r["agent"], r["task_type"]))) if t]
            groups.append((r["agent"], r["task_type"], int(r["n"]), min(times, default=0.0)))
        return groups

    def _untimed_since(self) -> dict[tuple[str, str], float]:
        """For each (agent, task type), when the oldest waiting run that does not say when it asked
        was last changed."""
        sql = (
            f"SELECT agent, task_type, MIN(updated_at) AS since FROM {TABLE} WHERE {WAITING} "
            "AND (suspended_at IS NULL OR suspended_at <= 0) GROUP BY agent, task_type"
        )
        return {(r["agent"], r["task_type"]): r["since"] for r in self._rows(sql, retry=True)}

    # -- reviews and retention ---------------------------------------------

    def add_review(self, run_id: str, label: str, note: str, now: float, by: str = "") -> Review:
        with self._tx():
            run = self._rows(f"SELECT agent, task_type, status FROM {TABLE} WHERE run_id = ?", (run_id,))
            if not run:
                raise UnknownRun(f"no run with id {run_id!r}")
            if run[0]["status"] != RunStatus.FINISHED:
                raise NotClaimable(
                    f"run {run_id} is {run[0]['status']}, not finished: only finished runs are reviewed"
                )
            rows = self._rows(
                f"INSERT INTO {REVIEWS} (run_id, agent, task_type, label, note, labelled_at, labelled_by) "
                f"VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING {REVIEW_COLUMNS}",
                (run_id, run[0]["agent"], run[0]["task_type"], label, note, now, by),
            )
        return review_of(rows[0])

    def reviews(self, after: int = 0, run_ids: Sequence[str] | None = None) -> list[Review]:
        if run_ids is not None and not run_ids:
            return []
        only = "" if run_ids is None else f" AND run_id IN ({', '.join('?' for _ in run_ids)})"
        rows = self._rows(
            f"SELECT {REVIEW_COLUMNS} FROM {REVIEWS} WHERE id > ?{only} ORDER BY id",
            (after, *(run_ids or ())),
            retry=True,
        )
        return review_records(rows)

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
        if order not in ("oldest", "newest"):
            raise ValueError(f"the review queue's order is 'oldest' or 'newest', not {order!r}")
        where, params = _queue_where(reasons, success_share)
        for column, value in (("agent", agent), ("task_type", task_type)):
            if value is not None:
                where += f" AND {column} = ?"
                params.append(value)
        unlimited = " LIMIT -1" if self.dialect == "sqlite" else ""  # SQLite has no OFFSET without LIMIT
        cap = f" LIMIT {int(limit)}" if limit is not None else unlimited
        page = f"{cap} OFFSET {int(offset)}" if offset else cap
        by = "ended_at DESC, run_id DESC" if order == "newest" else "ended_at, run_id"
        sql = f"SELECT {LIST_COLUMNS} FROM {TABLE} r WHERE {where} ORDER BY {by}{page}"
        return records_of(self._rows(sql, params, retry=True))

    def review_counts(
        self, reasons: Sequence[StopReason], success_share: float
    ) -> list[tuple[str, str, int]]:
        where, params = _queue_where(reasons, success_share)
        sql = (
            f"SELECT agent, task_type, COUNT(*) AS n FROM {TABLE} r WHERE {where} "
            "GROUP BY agent, task_type ORDER BY agent, task_type"
        )
        return [(r["agent"], r["task_type"], int(r["n"])) for r in self._rows(sql, params, retry=True)]

    def labelled(
        self, limit: int, offset: int = 0, agent: str | None = None, task_type: str | None = None
    ) -> list[Review]:
        latest = f"v.id = (SELECT MAX(w.id) FROM {REVIEWS} w WHERE w.run_id = v.run_id)"
        only = "".join(f" AND v.{c} = ?" for c, x in (("agent", agent), ("task_type", task_type)) if x)
        params = [x for x in (agent, task_type) if x]
        sql = (
            f"SELECT {REVIEW_COLUMNS} FROM {REVIEWS} v WHERE {latest}{only} "
            f"ORDER BY v.id DESC LIMIT {int(limit)} OFFSET {int(offset)}"
        )
        return review_records(self._rows(sql, params, retry=True))

    def prune(self, ended_before: float, batch: int = 500) -> int:
        pruned = 0
        while True:
            with self._tx():  # one batch per transaction: no long lock on a busy store
                pending_audit = f"SELECT 1 FROM {AUDITS} a WHERE a.run_id = r.run_id AND a.outcome IS NULL"
                gone = self._rows(
                    f"DELETE FROM {TABLE} WHERE status = ? AND ended_at < ? AND run_id IN "
                    f"(SELECT run_id FROM {TABLE} r WHERE status = ? AND ended_at < ? "
                    f"AND NOT EXISTS ({pending_audit}) ORDER BY ended_at LIMIT {int(batch)}) "
                    "RETURNING run_id",
                    (RunStatus.FINISHED, ended_before, RunStatus.FINISHED, ended_before),
                )
                ids = [r["run_id"] for r in gone]
                if ids:
                    marks = ", ".join("?" for _ in ids)
                    self._rows(f"DELETE FROM {ENTRIES} WHERE run_id IN ({marks})", ids)
            pruned += len(ids)
            if len(ids) < batch:
                return pruned


def _equals(**only: object) -> tuple[list[str], list[Any]]:
    """`column = ?` for each column `only` names with a value (None: any), and the values: each a
    parameter, never in the SQL's text."""
    given = {column: str(value) for column, value in only.items() if value is not None}
    return [f"{column} = ?" for column in given], list(given.values())


def _where(conditions: list[str]) -> str:
    """A WHERE clause of all `conditions` ('' for none)."""
    return "WHERE " + " AND ".join(conditions) if conditions else ""


def _runs_where(**only: str | None) -> tuple[str, list[Any]]:
    """`list_runs`' WHERE clause ('' for every run) of the columns `only` names with a value, and its
    parameters."""
    conditions, params = _equals(**only)
    return _where(conditions), params


def _waiting_where(agent: str | None, task_type: str | None) -> tuple[str, list[Any]]:
    """The waiting runs' condition (of `agent` and `task_type`, when given) and its parameters."""
    conditions, params = _equals(agent=agent, task_type=task_type)
    return " AND ".join([WAITING, *conditions]), params


def _audits_where(
    outcome: AuditOutcome | None, agent: str | None, task_type: str | None, due: bool
) -> tuple[str, list[Any]]:
    """`list_audits`' WHERE clause and its parameters: the audits made (with `due`, those still to make
    too), of `outcome`, `agent` and `task_type` when given."""
    made = [] if due or outcome is not None else ["outcome IS NOT NULL"]
    conditions, params = _equals(outcome=outcome, agent=agent, task_type=task_type)
    return _where(made + conditions), params


def audit_records(rows: list[Row]) -> list[AuditRecord]:
    """The audits of a listing; a row this code cannot read (an outcome it does not know, written by
    hand or by a newer release) is logged and left out, never hiding the others."""
    records = []
    for row in rows:
        try:
            records.append(audit_record(row))
        except (ValueError, TypeError) as exc:
            log.error(
                "the audit of run %s cannot be read (%s); it is left out of this listing", row["run_id"], exc
            )
    return records


def audit_record(row: Row) -> AuditRecord:
    """A row of `list_audits`: an audit and its run's trace id."""
    outcome = AuditOutcome(row["outcome"]) if row["outcome"] else None
    checked = float(row["checked_at"]) if row["checked_at"] is not None else None
    return AuditRecord(
        row["run_id"], row["agent"], row["task_type"], float(row["due_at"]), outcome, row["note"], checked,
        row["trace_id"],
    )  # fmt: skip


def review_records(rows: list[Row]) -> list[Review]:
    """The labels of a listing; a row this code cannot read (a column of another type: a hand edit,
    or a damaged file) is logged and left out, never hiding the others."""
    reviews = []
    for row in rows:
        try:
            reviews.append(review_of(row))
        except (ValueError, TypeError) as exc:
            log.error(
                "label %s of run %s cannot be read (%s); it is left out of this listing",
                row["id"],
                row["run_id"],
                exc,
            )
    return reviews


def review_of(row: Row) -> Review:
    """A label from its row; a column of another type is a ValueError saying which."""
    for name in ("run_id", "agent", "task_type", "label", "note", "labelled_by"):
        if not isinstance(row[name], str):
            raise ValueError(f"its {name} column holds {type(row[name]).__name__}, not text")
    if type(row["labelled_at"]) not in (int, float) or not math.isfinite(row["labelled_at"]):
        raise ValueError(f"its labelled_at column holds {row['labelled_at']!r:.40}, not a time")
    return Review(
        int(row["id"]), row["run_id"], row["agent"], row["task_type"], row["label"], row["note"],
        float(row["labelled_at"]), row["labelled_by"],
    )  # fmt: skip


def _queue_where(reasons: Sequence[StopReason], success_share: float) -> tuple[str, list[Any]]:
    """The review queue's condition and its parameters: finished, unlabelled, a queued reason or
    a sampled success. The sample keys on the end time's last digits (microseconds within 10 ms):
    stable from call to call, spread evenly, and portable SQL (no hash function both dialects share)."""
    micros = "CAST(ended_at * 1000000 AS BIGINT)"
    sampled = f"({micros} - ({micros} / {SAMPLE_SCALE}) * {SAMPLE_SCALE}) < ?"
    marks = ", ".join("?" for _ in reasons) or "NULL"
    where = (
        f"status = ? AND (stop_reason IN ({marks}) OR (stop_reason = ? AND {sampled})) "
        f"AND NOT EXISTS (SELECT 1 FROM {REVIEWS} v WHERE v.run_id = r.run_id)"
    )
    share = round(min(max(success_share, 0.0), 1.0) * SAMPLE_SCALE)
    return where, [RunStatus.FINISHED, *map(str, reasons), StopReason.SUCCESS, share]


def checkpoint_rows(
    checkpoint: Checkpoint, lease: Lease, now: float
) -> tuple[dict[str, Any], list[tuple[int, str]]]:
    """What a checkpoint writes: the run row's new values, and the entries as (seq, JSON)."""
    head = checkpoint.head
    values = _usage_values(head)
    values |= head_values(head)
    values["state"] = dumps(head.state) if head.state else "{}"
    values["lease_until"], values["updated_at"] = float(lease.seconds), now
    values["lease_seconds"] = float(lease.seconds)
    values["journal_length"] = checkpoint.first + len(checkpoint.entries)
    return values, entry_rows(checkpoint)


def _length(outcome: Outcome) -> int | None:
    """The journal's length once a segment's result is recorded: its final snapshot's, or that of the
    entries its last checkpoint failed to write; None when it writes no entries (the length stands)."""
    if outcome.snapshot is not None:
        return len(outcome.snapshot.journal)
    rest = outcome.rest
    return None if rest is None else rest.first + len(rest.entries)


def head_values(head: Snapshot) -> dict[str, Any]:
    """The run row's saved head and its snapshot version (which a listing reads without the head)."""
    return {"snapshot": dumps(head.head()), "head_version": head.version}


def entry_rows(checkpoint: Checkpoint) -> list[tuple[int, str]]:
    """A checkpoint's entries as (seq, JSON)."""
    return [(checkpoint.first + i, entry_json(e)) for i, e in enumerate(checkpoint.entries)]


# A take-over's compare-and-set on the lease as its taker saw it: a renewal (a later end) or another
# take-over (one more segment) since that look leaves the run to its holder.
_AS_SEEN = " AND COALESCE(lease_until, -1.0) = ? AND segments = ?"


def _seen_params(seen: RunRecord) -> tuple[float, int]:
    """The parameters of `_AS_SEEN` for the lease of `seen` (no end: -1, which no lease's end is)."""
    return (-1.0 if seen.lease_until is None else float(seen.lease_until), seen.segments)


def lease_lost(run_id: str, lease: Lease) -> LeaseLost:
    return LeaseLost(f"run {run_id} is no longer held by {lease.owner}; another worker took it over")


def entry_json(entry: Entry) -> str:
    return dumps(encode_entry(entry))


def _usage_values(snap: Snapshot) -> dict[str, Any]:
    """The run row's usage columns at a checkpoint, and its turns and times, read from the running
    tally itself (no `Usage` value made at every checkpoint)."""
    u = snap.usage
    values = _columns(u, u.known_cost())
    values["turns"] = u.turns
    values["active_seconds"] = u.active_seconds
    values["waiting_seconds"] = u.waiting_seconds
    return values


def usage_columns(usage: Usage) -> dict[str, Any]:
    """The run row's usage columns; an unknown cost is `cost_known = 0` (and no cost in `cost_usd`)."""
    return _columns(usage, usage.cost_usd)


def _columns(tokens: Usage | Spent, cost: float | None) -> dict[str, Any]:
    return {
        "input_tokens": tokens.input_tokens,
        "output_tokens": tokens.output_tokens,
        "cache_read_tokens": tokens.cache_read_tokens,
        "cache_write_tokens": tokens.cache_write_tokens,
        "cost_usd": cost or 0.0,
        "cost_known": int(cost is not None),
    }


def usage_of(row: Row) -> Usage:
    """A row's usage (a row listed without the usage columns has none)."""
    cost = float(row.get("cost_usd") or 0.0) if row.get("cost_known", 1) else None
    return Usage(
        int(row.get("input_tokens") or 0),
        int(row.get("output_tokens") or 0),
        int(row.get("cache_read_tokens") or 0),
        int(row.get("cache_write_tokens") or 0),
        cost,
    )


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


def assign(values: Iterable[str], clock: str) -> str:
    """`column = ?, ...`; `lease_until` is given as seconds past the store's clock (`clock`, SQL)."""
    return ", ".join(f"{c} = {clock} + ?" if c == "lease_until" else f"{c} = ?" for c in values)


@functools.lru_cache(maxsize=16)
def checkpoint_update(columns: tuple[str, ...], clock: str) -> str:
    """A checkpoint's update of the run's row (`columns` in this order, then the run id, the lease's
    owner and the status `running`), made once per set of columns rather than at every checkpoint."""
    return (
        f"UPDATE {TABLE} SET {assign(columns, clock)}, checkpoints = checkpoints + 1 "
        "WHERE run_id = ? AND owner = ? AND status = ?"
    )


def _result_values(outcome: Outcome) -> dict[str, Any]:
    """The columns a segment's result sets; what it waits for only when it waits."""
    r, s = outcome.result, outcome.result.suspension
    w = s if outcome.status is RunStatus.WAITING else None
    return {
        **{"status": outcome.status, "stop_reason": r.reason, "stop_limit": r.limit, "turns": r.turns},
        **usage_columns(r.usage),
        **{"active_seconds": r.active_seconds, "waiting_seconds": r.waiting_seconds, "trace_id": r.trace_id},
        **{"note": r.note, "summary": r.summary, "output": r.output, "verified": int(r.verified)},
        **{"error_type": r.error_type, "question": w.question if w else None},
        **{"pending": dumps(w.pending.__dict__) if w and w.pending else None},
        **{"deadline": w.deadline if w else None, "suspended_at": w.suspended_at if w else None},
        **{"interrupted": int(outcome.interrupted), "refused": None},  # it moved on: a refusal is old news
        # a finished run keeps its last head and its journal (for review, replay and `--more-turns`)
        **({} if outcome.status is RunStatus.FINISHED else _head_or_none(outcome.snapshot)),
    }


def _head_or_none(snap: Snapshot | None) -> dict[str, Any]:
    return head_values(snap) if snap is not None else {"snapshot": None, "head_version": None}


def _head_version(head: str) -> object:
    """The version a stored snapshot's head says (None when it says none, or is no JSON object)."""
    try:
        data = json.loads(head)
    except ValueError:
        return None
    return data.get("version") if isinstance(data, dict) else None


def record_of(row: Row) -> RunRecord:
    """A `RunRecord` from a row (columns as in `ALL_COLUMNS`); a damaged column is a `DamagedRun`."""
    _check_numbers(row)
    _check_texts(row)
    return RunRecord(
        **{k: row[k] for k in _PLAIN if k in row},
        status=_column(row, "status", RunStatus),
        state=_column(row, "state", _state),
        stop_reason=_column(row, "stop_reason", lambda v: StopReason(v) if v else None),
        verified=bool(row["verified"]),
        interrupted=bool(row["interrupted"]),
        pending=_column(row, "pending", pending_of),
        approved=None if row.get("approved") is None else bool(row["approved"]),
        usage=usage_of(row),
        snapshot_json=row.get("snapshot"),
        journal_short=bool(row.get("journal_short")),
    )


def records_of(rows: list[Row], cut: bool = False) -> Listing:
    """The records of a listing; a damaged row is logged and left out, never hiding the others.
    With `cut`, the rows of `cut_columns`: each field cut is named in the listing's `cut`."""
    listing = Listing()
    for row in rows:
        try:
            listing.append(record_of(row))
        except StoreError as exc:
            log.error("%s; it is left out of this listing", exc)
            listing.damaged.append(str(row.get("run_id")))
            continue
        if cut and (sizes := _cut_sizes(row)):
            listing.cut[str(row["run_id"])] = sizes
    return listing


def cut_columns(chars: int, octets: str) -> str:
    """`LIST_COLUMNS` with each long text cut to its first `chars` characters, each JSON column
    there only when it is no longer, and each one's whole size in bytes beside it (`<name>_bytes`,
    `octets` the dialect's SQL for it)."""
    n = int(chars)
    shown = {c: f"substr({c}, 1, {n}) AS {c}" for c in CUT_TEXTS}
    shown |= {c: f"CASE WHEN length({c}) <= {n} THEN {c} END AS {c}" for c in CUT_OBJECTS}
    columns = [shown.get(c, c) for c in LIST_COLUMNS.split(", ")]
    sizes = [f"{octets.format(c)} AS {c}_bytes" for c in (*CUT_TEXTS, *CUT_OBJECTS)]
    return ", ".join(columns + sizes)


def _cut_sizes(row: Row) -> dict[str, int]:
    """The fields of a `cut_columns` row that were cut, each with its whole size in bytes."""
    cut = {}
    for c in (*CUT_TEXTS, *CUT_OBJECTS):
        whole, given = row.get(f"{c}_bytes"), row.get(c)
        if isinstance(whole, int) and whole > len((given or "").encode("utf-8", "surrogatepass")):
            cut[c] = whole
    return cut


def _column(row: Row, name: str, decode: Any) -> Any:
    try:
        return decode(row[name])
    except (ValueError, TypeError) as exc:
        raise _damaged(row, name, exc) from exc


def _check_numbers(row: Row) -> None:
    """A number column holding anything else is damaged: SQLite keeps text typed into a REAL or
    INTEGER column by hand as text, which no listing could sort or add up; and a count of tokens
    that is no finite number (a REAL column keeps `9e999` as infinity) is no count."""
    for name in _NUMBERS:
        value = row.get(name)
        if value is not None and type(value) not in (int, float):
            raise _damaged(row, name, f"{value!r:.40} is not a number")
        if name in _COUNTS and isinstance(value, float) and not math.isfinite(value):
            raise _damaged(row, name, f"{value!r} is not a count")


def _check_texts(row: Row) -> None:
    """A text column holding bytes is damaged: SQLite keeps a blob written into a TEXT column by hand
    (`SET agent = X'f72b'`) as a blob, which no page or listing could show."""
    for name in _TEXTS:
        value = row.get(name)
        if value is not None and not isinstance(value, str):
            raise _damaged(row, name, f"{type(value).__name__} where text belongs")


def _damaged(row: Row, name: str, why: object) -> DamagedRun:
    """No retry mends a damaged column: a `DamagedRun` (a 409 over HTTP, not a 503's "try again")."""
    return DamagedRun(
        f"run {row.get('run_id')}: its {name} column is damaged ({why}); the store was edited by "
        "hand or is damaged: fix the row, or delete the run"
    )


def _state(text: str | None) -> dict[str, Any]:
    state = json.loads(text or "{}")
    if not isinstance(state, dict):
        raise TypeError(f"a JSON object was expected, not {type(state).__name__}")
    return state


_NUMBERS = (  # the row's number columns (a listing may leave some out)
    *("started_at", "updated_at", "ended_at", "turns", "active_seconds", "waiting_seconds", "segments"),
    *("deadline", "suspended_at", "lease_until", "answered_at", "cost_usd", "input_tokens", "output_tokens"),
    *("cache_read_tokens", "cache_write_tokens", "head_version", "lease_seconds", "last_answer_at"),
    "journal_length",
)

_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")  # read as ints

_TEXTS = (  # the row's text columns (a listing may leave some out); JSON ones are checked as decoded
    *("run_id", "agent", "task", "task_type", "stop_limit", "trace_id", "note", "summary", "output"),
    *("error_type", "question", "owner", "answer", "refused", "last_answer_by", "last_answer_kind"),
    *("last_answer", "snapshot"),
)

_PLAIN = [
    *("run_id", "agent", "task", "task_type", "started_at", "updated_at", "ended_at", "stop_limit", "turns"),
    *("active_seconds", "waiting_seconds", "trace_id", "note"),
    *("summary", "output", "error_type", "segments", "question", "deadline", "suspended_at", "owner"),
    *("lease_until", "answer", "answered_at", "refused", "head_version", "lease_seconds"),
    *("last_answer_by", "last_answer_at", "last_answer_kind", "last_answer", "journal_length"),
]
