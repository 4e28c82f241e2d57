"""The mutable state of one run segment, kept in one place."""

from __future__ import annotations

import math
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from agent._codec import unwritable
from agent.budget import Budget, Extension, Spent, bounded_extension
from agent.clock import SYSTEM_CLOCK, Clock, StoppedClock, clock_problem
from agent.context import CallRecord, RunContext, own_state
from agent.errors import ConfigError
from agent.history import HistoryPolicy
from agent.journal import Entry, Extended, Journal, Reply, Result, Shrunk, add_entry, read_only
from agent.progress import ProgressDetector, replay
from agent.result import LimitKind, RunResult, StopCause, StopReason, Suspension
from agent.snapshot import Checkpoint, Snapshot, SnapshotKind
from agent.usage import Usage


@dataclass
class RunState:
    """All that changes while a segment runs; the loop reads and writes only this."""

    ctx: RunContext
    usage: Spent
    progress: ProgressDetector
    clock: Clock = SYSTEM_CLOCK
    segment: int = 1
    failures: list[str] = field(default_factory=list)
    trace_id: str | None = None
    span_id: str | None = None
    saved: int = 0  # journal entries already handed to the checkpointer
    history: HistoryPolicy = field(default_factory=HistoryPolicy)
    budget: Budget = field(default_factory=Budget)  # the agent's, plus the extensions in the journal
    sent: list[Entry] = field(default_factory=list)  # the journal as the model is sent it
    pending: Awaitable[None] | None = None  # the last checkpoint handed over and not yet written
    _active_before: float = 0.0
    _started: float | None = None
    _turn_mark: int = 0  # the journal's length when the turn began
    turn_cut: bool = False  # the segment ends in a turn cancelled before its model replied

    def __post_init__(self) -> None:
        if self._started is None:
            self._started = self.clock.monotonic()
        if not self.sent:
            self.sent = self.history.view(self.journal.entries)

    @property
    def journal(self) -> Journal:
        return self.ctx.journal

    def record(self, entry: Entry) -> None:
        """Append one entry to the journal, and keep what the model is sent in step with it."""
        kind = type(entry)  # exact types, as the codec reads them (`_codec._TYPE_OF`)
        cleared = self.history.cleared_by(self.journal.entries, entry) if kind is Shrunk else None
        add_entry(self.ctx.journal.entries, entry)  # (`Journal.append`, without its check: once an entry)
        if kind is Result:  # a result may be sent capped
            self.sent.extend(self.history.shown(entry))
        elif cleared is not None:  # a plain clear: those results alone change
            self.history.clear_in_view(self.sent, self.journal.entries, cleared)
        elif kind is Shrunk:
            self.sent = self.history.view(self.journal.entries)
        else:
            self.sent.append(entry)

    def tick(self) -> Spent:
        """Bring active seconds up to now and return the usage."""
        assert self._started is not None
        self.usage.active_seconds = self._active_before + (self.clock.monotonic() - self._started)
        return self.usage

    def seconds_left(self) -> float | None:
        """Active seconds left in the budget, or None when time is not budgeted."""
        if self.budget.max_seconds is None:
            return None
        return self.budget.seconds_left(self.tick())

    def stop_clock(self) -> str | None:
        """When the run's clock fails (see `clock_problem`), a clock stopped at the run's last reading
        stands in, so that the run can still end (its result and snapshot are reckoned by the clock):
        what was wrong. None, and nothing changed, when the clock reads well."""
        if (problem := clock_problem(self.clock)) is None:
            return None
        assert self._started is not None
        if not math.isfinite(self.usage.active_seconds):  # a reading that was no number got this far
            self.usage.active_seconds = self._active_before
        self.clock = StoppedClock(self._started + (self.usage.active_seconds - self._active_before))
        return problem

    def add_usage(self, usage: Usage) -> None:
        """Count one model call (a reply, a call cut off, a verifier's judge or a summary)."""
        self.usage.add(usage)

    def begin_turn(self) -> int:
        self._turn_mark = len(self.ctx.journal.entries)
        self.usage.turns += 1
        return self.usage.turns

    def drop_unanswered_turn(self) -> None:
        """A turn cut off before its model replied is not counted (its retry is the same turn, and its
        span there says it continues: `Stopped.turn_cut`)."""
        if self._turn_mark and not any(isinstance(e, Reply) for e in self.journal.since(self._turn_mark)):
            self.usage.turns -= 1
            self.turn_cut = True
            self._turn_mark = 0

    def note_call(self, name: str, arguments: dict[str, object], text: str, is_error: bool) -> None:
        self.ctx.calls.append(CallRecord(name, dict(arguments), text, is_error))

    # -- saving -----------------------------------------------------------------------------

    def snapshot(self, kind: SnapshotKind) -> Snapshot:
        """The whole run as it stands: its journal, usage and state."""
        return self._head(kind, read_only(self.ctx.journal.entries), self.saveable_state())

    def _head(self, kind: SnapshotKind, journal: list[Entry], state: dict[str, Any]) -> Snapshot:
        ctx = self.ctx
        return Snapshot(
            run_id=ctx.run_id,
            agent=ctx.agent,
            task_type=ctx.task_type,
            kind=kind,
            segment=self.segment,
            journal=journal,
            usage=self.tick().copy(),
            state=state,
            verifier_failures=list(self.failures),
            trace_id=self.trace_id,
            span_id=self.span_id,
        )

    def state_problem(self) -> str | None:
        """What in the run's state JSON cannot hold, None when all of it can (it is saved with each
        checkpoint and snapshot)."""
        state = self.ctx.state
        if not isinstance(state, dict):  # a tool replaced ctx.state
            return (
                f"the run's state cannot be saved: ctx.state must stay a dict of JSON values, not "
                f"{type(state).__name__}; change its keys rather than replace it"
            )
        if not state or unwritable(state) is None:  # an empty state (many agents keep none) is JSON
            return None
        left_out = [k for k, v in state.items() if not _writable_item(k, v)]
        keys = ", ".join(repr(k) for k in left_out) or "its keys together (of mixed types)"
        return (
            f"the run's state cannot be saved: JSON cannot hold {keys} ({unwritable(state)}); keep JSON "
            "values in ctx.state (strings, numbers, booleans, None, lists and dicts with string keys)"
        )

    def saveable_state(self, strict: bool = False) -> dict[str, Any]:
        """The run's state as a snapshot keeps it: without the keys JSON cannot hold (see `state_problem`;
        the run ends as error when there are any). `strict`: a `ConfigError` instead when there are."""
        if not isinstance(self.ctx.state, dict):
            if strict:
                raise ConfigError(self.state_problem() or "")
            return {}
        state = dict(self.ctx.state)
        if not state or unwritable(state) is None:  # an empty state (many agents keep none) is JSON
            return state
        if strict:
            raise ConfigError(self.state_problem() or "")
        return {k: v for k, v in state.items() if isinstance(k, str) and _writable_item(k, v)}

    def extend(self, more: Extended) -> None:
        """Record more budget for the run and apply it."""
        self.record(more)
        self.budget = self.budget.plus(Extension(more.turns, more.seconds, more.tokens, more.cost_usd))

    def checkpoint(self, kind: SnapshotKind = SnapshotKind.CHECKPOINT, strict: bool = False) -> Checkpoint:
        """The entries not yet saved and the head beside them; they count as saved from now on.
        `strict`: a state JSON cannot hold is a `ConfigError`, raised before anything counts as saved."""
        state = self.saveable_state(strict)
        first, self.saved = self.saved, len(self.ctx.journal)
        return Checkpoint(self._head(kind, [], state), first, list(self.ctx.journal.since(first)))

    def result(
        self,
        reason: StopReason,
        *,
        limit: LimitKind | None = None,
        cause: StopCause | None = None,
        output: str = "",
        note: str = "",
        summary: str = "",
        verified: bool = False,
        error_type: str | None = None,
        suspension: Suspension | None = None,
        snapshot: Snapshot | None = None,
    ) -> RunResult:
        usage = self.tick()
        return RunResult(
            run_id=self.ctx.run_id,
            agent=self.ctx.agent,
            task_type=self.ctx.task_type,
            reason=reason,
            limit=limit,
            cause=cause,
            output=output,
            note=note,
            summary=summary,
            verified=verified,
            turns=usage.turns,
            usage=usage.usage,
            active_seconds=round(usage.active_seconds, 6),
            waiting_seconds=round(usage.waiting_seconds, 6),
            verifier_failures=tuple(self.failures),
            last_text=self.journal.last_text(),
            error_type=error_type,
            trace_id=self.trace_id,
            suspension=suspension,
            snapshot=snapshot,
        )

    @classmethod
    def from_snapshot(
        cls,
        snap: Snapshot,
        progress: ProgressDetector,
        clock: Clock = SYSTEM_CLOCK,
        history: HistoryPolicy | None = None,
        budget: Budget | None = None,
    ) -> RunState:
        journal = Journal(list(snap.journal))
        replay(progress, journal)
        ctx = RunContext(
            run_id=snap.run_id,
            agent=snap.agent,
            task=snap.task,
            task_type=snap.task_type,
            journal=journal,
            calls=calls_of(journal),
            state=own_state(snap.state),  # the snapshot is a value: the run changes its own copy
        )
        usage = snap.usage.copy()
        return cls(
            ctx=ctx,
            usage=usage,
            progress=progress,
            clock=clock,
            history=history or HistoryPolicy(),
            budget=extended(budget or Budget(), journal),
            segment=snap.segment + 1,
            failures=list(snap.verifier_failures),
            saved=len(journal) if snap.entries_stored else 0,  # see `Snapshot.entries_stored`
            _active_before=usage.active_seconds,
        )


def extended(budget: Budget, journal: Journal) -> Budget:
    """`budget` with every extension the journal records added."""
    for e in journal:
        if isinstance(e, Extended):
            more = bounded_extension(turns=e.turns, seconds=e.seconds, tokens=e.tokens, cost_usd=e.cost_usd)
            budget = budget.plus(more)  # an amount saved before amounts had bounds: read at its bound
    return budget


def calls_of(journal: Journal) -> list[CallRecord]:
    """The tool calls that ran, rebuilt from the journal."""
    calls: dict[str, dict[str, object]] = {}
    out: list[CallRecord] = []
    for entry in journal:
        if isinstance(entry, Reply):
            calls.update({c.id: c.arguments for c in entry.calls})
        elif isinstance(entry, Result) and entry.ran:
            out.append(CallRecord(entry.ran, dict(calls.get(entry.call_id, {})), entry.text, entry.is_error))
    return out


def _writable_item(key: Any, value: Any) -> bool:
    return isinstance(key, str) and unwritable({key: value}) is None
