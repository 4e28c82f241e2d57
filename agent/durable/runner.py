"""Durable runs: every segment checkpointed to a store, resumable from any process.

A `Runner` ties an agent `Catalog` to a `RunStore`. It creates each run's
record, hands the loop a checkpointer that writes after each tool result that
is not its turn's last and after each completed turn, and records how every
segment ended. Resuming claims the run atomically first, so of two workers
answering the same run exactly one continues it; the claim keeps the answer
and when it came, so a worker that takes the run over after a crash gives
the same answer. `sweep` ends runs whose deadline passed under their agent's
help policy; `recover` continues runs whose worker died (lease expired, or
its process is gone on this host) and runs that a shutdown cancelled.

A runner renews the lease of the runs it holds while it holds them, and
only those: a run it could not record is let go, so that recovery (here or
in another worker) continues it from its last checkpoint. Leases run out by
the store's clock, never by a worker's own (`clock` decides run time: budgets,
when a help deadline is set, audits), so workers whose clocks disagree never take
a held run from each other; on the system clock, `clock` is the store's too
(`StoreClock`): help deadlines are set and judged by it (`sweep_time`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import math
import os
import re
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agent._codec import unwritable
from agent._state import calls_of
from agent._valid import is_count, is_number, is_text
from agent._within import Calls, beside, here
from agent.agent import Agent, as_reply
from agent.audit import Audit, AuditOutcome
from agent.budget import Extension
from agent.checks import TurnVerdict
from agent.clock import SYSTEM_CLOCK, CancelSignal, Clock, check_cancel
from agent.context import RunContext
from agent.durable._behind import Behind, writer_pool
from agent.durable._ends import HeldEnds, held_ends
from agent.durable._lapse import LapseWatch
from agent.durable._storetime import StoreClock, since_boot
from agent.durable.catalog import (
    MAX_PREPARE_TIMEOUT,
    AgentEntry,
    AgentUnavailable,
    Catalog,
    State,
    build_within,
    check_prepared,
    load_catalog,
    named_as_entry,
    prepare_timeout,
    prepare_within,
    retired_model,
)
from agent.durable.store import (
    Lease,
    LeaseLost,
    NewRun,
    NotClaimable,
    Outcome,
    RunExists,
    RunRecord,
    RunStatus,
    RunStore,
    StartingNow,
    StoreError,
    UnknownRun,
)
from agent.durable.store.base import (
    ENDS_IT,
    DamagedRun,
    PrunedRunId,
    answerer,
    column_text,
    damaged_run,
    when,
)
from agent.errors import ConfigError, EndstateError, SnapshotError
from agent.hooks import CompositeHooks, NoHooks, RunHooks, RunInfo, StartedBefore, guard
from agent.journal import Answer, Approval, Denial, HumanReply, Journal, Stopped, reply_problem
from agent.result import RunResult, StopReason, Suspension
from agent.snapshot import SNAPSHOT_VERSION, Checkpoint, Snapshot, SnapshotKind
from agent.summary import summarize
from agent.text import one_line
from agent.tools import _in_daemon_thread, loggable, said
from agent.verify import Verifier, check_once, timeout_of

if TYPE_CHECKING:
    from agent.integrations._durable import ForeignAgent

log = logging.getLogger("endstate.runner")

__all__ = ["AgentEntry", "AnswerError", "Catalog", "Job", "Runner", "State", "load_catalog"]

RUN_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
RECORD_RETRIES = (0.2, 1.0, 3.0)  # seconds between attempts to record a result
ENDED_BY_OPERATOR = "ended_by_operator"  # the error type of a run `end` ended: never resumed


def operator_end_note(note: object) -> str:
    """The note of a run an operator ended (`end`), with theirs (`note`, if any text) on one line."""
    said = f": {one_line(note)}" if isinstance(note, str) and note.strip() else ""
    return f"Ended by an operator{said}. Its journal is kept for review; it is not resumed."


RENEW_RETRY_SHARE = 30  # a failed lease renewal is tried again after this share of the lease
# A lease written within this share of its length is surely still held (renewed every third of it):
# older (the worker stalled, or the store did not answer), it is confirmed before a tool starts.
LEASE_SURE = 2 / 3
AUDIT_HOLD_SECONDS = 900.0  # a worker making an audit holds it at least this long (due again if it died)
_LIVE_OWNERS: set[str] = set()  # the owner names of this process's runners
T = TypeVar("T")


class AnswerError(EndstateError):
    """The answer does not fit what the run waits for (an answer for an approval, or none)."""


class Unrecoverable(EndstateError):
    """A run that recovery took could not be continued: it was ended `error` (`result`, whose note
    says why and what continues it once fixed)."""

    def __init__(self, result: RunResult) -> None:
        super().__init__(f"it ended error ({result.error_type}): {result.note}")
        self.result = result


class NotInCatalog(AgentUnavailable, ConfigError):
    """This deployment lacks what a stored run needs to go on: its agent, its task type, or the tool of
    the call a person approved. Another deployment (a service of the same fleet with other agents, or an
    older or newer version) runs it, or a redeploy brings it back: the deployment's state, not the
    caller's mistake (an HTTP 503 on every face), and a `ConfigError` of the deployment. Nothing was
    changed."""


def from_catalog(name: str, step: str, call: Callable[[], T]) -> T:
    """`call()`, a step of catalog entry `name`; what it raises (but Endstate's own errors, which
    say what is wrong already) becomes `AgentUnavailable`, not a traceback or an HTTP 500. A
    `SystemExit` too (a config read with argparse): it is the entry's failure, not a request to end
    the process, and left to rise it stopped a recovery at that run, every time."""
    try:
        return call()
    except EndstateError:
        raise
    except (Exception, SystemExit) as exc:
        raise AgentUnavailable(
            f"agent {name!r} could not be set up: its catalog entry's {step} raised "
            f"{type(exc).__name__}: {said(exc)}; nothing was changed"
        ) from exc


# -- the runner -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Hold:
    """A run whose lease a runner renews: the jobs that hold it (a run claimed again as its last
    segment is recorded is held by both until that segment's job lets go of it), and when its lease
    was last written (`since_boot`)."""

    jobs: int
    renewed: float


@dataclass(frozen=True)
class _Start:
    """A start, checked: what its catalog calls and the store's record are made from."""

    agent: str
    task: str
    task_type: str | None
    state: State
    run_id: str
    entry: AgentEntry
    hold: contextlib.ExitStack  # the store's hold on a given run id (`Runner._starting`), until answered


@dataclass(frozen=True)
class _Made:
    """What a start's catalog calls made: the state `prepare` gave, and the agent `build` gave."""

    state: State
    built: Agent | ForeignAgent


@dataclass(frozen=True)
class _Taken:
    """A run claimed and held by this runner, to resume: where a failure gives it back, the budget
    it was given (`more`), the snapshot read as it was claimed (`known`)."""

    record: RunRecord
    release_to: RunStatus | None
    more: Extension | None = None
    known: Snapshot | None = None


@dataclass(frozen=True)
class Job:
    """A run this runner holds, ready to drive: its agent and the segment's coroutine."""

    run_id: str
    agent: Agent | ForeignAgent  # a foreign agent: another framework's run (agent.integrations)
    record: RunRecord
    segment: Callable[[CancelSignal], Coroutine[Any, Any, RunResult]]
    release_to: RunStatus | None = None  # where a failed start gives the run back
    recovering: bool = False  # nobody asked for it: a run that cannot go on ends as error instead


def check_start_text(task: object, task_type: object) -> None:
    """A start's task is text, and so is its task type when given: an empty one (a script's unset
    variable) ran under the agent's own task type, unsaid."""
    if not is_text(task):
        raise ConfigError("task must be a non-empty string")
    if task_type is not None and not is_text(task_type):
        raise ConfigError(
            "the task type must not be empty: name one the agent runs, or leave it out for its own"
        )


def check_given_id(run_id: object) -> None:
    """Refuse an empty run id, as the CLI and the API refuse one: taken as no id, each retry of a caller
    whose key went missing (`run_id=os.environ.get("KEY", "")`) would start another run."""
    if run_id == "":
        raise ConfigError("run_id must not be empty: give an id, or leave it out (None) for a new one")


def checked_answerer(by: object) -> str | None:
    """The name an answer is given under (None: none), or `ConfigError` saying what is wrong."""
    try:
        return answerer(by)
    except ValueError as exc:
        raise ConfigError(f"{exc}; nothing was changed") from None


def given_reason(reason: str | None) -> str | None:
    """A denial's reason as every face keeps it: None for a blank one (spaces), which is no reason (a
    reason that is not text is left for `check_answer` to refuse)."""
    return None if isinstance(reason, str) and not reason.strip() else reason


def answered(record: RunRecord) -> str:
    """` (answered by NAME at TIME: what)` for a refusal, '' when no answer was recorded."""
    return f" ({record.answered_note})" if record.answered_note else ""


def not_as_read(current: RunRecord, segments: int) -> str:
    """Why an answer for `segments` (the count its asker read) is refused: the run moved on since, to
    its next question or to an end, or the count was never the run's."""
    at = f"segment {current.segments}, not {segments}"
    if segments > current.segments:
        return (
            f"run {current.run_id} is at {at} (it never was at {segments}); nothing was changed. Send the "
            f"`segments` that /pending or /runs/{current.run_id} shows"
        )
    if current.answered_note:
        at += f"; {current.answered_note}"
    if current.status is not RunStatus.WAITING:
        return (
            f"run {current.run_id} moved on ({at}) since it was read and is {current.status}, not waiting "
            "for an answer; nothing was changed"
        )
    return (
        f"run {current.run_id} moved on ({at}) since it was read; nothing was changed: read the run "
        "again and answer its current question"
    )


class Runner:
    """Runs agents durably against a store. Safe to use from one event loop at a time."""

    def __init__(
        self,
        store: RunStore,
        catalog: Catalog,
        *,
        hooks: RunHooks | None = None,
        lease_seconds: float = 30.0,
        owner: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
        on_audit: Callable[[str, str, str], None] | None = None,
        checkpoints_on_loop: bool = True,
        prepare_seconds: float | None = None,
    ) -> None:
        """`prepare_seconds`: how long a catalog entry's `prepare` may take when a run starts (None:
        `$ENDSTATE_PREPARE_TIMEOUT`, else 300); past it the start fails `PrepareHangs`, nothing stored."""
        if isinstance(store, str | os.PathLike):
            raise ConfigError(
                f"Runner takes an open store, not its URL: Runner(open_store({str(store)!r}), catalog)"
            )
        if not isinstance(catalog, Catalog):
            raise ConfigError(
                "Runner takes a Catalog (catalog.register(name, lambda state: agent)), "
                f"not {type(catalog).__name__}"
            )
        if not _a_lease(lease_seconds):
            raise ConfigError(
                f"lease_seconds must be a finite number of seconds above 0 (how long a run stays this "
                f"runner's unrenewed; 30 by default), not {lease_seconds!r}"
            )
        self.prepare_seconds = prepare_timeout() if prepare_seconds is None else prepare_seconds
        if not (is_number(self.prepare_seconds) and 0 < self.prepare_seconds <= MAX_PREPARE_TIMEOUT):
            raise ConfigError(
                f"prepare_seconds must be a number of seconds above 0 and at most {MAX_PREPARE_TIMEOUT:g} "
                f"(how long a catalog entry's prepare may take), not {prepare_seconds!r}"
            )
        self.store = store
        # on the system clock, the store's time (deadlines are set and judged alike on every host)
        self.clock: Clock = StoreClock(store) if clock is SYSTEM_CLOCK else clock
        self.on_audit = on_audit  # told (agent, task type, outcome) of each audit made
        self.catalog = catalog
        self.hooks = hooks
        self.lease_seconds = lease_seconds
        # False in a server: each checkpoint lands on the writer thread, never on the event loop (a
        # thread hop at a barrier the writer has not reached yet, and no sending ahead; see `_behind`)
        self.checkpoints_on_loop = checkpoints_on_loop
        self.owner = owner or f"{machine()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        _LIVE_OWNERS.add(self.owner)
        self.shutting_down = threading.Event()
        self._held: dict[str, _Hold] = {}  # runs whose lease this runner renews
        self._held_lock = threading.Lock()  # recovery may run in a worker thread (and `_writer`)
        self._active: set[str] = set()
        self._starting_ids: set[str] = set()  # run ids whose start is under way here (see `_start_of`)
        self._no_builds = threading.local()  # set on a thread whose calls build no agent (`_unbuilt`)
        # the tasks `spawn` made, until each ends: a run resumed as its last segment's task finishes
        # (answered the moment that segment was recorded) has two at once
        self._spawned: set[asyncio.Task[RunResult | None]] = set()
        self._segments: dict[str, asyncio.Task[Any]] = {}  # the tasks driving a segment, by run
        self._loop: asyncio.AbstractEventLoop | None = None
        self._beat: asyncio.TimerHandle | None = None  # the next heartbeat (see `_ensure_heartbeat`)
        self._beat_loop: asyncio.AbstractEventLoop | None = None
        self._renewals: set[asyncio.Task[None]] = set()  # heartbeats being written (kept referenced)
        self._pool: ThreadPoolExecutor | None = None  # the thread that writes checkpoints and records
        self._beats: ThreadPoolExecutor | None = None  # the thread that renews leases (see `_renew`)
        self._lease: Lease | None = None  # see `lease`
        # (agent, task type or None) whose runs this runner left for others, and said so
        self._left: set[tuple[str, str | None]] = set()
        self._own_types: dict[str, str] = {}  # each agent's own task type, as its last build here gave it
        self._newer_said: set[int] = set()  # snapshot versions too new for it, whose runs it left
        self._lapses = LapseWatch(lambda: self.clock.monotonic())  # leases seen run out, since when

    def lease(self) -> Lease:
        """This runner's lease (one value, made again only when `owner` or `lease_seconds` change: the
        writer asks for it at every checkpoint)."""
        lease = self._lease
        if lease is None or lease.owner != self.owner or lease.seconds != self.lease_seconds:
            lease = self._lease = Lease(self.owner, self.lease_seconds)
        return lease

    # -- starting ------------------------------------------------------

    def begin(
        self,
        agent: str,
        task: str,
        *,
        task_type: str | None = None,
        state: State | None = None,
        run_id: str | None = None,
    ) -> Job:
        """Create a run's record, held by this runner; `drive` the job to run it."""
        start = self._start_of(agent, task, task_type, state, run_id)
        try:
            made = self._made(start)
            try:
                return self._created(start, made)
            except BaseException as exc:
                self._unmade(start, made, exc)
                raise
        finally:
            self._started(start)

    async def abegin(self, agent: str, task: str, *, calls: Calls = here, **options: Any) -> Job:
        """`begin`, its catalog's `prepare` and `build` on a thread of their own (`beside`), and its store
        calls through `calls` (a service's one thread for them; by default here, on the loop): one
        agent's prepare or build that takes minutes holds no other start, answer or sweep."""
        checked = asyncio.ensure_future(calls(self._start_of, agent, task, **options))
        try:
            start: _Start = await asyncio.shield(checked)
        except asyncio.CancelledError:  # its run id is let go once checked, not kept as starting here
            checked.add_done_callback(self._never_started)
            raise
        try:
            let_go = functools.partial(self._let_made_go, start)
            made = await beside(functools.partial(self._made, start), f"endstate-start {agent[:60]}", let_go)
            try:
                return await self._held_job(calls(self._created, start, made))
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                await beside(functools.partial(self._unmade, start, made, exc), "endstate-cleanup")
                raise
        finally:
            self._started(start)

    def _start_of(
        self,
        agent: str,
        task: str,
        task_type: str | None = None,
        state: State | None = None,
        run_id: str | None = None,
    ) -> _Start:
        """A start's checks, before its catalog's `prepare`; its run id is then this runner's to start
        (`_started` lets it go): a second start of that id meanwhile is refused (`RunExists`), not
        prepared beside the first (one `prepare` may build the run's world over the other's)."""
        check_start_text(task, task_type)
        check_given_id(run_id)
        given, run_id = run_id is not None, run_id or uuid.uuid4().hex
        if not RUN_ID.fullmatch(run_id):
            raise ConfigError(
                f"run id {run_id!r} must be 1-64 ASCII letters, digits, '_', '-' or '.', "
                "not starting with '.'"
            )
        entry = self.catalog.entry(agent)
        with self._held_lock:
            if run_id in self._starting_ids:
                raise StartingNow(
                    f"a run with id {run_id!r} is being started here now (its catalog's prepare runs); "
                    "nothing was changed. Send the same request again once that start has been answered"
                )
            self._starting_ids.add(run_id)
        hold = contextlib.ExitStack()
        start = _Start(agent, task, task_type, dict(state or {}), run_id, entry, hold)
        try:  # no other process's start of this id prepares meanwhile either (the store's hold)
            hold.enter_context(self._starting(run_id if given else None))
            if given and self.store.get(run_id) is not None:  # before `prepare`, which may build its world
                raise RunExists(f"a run with id {run_id!r} already exists; pick another id")
            check_state(state or {})
        except BaseException:
            self._started(start)
            raise
        return start

    def _starting(self, run_id: str | None) -> contextlib.AbstractContextManager[object]:
        """The store's hold on a given run id while its start prepares and stores it (PostgreSQL's
        `starting`: another process starting the same id is refused before its `prepare`, which may
        clone a repository or create resources; a store without one: none, the store refuses the
        second at its `create`). A random id needs none."""
        starting = getattr(self.store, "starting", None) if run_id is not None else None
        return starting(run_id) if starting is not None else contextlib.nullcontext()

    def _started(self, start: _Start) -> None:
        """The start is answered: its run id is let go, here and on the store."""
        with self._held_lock:
            self._starting_ids.discard(start.run_id)
        start.hold.close()

    def _never_started(self, checked: asyncio.Future[_Start]) -> None:
        if not checked.cancelled() and checked.exception() is None:
            self._started(checked.result())

    def _made(self, start: _Start) -> _Made:
        """The start's catalog calls: `prepare` within its deadline, then `build` (waited for). What
        `prepare` made is let go (`cleanup`) when the build fails."""
        entry, state = start.entry, start.state
        if entry.prepare is not None:  # within its deadline: one that hangs holds no caller for ever
            prepare = functools.partial(
                prepare_within, start.agent, entry, state, start.run_id, self.prepare_seconds
            )
            state = from_catalog(start.agent, "prepare", prepare)
        try:
            if entry.prepare is not None:
                check_prepared(start.agent, state)  # what `prepare` added; its world is let go
            return _Made(state, self._agent(start.agent, state, start.run_id, start.task_type))
        except BaseException:
            if entry.cleanup is not None and isinstance(state, dict):  # a non-state: nothing to hand it
                entry.cleanup(state)
            raise

    def _created(self, start: _Start, made: _Made) -> Job:
        """The start's run stored, held by this runner, and its job."""
        built, state, run_id, task = made.built, made.state, start.run_id, start.task
        new = NewRun(run_id, start.agent, task, built.task_type, state)
        record = self._hold(self.store.create(new, self.lease(), self.clock.time()))

        def segment(cancel: CancelSignal) -> Coroutine[Any, Any, RunResult]:
            return built.arun(task, run_id=run_id, state=state, cancel=cancel)

        return Job(run_id, built, record, segment)

    def _unmade(self, start: _Start, made: _Made, exc: BaseException) -> None:
        """Let go of what a start's `prepare` made when its run was not stored: not when the id was
        stored by another worker meanwhile (its world is not this call's), unless it was pruned."""
        if isinstance(exc, RunExists) and not isinstance(exc, PrunedRunId):
            return
        if start.entry.cleanup is not None:
            start.entry.cleanup(made.state)

    def _let_made_go(self, start: _Start, made: _Made) -> None:
        """A start cut off (a shutdown) while its catalog calls ran: what they made is no run's."""
        log.warning("agent %r: a start (run %s) was cut off while it was prepared", start.agent, start.run_id)
        if start.entry.cleanup is not None:
            start.entry.cleanup(made.state)

    async def _held_job(self, making: Awaitable[Job]) -> Job:
        """The job `making` gives (a run stored or claimed on the store's thread). A caller cut off
        meanwhile (a shutdown) leaves it to end there: its run is then let go, for recovery to go on
        with (its lease lapses), never held and renewed by this runner with nothing driving it."""
        future = asyncio.ensure_future(making)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            future.add_done_callback(self._undriven)
            raise

    def _undriven(self, made: asyncio.Future[Job]) -> None:
        if not made.cancelled() and made.exception() is None:
            self._let_go(made.result().run_id, None)

    def _unbuilt(self, call: Callable[..., T], *args: Any) -> T:
        """`call(*args)` building no agent only to learn its own task type (on the store's thread:
        `_learn` did it beside, first); one not learned is then taken as not known (`runs_task_type`)."""
        self._no_builds.on = True
        try:
            return call(*args)
        finally:
            self._no_builds.on = False

    async def _learn(self, records: list[RunRecord | None] | list[RunRecord]) -> None:
        """Learn the own task type of the agents of `records` that `runs_task_type` asks for, each built
        on a thread of its own within the prepare deadline (`_own_task_type`), not on the store's."""
        for record in records:
            if record is None or not self.knows(record.agent) or record.agent in self._own_types:
                continue
            if record.task_type not in self.catalog.entries[record.agent].task_types:
                learn = functools.partial(self._own_task_type, record.agent, record.state)
                await beside(learn, f"endstate-build {record.agent[:60]}")

    async def start(self, agent: str, task: str, **options: Any) -> RunResult:
        """Start a run and drive it until it ends or suspends (its catalog calls off the loop: `abegin`)."""
        return await self.drive(await self.abegin(agent, task, **options))

    # -- resuming ------------------------------------------------------

    def claim(
        self,
        run_id: str,
        answer: HumanReply | str | None = None,
        approved: bool | None = None,
        more: Extension | None = None,
        segments: int | None = None,
        by: str | None = None,
    ) -> Job:
        """Take a waiting or cancelled run for this runner; exactly one caller wins.

        A question needs an `Answer("...")` (or `answer` as text); a pending tool
        call an `Approval()` or a `Denial("why")` (or `approved`, with `answer` as
        a denial's reason); a cancelled run needs neither (it keeps
        an answer a shutdown cut off). The loser of a race, an answer after the
        deadline, or a run that waits for nothing gets `NotClaimable`; so does an
        answer given for `segments` (the run's count as its asker read it) once the
        run has moved on to another question or call. `by` names who answers (kept on the run
        as its last answer; None: no name), and is told to whoever answers after.
        """
        taken = self._taken(run_id, answer, approved, more, segments, by)
        return self._resume_job(taken.record, taken.release_to, more=taken.more, known=taken.known)

    async def aclaim(
        self,
        run_id: str,
        answer: HumanReply | str | None = None,
        approved: bool | None = None,
        more: Extension | None = None,
        segments: int | None = None,
        by: str | None = None,
        *,
        calls: Calls = here,
    ) -> Job:
        """`claim`, its catalog's `build` on a thread of its own (`beside`), its store calls through
        `calls` (see `abegin`): one agent's build that takes minutes holds no other answer or start."""
        # an agent's own task type may be asked (a run id that is no text is refused by `_taken`)
        if isinstance(run_id, str) and set(self.catalog.names()) - set(self._own_types):
            await self._learn([await calls(self.store.get, run_id)])
        taken = await calls(self._unbuilt, self._taken, run_id, answer, approved, more, segments, by)
        try:
            build = functools.partial(self._rebuilt, taken.record)
            agent = await beside(build, f"endstate-claim {taken.record.agent[:60]}")
        except asyncio.CancelledError:  # its lease lapses: recovery goes on with the reply it took
            self._let_go(run_id, None)
            raise
        except BaseException as exc:
            await calls(self._not_resumed, taken.record, taken.release_to, False, exc)
            raise
        resumed = functools.partial(self._resumed, taken.record, agent, taken.release_to)
        return await self._held_job(calls(resumed, more=taken.more, known=taken.known))

    def _taken(
        self,
        run_id: str,
        answer: HumanReply | str | None,
        approved: bool | None,
        more: Extension | None,
        segments: int | None,
        by: str | None,
    ) -> _Taken:
        """`claim`'s checks and the store's claim: the run, held by this runner."""
        answer, approved = claimed_reply(answer, approved, segments)
        by = checked_answerer(by)
        current = self._stored(run_id)
        self._check_known(current)
        if segments is not None and segments != current.segments:
            raise NotClaimable(not_as_read(current, segments))
        lease, now = self.lease(), self.clock.time()
        if more is not None:  # more budget for a run that stopped at a limit
            if current.stop_reason is not StopReason.LIMIT:
                raise NotClaimable(f"run {run_id} did not stop at a limit; nothing was changed")
            if not current.snapshot_json:  # ended by a release that kept no finished run's snapshot
                raise NotClaimable(
                    f"run {run_id} stopped at a limit, but the Endstate that ran it kept no snapshot of a "
                    "finished run, so there is nothing to continue from: start the task again with a "
                    "larger budget; nothing was changed"
                )
            if answer is not None or approved is not None:  # it asked nothing: the reply would go unread
                raise NotClaimable(
                    f"run {run_id} stopped at a limit and waits for no answer or approval: give it more "
                    "budget without one; nothing was changed"
                )
            record = self.store.claim(run_id, (RunStatus.FINISHED,), lease, now)
            return _Taken(self._hold(record), RunStatus.FINISHED, more=more)
        if current.status is RunStatus.WAITING:  # the question read, answered before its deadline
            check_answer(current, answer, approved)
            read = self._check_pending(current)
            check_foreign_saved(read)
            waiting, segment, now = (RunStatus.WAITING,), current.segments, self.sweep_time()  # in time?
            record = self.store.claim(
                run_id, waiting, lease, now, answer, approved, segment, expired=False, by=by
            )
            if answer is not None:  # as written: the answer's text column keeps NUL and lone surrogates
                record = dataclasses.replace(record, answer=answer)  # as U+FFFD (recovery reads that)
            # Claimed in the segment it was read in: no entry was added since, so it is read once.
            return _Taken(self._hold(record), current.status, known=read)
        if answer is not None or approved is not None:
            raise NotClaimable(
                f"run {run_id} is {current.status}, not waiting for an answer{answered(current)}; nothing "
                f"was changed{self._running_hint(current)}"
            )
        if current.status is RunStatus.CANCELLED or unresumable(current):
            record = self.store.claim(run_id, (current.status,), lease, now)
        else:
            raise NotClaimable(not_resumable(current) + self._running_hint(current))
        return _Taken(self._hold(record), current.status)

    def _stored(self, run_id: str) -> RunRecord:
        """The run as stored; `UnknownRun` when there is none, or when `run_id` is not text (no run's is:
        a store would fail on it in a way of its own)."""
        if not isinstance(run_id, str):
            kind = type(run_id).__name__
            raise UnknownRun(f"a run id is text, not {kind} ({run_id!r}); nothing was changed")
        current = self.store.get(run_id)
        if current is None:
            raise UnknownRun(f"no run with id {run_id!r}")
        return current

    def _running_hint(self, record: RunRecord) -> str:
        """For a running run, what continues it: recovery, when its worker is gone (a crash), else the
        live worker that drives it; '' for a run that does not run."""
        if record.status is not RunStatus.RUNNING:
            return ""
        if worker_gone(record, self.store.now()):
            return (
                ". Its worker is gone (its process ended, or its lease ran out): recovery continues it "
                "from its last checkpoint (`endstate recover`, or the next sweep of a service on this store)"
            )
        return f". A live worker ({record.owner}) drives it: wait until it ends or asks again"

    def _check_known(self, record: RunRecord) -> None:
        """Refuse, before any claim, a run whose agent this catalog lacks, or whose task type its agent
        does not run here: the run stays as it is for a process whose catalog runs it (its deadline, if
        any, still holds)."""
        if not self.knows(record.agent):
            raise NotInCatalog(
                f"run {record.run_id} is a run of agent {record.agent!r}, which this catalog does not have "
                f"(it has: {', '.join(self.catalog.names()) or 'none'}); nothing was changed. Answer or "
                "resume it where that agent is deployed (a service, or --catalog, that has it); if a deploy "
                f"renamed it, register its entry under {record.agent!r} too (its runs keep the name they "
                f"started with); if no deployment has it any more, `endstate end {record.run_id}` ends it"
            )
        if not self.runs_task_type(record):
            raise NotInCatalog(
                f"run {record.run_id} has task type {record.task_type!r}, which agent {record.agent!r} does "
                f"not run here (its task types: {self._task_types_of(record.agent)}); nothing was changed. "
                "Answer or resume it where the agent runs that task type (a service, or --catalog, whose "
                f"entry has it); if none does any more, add {record.task_type!r} to the entry's task_types "
                f"again and deploy, or `endstate end {record.run_id}` ends it"
            )

    def _check_pending(self, record: RunRecord) -> Snapshot | None:
        """The call a person approves is exactly the call that runs: the store must agree with itself.
        Returns the snapshot it read, for the resume."""
        snap = self.store.snapshot(record.run_id)
        waiting = snap.suspension if snap else None
        if _agrees(waiting, record):
            return snap
        now = self.store.get(record.run_id)
        if now is None or (now.status, now.segments) != (record.status, record.segments):
            return snap  # it moved on meanwhile (another answer won): the claim says so
        raise DamagedRun(
            f"run {record.run_id}: the stored question or pending call does not match the run's "
            f"journal; nothing was changed. {damaged_run(record.run_id)}"
        )

    async def resume(
        self,
        run_id: str,
        answer: HumanReply | str | None = None,
        approved: bool | None = None,
        more: Extension | None = None,
        by: str | None = None,
    ) -> RunResult:
        """Claim a run and continue it here until it ends or suspends again (`by`: who answers); its
        catalog's build off the loop (`aclaim`)."""
        return await self.drive(await self.aclaim(run_id, answer, approved, more, by=by))

    def _resume_job(
        self,
        record: RunRecord,
        release_to: RunStatus | None,
        *,
        recovering: bool = False,
        more: Extension | None = None,
        known: Snapshot | None = None,
    ) -> Job:
        """Continue a held run from its snapshot (`known`: read already in the claimed segment),
        with the answer it was claimed with.

        A run that cannot be rebuilt is given back as it was; in recovery (nobody asked
        for it) it ends as `error` instead, keeping its snapshot for `endstate resume`.
        """
        try:
            agent = self._rebuilt(record)
        except BaseException as exc:
            self._not_resumed(record, release_to, recovering, exc)
            raise
        return self._resumed(record, agent, release_to, recovering=recovering, more=more, known=known)

    def _rebuilt(self, record: RunRecord) -> Agent | ForeignAgent:
        """The held run's agent, from its catalog entry, within the prepare deadline: in recovery, and for
        a claim too, which holds the run meanwhile (a redeployed build that hung held it, renewed, for
        ever: no answer, resume or `end` could take it until the process ended)."""
        r = record
        return self._agent(r.agent, r.state, r.run_id, r.task_type, saved=True, swept=True)

    def _not_resumed(
        self, record: RunRecord, release_to: RunStatus | None, recovering: bool, exc: BaseException
    ) -> None:
        """A held run that cannot go on (`exc`): given back as it was (the caller raises `exc`), keeping
        why the reply it was claimed with was not taken (a redeploy dropped the approved call's tool, or
        broke the agent's build: the claim kept that reply as the run's last answer, which would else read
        as taken); in recovery ended as error, saying why (`Unrecoverable`)."""
        if recovering and isinstance(exc, Exception):
            raise Unrecoverable(self._end_unresumable(record, exc)) from exc
        replied = record.answer is not None or record.approved is not None  # kept as its last answer
        why = refused_why(record, release_to, exc) if replied and isinstance(exc, Exception) else None
        self._let_go(record.run_id, release_to, why)

    def _resumed(
        self,
        record: RunRecord,
        agent: Agent | ForeignAgent,
        release_to: RunStatus | None,
        *,
        recovering: bool = False,
        more: Extension | None = None,
        known: Snapshot | None = None,
    ) -> Job:
        """The held run's job with its rebuilt `agent` (see `_resume_job`)."""
        try:
            check_approved_tool(agent, record)
            check_model_served(agent, record)
            snapshot = self._stored_whole(record, known or self.store.snapshot(record.run_id))
            if more is not None and snapshot is not None:  # refused now, not in the background
                check_extensible(agent, snapshot, more)
        except BaseException as exc:
            self._not_resumed(record, release_to, recovering, exc)
            raise
        if snapshot is None:  # died before its first checkpoint: start the task again
            agent = _started_before(agent, record)

            def again(cancel: CancelSignal) -> Coroutine[Any, Any, RunResult]:
                return agent.arun(record.task, run_id=record.run_id, state=record.state, cancel=cancel)

            return Job(record.run_id, agent, record, again, release_to, recovering)
        segment = self._segment_of(agent, record, snapshot, more)
        return Job(record.run_id, agent, record, segment, release_to, recovering)

    def _stored_whole(self, record: RunRecord, snap: Snapshot | None) -> Snapshot | None:
        """`snap` of a run this runner holds, its journal in the store: one a version-1 worker wrote
        whole (a rolling deploy over the store's upgrade) is upgraded in place, as the upgrade does."""
        if snap is None or snap.entries_stored:
            return snap
        self.store.store_whole(record.run_id, snap, self.lease(), self.clock.time())
        return dataclasses.replace(snap, entries_stored=True)

    def _segment_of(
        self, agent: Agent | ForeignAgent, record: RunRecord, snap: Snapshot, more: Extension | None
    ) -> Callable[[CancelSignal], Coroutine[Any, Any, RunResult]]:
        """How a held run goes on from its snapshot: with the answer it was claimed with (the wait
        ended when that came); expired, when a sweep claimed it past its deadline and its worker died
        (no answer came: only a sweep takes a waiting run without one), on any worker's clock; or,
        when its journal ends with its stop already, by recording that stop (`ended_result`)."""
        if more is None and (ended := ended_result(record, snap, agent)) is not None:
            log.warning(
                "run %s: its journal ends with its %s stop, which its worker did not record (it died "
                "first, or before going on with more budget): that stop is recorded, and nothing runs again",
                record.run_id,
                ended.reason,
            )

            async def recorded(cancel: CancelSignal) -> RunResult:
                return ended

            return recorded
        waits = snap.suspension
        if waits is not None and record.answer is None and record.approved is None and more is None:
            swept = max(self.clock.time(), waits.deadline)  # this worker's clock may be behind the sweeper's
            return lambda cancel: agent.aexpire(snap, now=swept, cancel=cancel)
        if waits is None:  # a reply the record kept is in the journal already, or was never asked for
            return lambda cancel: agent.aresume(snap, more=more, cancel=cancel)
        return lambda cancel: agent.aresume(
            snap, record.answer, approved=record.approved, more=more, cancel=cancel, now=record.answered_at
        )

    # -- deadlines and recovery -------------------------------------------

    async def sweep(self, now: float | None = None) -> list[RunResult]:
        """End (or continue, per the agent's help policy) every run whose deadline passed."""
        return await self._drive_each(await self.aexpiry_jobs(now), "expired")

    def expiry_jobs(self, now: float | None = None) -> list[Job]:
        """Claim every waiting run whose deadline passed; the jobs apply the help policy."""
        now = self.sweep_time() if now is None else now
        jobs = []
        for stale in self.ours(self.store.expired(now)):
            try:  # one run the store fails on never drops the jobs of those claimed before it
                if (job := self._claim_expired(stale, now)) is not None:
                    jobs.append(job)
            except Exception as exc:
                log.error(
                    "run %s cannot be expired now; the next sweep tries again: %s", stale.run_id, _why(exc)
                )
        return jobs

    async def aexpiry_jobs(self, now: float | None = None, *, calls: Calls = here) -> list[Job]:
        """`expiry_jobs`, each run's agent built on a thread of its own (`beside`), its store calls
        through `calls` (see `abegin`): one agent's hung build holds no request meanwhile."""
        now = await calls(self.sweep_time) if now is None else now
        expired = await calls(self.store.expired, now)
        await self._learn(expired)
        jobs = []
        for stale in await calls(self._unbuilt, self.ours, expired):
            try:  # one run the store fails on never drops the jobs of those claimed before it
                held = await calls(self._claimed_expired, stale, now)
                if held is not None and (job := await self._expiring(held, now, calls)) is not None:
                    jobs.append(job)
            except Exception as exc:
                log.error(
                    "run %s cannot be expired now; the next sweep tries again: %s", stale.run_id, _why(exc)
                )
        return jobs

    async def _expiring(self, held: RunRecord, now: float, calls: Calls) -> Job | None:
        """The job of a run claimed past its deadline (see `_claim_expired`)."""
        try:
            agent = await self._rebuilt_beside(held)
            return await self._held_job(calls(self._expiry_job, held, now, agent))
        except Exception as exc:  # its deadline passed and it cannot be rebuilt: it ends, saying why
            ended = Unrecoverable(await calls(self._end_unresumable, held, exc))
            log.error("run %s cannot be expired here: %s", held.run_id, ended)
        return None

    async def _rebuilt_beside(self, held: RunRecord) -> Agent | ForeignAgent:
        """`_rebuilt` on a thread of its own; a caller cut off meanwhile lets the run go (its lease
        lapses: recovery goes on with it, and with the reply it was claimed with)."""
        try:
            build = functools.partial(self._rebuilt, held)
            return await beside(build, f"endstate-build {held.agent[:60]}")
        except asyncio.CancelledError:
            self._let_go(held.run_id, None)
            raise

    def sweep_time(self) -> float:
        """The time deadlines are judged by: on the system clock, the store's (`StoreClock`: every
        service of a fleet sweeps, so one whose clock ran ahead would cut every person's wait short,
        and refuse their answers as late); a clock given to the runner (a test's, a simulation's) is
        its own."""
        return self.clock.time()

    def _claim_expired(self, stale: RunRecord, now: float) -> Job | None:
        """Claim one run past its deadline: its job, or None when someone else got it first."""
        record = self._claimed_expired(stale, now)
        if record is None:
            return None
        try:
            return self._expiry_job(record, now, self._rebuilt(record))
        except Exception as exc:  # its deadline passed and it cannot be rebuilt: it ends, saying why
            ended = Unrecoverable(self._end_unresumable(record, exc))
            log.error("run %s cannot be expired here: %s", record.run_id, ended)
        return None

    def _claimed_expired(self, stale: RunRecord, now: float) -> RunRecord | None:
        """One run past its deadline claimed and held; None when someone else got it first."""
        try:  # the same question, still past its deadline: not one asked since the listing
            waiting = (RunStatus.WAITING,)
            record = self.store.claim(
                stale.run_id, waiting, self.lease(), now, segments=stale.segments, expired=True
            )
        except NotClaimable:
            return None  # answered or swept by someone else meanwhile
        return self._hold(record)

    def _expiry_job(self, record: RunRecord, now: float, agent: Agent | ForeignAgent) -> Job:
        snapshot = self._stored_whole(record, self.store.snapshot(record.run_id))
        if snapshot is None:
            raise StoreError(f"run {record.run_id} waits but has no snapshot")
        snap: Snapshot = snapshot

        def segment(cancel: CancelSignal) -> Coroutine[Any, Any, RunResult]:
            return agent.aexpire(snap, now=now, cancel=cancel)  # a policy that resumes may run on

        return Job(record.run_id, agent, record, segment, RunStatus.WAITING)

    def recoverable(self, watched: bool = False) -> list[RunRecord]:
        """Runs whose worker died (or that this runner let go), and runs a shutdown cancelled: of the
        agents this catalog has, saved by a version of Endstate that this one reads (`ours`).

        `watched` (a service's sweep): a run whose lease ran out by the store's clock counts only
        once this runner has itself seen that lease unrenewed for one whole lease of its own
        (`_lapse`), so a clock's step never takes a run from a live worker; a worker of this host
        whose process is gone counts at once."""
        return self.ours(self._left_behind(watched))

    def _left_behind(self, watched: bool) -> list[RunRecord]:
        """`recoverable`'s runs, of any agent and version (before `ours`)."""
        running = self.store.list_runs(RunStatus.RUNNING, limit=None)
        held, now = self.held(), self.store.now()  # leases run out by the store's clock
        gone = [r for r in running if r.run_id not in held and worker_gone(r, now)]
        if watched:
            seen = self._lapses.unrenewed(running, self.lease_seconds)
            gone = [r for r in gone if r.run_id in seen or process_gone(r)]
        return gone + self.store.interrupted()

    def knows(self, agent: str) -> bool:
        """True when this runner's catalog has the agent `agent`."""
        return agent in self.catalog.entries

    def runs_task_type(self, record: RunRecord) -> bool:
        """True when the run's agent (which this catalog has) runs the run's task type here: the agent's
        own, or one of its entry's `task_types`. True too when that cannot be told (the agent's build
        fails: claiming the run says why)."""
        if record.task_type in self.catalog.entries[record.agent].task_types:
            return True
        own = self._own_task_type(record.agent, record.state)
        return own is None or own == record.task_type

    def _own_task_type(self, agent: str, state: State) -> str | None:
        """The task type `agent`'s build gives, as its last build here gave it (built once for this
        when it was not built yet, within the prepare deadline: `build_within`); None when its build
        fails or hangs."""
        if agent not in self._own_types:
            if getattr(self._no_builds, "on", False):  # learned beside, before this call (`_learn`)
                return None
            try:
                entry = self.catalog.entries[agent]
                own = build_within(agent, entry, state, self.prepare_seconds).task_type
            except (Exception, SystemExit):  # (an argparse config: see `from_catalog`)
                return None
            self._own_types[agent] = own
        return self._own_types[agent]

    def _task_types_of(self, agent: str) -> str:
        """The task types `agent` runs here, for a message."""
        own = self._own_types.get(agent)
        return ", ".join(sorted({*self.catalog.entries[agent].task_types, *([own] if own else [])}))

    def ours(self, records: list[RunRecord]) -> list[RunRecord]:
        """The runs of `records` that this runner's catalog runs (their agent, and their task type)
        and that a version of Endstate this one reads saved. The others are left, untouched, for a
        runner whose catalog runs them (services of one fleet may share a store and run different
        agents, and an old and a new version of one agent during a deploy): a runner never ends a run
        it cannot continue while another could."""
        return [r for r in records if self._runs(r) and not self._written_by_newer(r)]

    def _runs(self, record: RunRecord) -> bool:
        """True when this catalog runs the run; else it is left, and that is said once per agent (or
        per task type of an agent it has), not at every sweep."""
        agent, task_type, run_id = record.agent, record.task_type, record.run_id
        if not self.knows(agent):
            names = ", ".join(self.catalog.names()) or "none"
            why = "runs of agent %r (run %s, and any others) are left for a runner whose catalog has that "
            self._say_left((agent, None), why + "agent: this one's has %s", agent, run_id, names)
            return False
        if not self.runs_task_type(record):
            why = "runs of agent %r with task type %r (run %s, and any others) are left for a runner whose "
            why += "catalog entry runs that task type: this one runs %s"
            self._say_left((agent, task_type), why, agent, task_type, run_id, self._task_types_of(agent))
            return False
        return True

    def _say_left(self, kind: tuple[str, str | None], why: str, *args: str) -> None:
        """Warn that runs of `kind` (an agent, and a task type or None) are left, the first time only."""
        if kind not in self._left:
            self._left.add(kind)
            log.warning(why + ". If no runner has it any more, `endstate end RUN_ID` ends such a run", *args)

    def _written_by_newer(self, record: RunRecord) -> bool:
        """True when the run's saved head is of a snapshot version newer than this Endstate reads (the
        listing says which: no read of the run): a newer version of the code checkpointed it (a rolling
        deploy). It is left for a runner of that version, never ended here as unreadable; said once
        per version."""
        version = record.head_version
        if version is None or version <= SNAPSHOT_VERSION:
            return False
        if version not in self._newer_said:
            self._newer_said.add(version)
            log.warning(
                "run %s (and any others like it) was saved by a newer Endstate (snapshot version %d; this "
                "one reads up to %d): it is left for a runner of that version. Finish the deploy",
                record.run_id,
                version,
                SNAPSHOT_VERSION,
            )
        return True

    def left(self, swept: float) -> list[RunRecord]:
        """After `recover` and a `sweep` at time `swept`, the runs they could not take (the store failed
        on them, each logged): those recoverable still, and those whose deadline had passed then."""
        return self.recoverable() + self.ours(self.store.expired(swept))

    async def recover(self) -> list[RunResult]:
        """Continue every recoverable run from its last checkpoint, one after another."""
        return await self._drive_each(await self.arecovery_jobs(watched=False), "recovered")

    def recovery_jobs(self, limit: int | None = None, watched: bool = True) -> list[Job]:
        """Claim every recoverable run, or at most `limit` of them (a service's room under its
        `--max-running`: the others stay recoverable, for its next sweep or another worker's); the
        jobs are ready to drive (here or as tasks). `watched`: see `recoverable` (False for a
        person's one-off `recover`, which trusts the store's clock)."""
        jobs: list[Job] = []
        for record in self.recoverable(watched):
            if limit is not None and len(jobs) >= limit:
                break
            try:
                jobs.append(self._resume_job(self._taken_over(record), release_to=None, recovering=True))
            except NotClaimable:
                continue  # another worker got there first
            except Exception as exc:  # one run that cannot be continued never stops the others
                log.error("run %s cannot be recovered: %s", record.run_id, _why(exc))
        return jobs

    async def arecovery_jobs(
        self, limit: int | None = None, watched: bool = True, *, calls: Calls = here
    ) -> list[Job]:
        """`recovery_jobs`, each run's agent built on a thread of its own (`beside`), its store calls
        through `calls` (see `abegin`): one agent's hung build holds no request meanwhile."""
        left = await calls(self._left_behind, watched)
        await self._learn(left)
        jobs: list[Job] = []
        for record in await calls(self._unbuilt, self.ours, left):
            if limit is not None and len(jobs) >= limit:
                break
            try:
                held = await calls(self._taken_over, record)
                jobs.append(await self._recovered(held, calls))
            except NotClaimable:
                continue  # another worker got there first
            except Exception as exc:  # one run that cannot be continued never stops the others
                log.error("run %s cannot be recovered: %s", record.run_id, _why(exc))
        return jobs

    async def _recovered(self, held: RunRecord, calls: Calls) -> Job:
        """The job of a run taken over in recovery (one that cannot be rebuilt ends `error`)."""
        try:
            agent = await self._rebuilt_beside(held)
        except Exception as exc:
            await calls(self._not_resumed, held, None, True, exc)
            raise
        return await self._held_job(calls(self._resumed, held, agent, None, recovering=True))

    def _taken_over(self, record: RunRecord) -> RunRecord:
        """A recoverable run taken over (its worker gone) or claimed (cancelled), held here."""
        if record.status is RunStatus.RUNNING:  # its lease ran out, unless its process is gone
            held = self.store.take_over(
                record.run_id,
                record.owner or "",
                self.lease(),
                self.clock.time(),
                only_lapsed=not process_gone(record),
                as_seen=record,  # a renewal since this sweep's look keeps the run its holder's
            )
        else:
            held = self.store.claim(record.run_id, (record.status,), self.lease(), self.clock.time())
        return self._hold(held)

    def _end_unresumable(self, record: RunRecord, exc: Exception, failed: str | None = None) -> RunResult:
        """End a held run that cannot be rebuilt (or whose segment `failed`: the exception's type) as
        `error`, saying why; its snapshot stays, for `endstate resume` once the cause is fixed (see
        `unresumable`): not for a failed segment that saved no checkpoint of its own."""
        error_type = failed or ("bad_snapshot" if isinstance(exc, SnapshotError) else "agent_build_failed")
        if failed is not None:
            stored = self.store.get(record.run_id)  # the checkpoints its segment saved, if any
            record = dataclasses.replace(record, snapshot_json=stored.snapshot_json if stored else None)
        if failed is not None and head_kind(record.snapshot_json) is not SnapshotKind.CHECKPOINT:
            then = "It saved no checkpoint to resume from: fix the cause, then start its task again"
        else:
            kept = "Its last checkpoint is kept" if record.snapshot_json else "It had no checkpoint yet"
            then = f"{kept}: fix the cause, then `endstate resume {record.run_id}` continues it"
        note = f"The run could not be continued: {_as_ended(_why(exc))}. {then}."
        ran = failed is not None
        return self._end_as_error(record, error_type, note, keep_answer=not ran, ran=ran)

    def _end_as_error(
        self, record: RunRecord, error_type: str, note: str, *, keep_answer: bool, ran: bool
    ) -> RunResult:
        """Record a held run's end as `error` (`ran`: a segment ran and was observed from its start)."""
        result = RunResult(
            run_id=record.run_id,
            agent=record.agent,
            task_type=record.task_type,
            reason=StopReason.ERROR,
            note=note,
            error_type=error_type,
            turns=record.turns,
            usage=record.usage,
            active_seconds=record.active_seconds,
            waiting_seconds=record.waiting_seconds,
        )
        # a finished run keeps its stored snapshot, and, when it could not be rebuilt, the answer it
        # was claimed with (a person's answer that its journal does not hold yet: nobody could give it
        # again to a finished run); not when its segment failed, which had the answer in hand (its
        # journal may hold it: given again on resume, it could be applied twice)
        outcome = Outcome(RunStatus.FINISHED, result, None, keep_answer=keep_answer)
        ended_from = self._ended_from(record)
        try:
            self.store.record(record.run_id, outcome, self.lease(), self.clock.time())
        finally:
            self._let_go(record.run_id, None)
        self._observe_end(record, result, ended_from, segment_ran=ran)
        return result

    def end(self, run_id: str, note: str = "") -> RunResult:
        """End, as an operator, a run that is not finished and that no worker holds (waiting, cancelled,
        or running with its worker gone), whatever its agent: one whose agent no deployment has any
        more, say, which no runner would ever claim. It ends `error` (error type `ended_by_operator`,
        counted and traced as any stop), its journal kept for review; it is not resumed. Nothing runs."""
        current = self._stored(run_id)
        lease, now = self.lease(), self.clock.time()
        if current.status is RunStatus.FINISHED:
            raise NotClaimable(f"run {run_id} has ended already ({current.stop_reason}); nothing was changed")
        if current.status is RunStatus.RUNNING:
            if current.run_id in self.held() or not worker_gone(current, self.store.now()):
                raise NotClaimable(
                    f"run {run_id} is running, held by a live worker ({current.owner}); nothing was "
                    "changed. Stop that worker (its run is then cancelled, or its lease runs out), then "
                    "end it"
                )
            lapsed = not process_gone(current)  # (a worker of this host that is gone: at once)
            owner = current.owner or ""
            record = self.store.take_over(run_id, owner, lease, now, only_lapsed=lapsed, as_seen=current)
        else:
            record = self.store.claim(run_id, (current.status,), lease, now)
        text = operator_end_note(note)
        held = self._hold(record)
        result = self._end_as_error(held, ENDED_BY_OPERATOR, text, keep_answer=False, ran=False)
        if (entry := self.catalog.entries.get(record.agent)) is not None and entry.cleanup is not None:
            with contextlib.suppress(Exception, SystemExit):
                entry.cleanup(record.state)
        return result

    def _ended_from(self, record: RunRecord) -> Snapshot | None:
        """The saved head a run that cannot go on ends from; None when there is none or it is unreadable."""
        try:
            return self.store.snapshot(record.run_id) if record.snapshot_json else None
        except Exception:  # a bad snapshot: the reason the run ends
            return None

    def _observe_end(
        self, record: RunRecord, result: RunResult, snap: Snapshot | None, segment_ran: bool
    ) -> None:
        """Show the runner's hooks (its telemetry) a run it ended as error where no loop's observer did
        (no agent to rebuild, or a segment that raised past it): a segment of no turns, so that the stop
        is counted and has a span like any other. A segment that ran was observed from its start (its
        resume counted there); else the resume of a suspended, cancelled or limit stop is counted here,
        and a crashed segment's start was counted where it began."""
        if self.hooks is None:
            return
        stopped = not segment_ran and snap is not None and snap.kind is not SnapshotKind.CHECKPOINT
        info = RunInfo(
            run_id=record.run_id,
            agent=record.agent,
            task_type=record.task_type,
            model="",
            provider="",
            task=record.task,
            segment=max(2, record.segments + 1),  # never a run's first: its start was counted
            started_at=self.clock.time(),
            resumed_from=str(snap.reason) if stopped and snap is not None else None,
            resumed_stopped_at=snap.stopped_at if snap is not None else None,
            replayed=segment_ran,
        )
        guard(self.hooks, info).run_ended(result)

    async def _drive_each(self, jobs: list[Job], what: str) -> list[RunResult]:
        """Drive jobs one after another; one that cannot be driven is logged and the rest go on."""
        results = []
        for job in jobs:
            try:
                results.append(await self.drive(job))
            except Exception as exc:  # an EndstateError says what is wrong: no traceback
                log.error("run %s cannot be %s: %s", job.run_id, what, _why(exc))
        return results

    # -- driving ------------------------------------------------------

    async def drive(self, job: Job, cancel: CancelSignal | None = None) -> RunResult:
        """Run a job's segment here and record how it ended; then its observers are told (`HeldEnds`)."""
        taken_over = False
        try:
            result, taken_over = await self._drive(job, cancel)
        finally:
            if (ends := held_ends(getattr(job.agent, "hooks", None))) is not None:
                ends.release(job.run_id, taken_over)
        return result

    async def _drive(self, job: Job, cancel: CancelSignal | None) -> tuple[RunResult, bool]:
        """The segment's result, recorded, and whether another worker took the run over meanwhile
        and goes on from before its end (see `_record`)."""
        self._active.add(job.run_id)
        self._ensure_heartbeat()
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is not None:
            self._segments[job.run_id] = task  # what a shutdown past its grace cancels
        try:  # a cancel that is no signal is refused here, so the run is let go as any refused start
            signal = either(self.shutting_down, check_cancel(cancel), self._own_cancel(job))
            result = await job.segment(signal)
        except EndstateError as exc:  # refused before it began (a bad snapshot): give the run back
            if job.recovering or swept_unbuildable(job, exc):  # nobody asked for it: ends error, saying why
                raise Unrecoverable(await self._on_writer(self._end_unresumable, job.record, exc)) from exc
            why = refused_why(job.record, job.release_to, exc)
            await self._on_writer(self._let_go, job.run_id, job.release_to, why)
            raise
        except (Exception, SystemExit) as exc:  # the segment itself failed, past every catch of the loop
            # or a framework's observer (a bug), or its catalog's `cancel(state)` did (`SystemExit` too:
            # an argparse config; out of the run's task it left the event loop, and every other run of
            # the process stopped with it): it ends as error, saying why, and resumable once fixed.
            # Left to recovery, it would fail the same way on every worker, for ever
            log.error("run %s: its segment raised %s", job.run_id, _why(exc), exc_info=loggable(exc))
            return await self._on_writer(self._end_unresumable, job.record, exc, type(exc).__name__), False
        except BaseException:  # cut off (a shutdown, Ctrl-C): its lease lapses and recovery continues it
            self._let_go(job.run_id, None)
            raise
        finally:  # before any await: from here on a cut-off could only hit the recording
            self._active.discard(job.run_id)
            self._segments.pop(job.run_id, None)
        if (failure := _store_gave_up(job, result)) is not None:
            self._left_to_recovery(job, failure)
            raise failure
        return result, await self._record(job, result)

    def _left_to_recovery(self, job: Job, failure: BaseException) -> None:
        """The store failed on the segment's checkpoints past every retry: the segment stops there,
        unrecorded, and the run is let go as a crashed worker's would be, so recovery continues it from
        its last checkpoint once the store answers; the caller gets the store's failure, as when a
        record cannot be written. (Recording the error the segment ended with, once the store was back,
        ended for good a run nothing had gone wrong with but the store.) Its end is no run's end: this
        runner's telemetry counts none (`HeldEnds`: taken over)."""
        self._let_go(job.run_id, None)
        if (ends := held_ends(getattr(job.agent, "hooks", None))) is not None:
            ends.release(job.run_id, taken_over=True)
        log.error(
            "run %s: the run store failed on its checkpoints past every retry (%s); the run is not over: "
            "once the store answers, recovery continues it from its last checkpoint",
            job.run_id,
            failure,
        )

    def stop_soon(self, grace: float) -> None:
        """From a signal handler or another thread: runs stop at their next turn, and after
        `grace` seconds a run still inside a turn (a long tool, say) is cut off there. Either way
        it is recorded `cancelled`, resumable; a call it cut off is recorded with its outcome unknown."""
        self.shutting_down.set()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._loop.call_later, grace, self._cut_off)

    def _cut_off(self) -> None:
        for segment in list(self._segments.values()):
            segment.cancel()

    @property
    def in_flight(self) -> int:
        """How many runs this runner drives now (spawned and not yet ended or suspended)."""
        return len(self._spawned)

    def spawn(self, job: Job, cancel: CancelSignal | None = None) -> asyncio.Task[RunResult | None]:
        """Drive a job as a task of the running loop; `shutdown` waits for it."""

        async def guarded() -> RunResult | None:
            try:
                return await self.drive(job, cancel)
            except EndstateError as exc:  # refused as it began: given back, and the run says why
                log.error("run %s: %s", job.run_id, exc)
                return None
            except Exception as exc:
                log.error("run %s failed in the runner", job.run_id, exc_info=loggable(exc))
                return None

        task = asyncio.get_running_loop().create_task(guarded(), name=f"run-{job.run_id}")
        self._spawned.add(task)
        task.add_done_callback(self._spawned.discard)
        return task

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop: runs end at their next turn as cancelled (resumable); after `grace` they are cut."""
        self.shutting_down.set()
        until = self.clock.monotonic() + grace
        while self._spawned and (left := until - self.clock.monotonic()) > 0:  # runs spawned meanwhile too
            await asyncio.wait(list(self._spawned), timeout=left)
        late = list(self._spawned)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)

    @property
    def active(self) -> int:
        return len(self._active)

    def held(self) -> set[str]:
        """The ids of the runs this runner holds (and renews the leases of)."""
        with self._held_lock:
            return set(self._held)

    async def _record(self, job: Job, result: RunResult) -> bool:
        """Write how the segment ended; the run is let go either way (recovery takes an unwritten one).
        True when another worker took the run over before the segment's last entries landed (they go
        with the record, or their checkpoint was refused): it goes on from before this end, and ends
        the run itself. (When they landed, that worker records this end from the journal.)"""
        interrupted = result.reason is StopReason.CANCELLED and self.shutting_down.is_set()
        outcome = Outcome.of(result, interrupted=interrupted, rest=_unsaved(job))
        try:
            written = await self._write(job.run_id, outcome)
        finally:
            self._let_go(job.run_id, None)
        if written and outcome.status is RunStatus.FINISHED:
            if audited(job, result):  # (on the writer thread: a run with no audit to plan needs no hop)
                await self._on_writer(self._plan_audit, job, result)
            await self._cleaned(job)  # last: a shutdown that cuts a slow cleanup off loses no audit
        return not written and outcome.rest is not None

    # -- success audits ----------------------------------------------------------------------

    def _plan_audit(self, job: Job, result: RunResult) -> None:
        """Plan the success's audit (`audited`); a store failing here is logged (the run's result is
        recorded)."""
        audit = job.agent.audit
        assert audit is not None
        due = self.clock.time() + audit.after
        try:
            self.store.schedule_audit(Audit(job.run_id, job.record.agent, result.task_type, due))
        except StoreError as exc:
            log.error("run %s: its success audit was not planned: %s", job.run_id, exc)

    async def audit_due(self, now: float | None = None) -> list[Audit]:
        """Make every audit that is due: the agent's independent check over the finished run."""
        done = []
        now = self.clock.time() if now is None else now
        # each store call (and build) off the loop: a store that hangs never holds the event loop
        listed = functools.partial(self.store.due_audits, now, agents=self.catalog.names())
        for due in await self._on_writer(listed):  # (the other agents' audits are their runners')
            subject = await self._audit_subject(due)
            until = max(now, self.clock.time()) + audit_hold(subject)
            if not await self._on_writer(self.store.claim_audit, due, until):
                continue  # another worker of the fleet makes it: its check runs once, not once a worker
            outcome, note = await self._audit(subject)
            if await self._on_writer(self.store.record_audit, due.run_id, outcome, note, self.clock.time()):
                done.append(dataclasses.replace(due, outcome=outcome, note=note))
                if self.on_audit is not None:
                    self.on_audit(due.agent, due.task_type, str(outcome))
        return done

    async def _audit_subject(self, due: Audit) -> tuple[Verifier, RunContext] | str:
        """The audit's check and the finished run it looks at; or why the audit cannot be made. The
        store is read on the writer thread, the agent built on a thread of its own: a build that hangs
        (until the prepare deadline) on the writer thread held every other run's checkpoints and ends."""
        try:
            read = await self._on_writer(self._audited_run, due.run_id)
            if isinstance(read, str):
                return read
            record, snap = read
            options = {"name": record.agent, "state": record.state, "run_id": record.run_id, "swept": True}
            agent = await _in_daemon_thread(self._agent, options)
            if agent.audit is None:
                return f"agent {record.agent!r} has no audit check any more"
            return agent.audit.check, context_of(snap, record)
        except Exception as exc:
            return _why(exc)

    def _audited_run(self, run_id: str) -> tuple[RunRecord, Snapshot] | str:
        """The finished run an audit looks at, and its journal; or why they cannot be read."""
        record = self.store.get(run_id)
        snap = self.store.snapshot(run_id)
        if record is None or snap is None:
            return "the run or its journal is no longer in the store"
        return record, snap

    async def _audit(self, subject: tuple[Verifier, RunContext] | str) -> tuple[AuditOutcome, str]:
        if isinstance(subject, str):
            return AuditOutcome.ERROR, subject
        try:
            failures = await check_once(*subject)  # hung: error, at the check's own timeout
        except Exception as exc:
            return AuditOutcome.ERROR, _why(exc)
        if failures:
            return AuditOutcome.FALSE_SUCCESS, "; ".join(failures)
        return AuditOutcome.CONFIRMED, ""

    async def _write(self, run_id: str, outcome: Outcome) -> bool:
        """Record an outcome, retrying a failing store; False when another worker holds the run now."""
        for attempt, delay in enumerate(RECORD_RETRIES):
            try:
                return await self._on_writer(self._write_once, run_id, outcome, attempt > 0)
            except StoreError:
                log.warning("recording run %s failed; retrying in %.1f s", run_id, delay, exc_info=True)
                await asyncio.sleep(delay)
        try:
            return await self._on_writer(self._write_once, run_id, outcome, bool(RECORD_RETRIES))
        except StoreError:
            log.error(
                "run %s: its result was not recorded; recovery continues it from its checkpoint", run_id
            )
            raise

    def _write_once(self, run_id: str, outcome: Outcome, retried: bool) -> bool:
        try:
            self.store.record(run_id, outcome, self.lease(), self.clock.time())
        except LeaseLost:
            if retried and self._recorded(run_id, outcome):
                return True  # an earlier attempt was written; only its reply was lost
            log.warning("run %s was taken over by another worker; its result here is dropped", run_id)
            return False
        return True

    def _recorded(self, run_id: str, outcome: Outcome) -> bool:
        """True when the store already holds this outcome, released by its holder."""
        current = self.store.get(run_id)
        if current is None or current.owner is not None:
            return False
        result = outcome.result
        return (current.status, current.stop_reason, current.turns) == (
            outcome.status,
            result.reason,
            result.turns,
        )

    def _hold(self, record: RunRecord) -> RunRecord:
        """Renew this run's lease from now on (it was just created, claimed or taken over here)."""
        with self._held_lock:
            if (hold := self._held.get(record.run_id)) is None:
                self._held[record.run_id] = _Hold(1, since_boot())
            else:  # claimed again before its last segment's job let go of it
                hold.jobs, hold.renewed = hold.jobs + 1, since_boot()
        return record

    def _let_go(self, run_id: str, release_to: RunStatus | None, refused: str | None = None) -> None:
        """Stop holding a run: give it back as `release_to` (`refused`: why what it was claimed with
        was not taken, kept on the run for the person who gave it), or let its lease lapse for recovery."""
        with self._held_lock:
            if (hold := self._held.get(run_id)) is not None and hold.jobs > 1:  # claimed again meanwhile:
                hold.jobs -= 1  # that job holds it
            else:
                self._held.pop(run_id, None)
        if release_to is not None:
            self.store.release(run_id, release_to, self.lease(), self.clock.time(), refused)

    async def _cleaned(self, job: Job) -> None:
        """The catalog's cleanup of a run that ended, on a daemon thread (as a Temporal worker's): one
        that blocks (a work folder of gigabytes, a network share) holds up none of the runner's other
        runs and heartbeats, as it did on the loop. A run with no cleanup costs no thread hop."""
        entry = self.catalog.entries.get(job.record.agent)
        if entry is not None and entry.cleanup is not None:
            await _in_daemon_thread(_cleanup, {"cleanup": entry.cleanup, "job": job})

    def _own_cancel(self, job: Job) -> CancelSignal | None:
        """The run's own cancel signal, from its catalog entry's `cancel(state)`. For a stored run going
        on (answered, resumed, recovered) a hook that raises is the entry's failure, as its build's
        (`AgentUnavailable`): the run is given back as it was, its journal whole (a redeployed hook that
        fails on the state older runs keep ended each such run as error, its answer lost). A start's
        ends its new run as error (`_drive`)."""
        entry = self.catalog.entries.get(job.record.agent)
        if entry is None or entry.cancel is None:
            return None
        cancel, state = entry.cancel, job.record.state
        what = f"the cancel signal that the catalog's cancel(state) of agent {job.record.agent!r} returned"
        if job.release_to is None and not job.recovering:  # a start's first segment
            return check_cancel(cancel(state), what)
        try:
            return from_catalog(job.record.agent, "cancel(state)", lambda: check_cancel(cancel(state), what))
        except AgentUnavailable as exc:
            raise CancelHookFailed(str(exc)) from exc.__cause__

    def _agent(
        self,
        name: str,
        state: State,
        run_id: str,
        task_type: str | None = None,
        saved: bool = False,
        swept: bool = False,
    ) -> Agent | ForeignAgent:
        """The catalog's agent, checkpointing to the store under this runner's lease, for a run of
        `task_type` (asked for by a start, or `saved` with a stored run): one the catalog entry does
        not run is refused, since task types are metric labels that the catalog names. In a sweep
        (`swept`: recovery, deadlines, audits, where nobody waits on it) its build is given the
        prepare deadline (`build_within`), so that one hung build does not hold every later run."""
        entry = self.catalog.entry(name)
        within = functools.partial(build_within, name, entry, state, self.prepare_seconds)
        built = from_catalog(name, "build", within if swept else lambda: entry.build(state))
        from agent.integrations._durable import ForeignAgent  # the integrations import the runner

        if not isinstance(built, Agent | ForeignAgent):  # a build that forgot its `return`
            raise AgentUnavailable(
                f"agent {name!r} could not be set up: its catalog entry's build returned "
                f"{type(built).__name__}, not an Agent; nothing was changed"
            )
        self._own_types[name] = built.task_type
        changes: dict[str, Any] = {"checkpoint": self._checkpointer(run_id)}
        if (named := named_as_entry(name, built)) is not built:
            changes["name"] = named.name
        if self.hooks is not None:  # added to the agent's own hooks, which still see its runs
            held = HeldEnds(self.hooks)  # told a segment's end once it is recorded (see `HeldEnds`)
            own: RunHooks | None = getattr(built, "hooks", None)
            if own is None or isinstance(own, NoHooks) or own is self.hooks:
                changes["hooks"] = held
            else:
                changes["hooks"] = CompositeHooks((held, own))
        if task_type and task_type != built.task_type:
            if task_type not in entry.task_types:
                allowed = ", ".join(sorted({built.task_type, *entry.task_types}))
                raise task_type_refused(name, task_type, allowed, run_id if saved else None)
            changes["task_type"] = task_type
        if built.clock is SYSTEM_CLOCK:
            changes["clock"] = self.clock
        return dataclasses.replace(built, **changes)

    def _checkpointer(self, run_id: str) -> Behind:
        """Checkpoints written behind the loop, on this runner's writer thread (see `_behind`)."""

        def write(new: Checkpoint, lease: Lease, now: float) -> None:
            self.store.checkpoint(run_id, new, lease, now)

        sender = getattr(self.store, "send_checkpoint", None)  # a store that sends ahead (PostgreSQL)
        # (whose results the loop reads: not in a server, where the writer thread writes each one)
        send = functools.partial(sender, run_id) if sender is not None and self.checkpoints_on_loop else None
        on_loop = self.checkpoints_on_loop
        check = functools.partial(self._lease_check, run_id)
        return Behind(self._writer(), write, self.lease, self.clock.time, send, on_loop, check)

    def _lease_check(self, run_id: str) -> Awaitable[None] | None:
        """Before a tool starts: None while this runner surely holds the run's lease (written within
        `LEASE_SURE` of it, by the time elapsed on this host, suspended time included); else that lease
        renewed alone, which raises `LeaseLost` when another worker took the run meanwhile. A worker
        stopped (SIGSTOP, a frozen container) past its lease, whose run a recovery took and went on
        with, ran the tool calls of the reply it then got once more before its next checkpoint said so."""
        with self._held_lock:
            hold = self._held.get(run_id)
            renewed = None if hold is None else hold.renewed
        if renewed is not None and since_boot() - renewed < self.lease_seconds * LEASE_SURE:
            return None
        return self._renew_one(run_id)

    def _renewed_all(self, run_ids: list[str], when: float) -> None:
        with self._held_lock:
            for run_id in run_ids:
                if (hold := self._held.get(run_id)) is not None:  # (one let go meanwhile stays forgotten)
                    hold.renewed = when

    async def _renew_one(self, run_id: str) -> None:
        began = since_boot()
        try:
            held = await self._on_writer(self.store.heartbeat, self.lease(), [run_id])
        except StoreError as exc:  # unknown: it goes on, as before any check (its next checkpoint tells)
            log.warning("run %s: its lease could not be confirmed before a tool call: %s", run_id, exc)
            return
        if not held:
            raise LeaseLost(f"run {run_id} is no longer held by {self.owner}; another worker took it over")
        self._renewed_all([run_id], began)

    def _writer(self) -> ThreadPoolExecutor:
        """This runner's writer thread (made with its first use: on the loop, or on the thread of a
        service's `begin`, so under a lock: one thread for all)."""
        with self._held_lock:
            if self._pool is None:
                self._pool = writer_pool()
            return self._pool

    async def _on_writer(self, call: Callable[..., T], *args: Any) -> T:
        """`call(*args)` on the writer thread, after the checkpoints handed to it: a store waiting for
        a lock holds that thread, never the event loop. (A thread that lives as long as the runner:
        `asyncio.to_thread` would start one per event loop, a run's cost in a short-lived process.)"""
        return await asyncio.get_running_loop().run_in_executor(self._writer(), call, *args)

    def _ensure_heartbeat(self) -> None:
        """Renew held leases every `lease_seconds / 3` on this loop: a timer, not a task per run (a
        run that ends before the first beat costs a timer handle, not a task to create and cancel)."""
        loop = asyncio.get_running_loop()
        if self._beat is None or self._beat_loop is not loop:  # none yet, or one on a loop now gone
            self._beat_loop = loop
            self._beat = loop.call_later(self.lease_seconds / 3, self._beat_due)

    def _beat_due(self) -> None:
        """The timer fired: renew the held leases off the loop; the next beat is set when it is done."""
        if not self.held():
            self._beat = None  # the next run starts it again
            return
        renewal = asyncio.get_running_loop().create_task(self._renew(), name="runner-heartbeat")
        self._renewals.add(renewal)
        renewal.add_done_callback(self._renewals.discard)

    async def _renew(self) -> None:
        """Renew the held leases on a thread of their own: hung work on the loop's default pool (an
        audit, a cleanup) or a backlog of checkpoints never holds a renewal up until leases run out."""
        if self._beats is None:
            self._beats = ThreadPoolExecutor(max_workers=1, thread_name_prefix="endstate-leases")
        ids, began = sorted(self.held()), since_boot()
        renew = functools.partial(self.store.heartbeat, self.lease(), ids)
        every = self.lease_seconds / 3
        try:
            if await asyncio.get_running_loop().run_in_executor(self._beats, renew) == len(ids):
                self._renewed_all(ids, began)  # (fewer: some were taken; each tells at its next tool)
        except StoreError:  # tried again soon, not a third of a lease later: a store back within
            every = self.lease_seconds / RENEW_RETRY_SHARE  # the lease gets the renewal before it runs out
        finally:
            self._beat = asyncio.get_running_loop().call_later(every, self._beat_due)


def audit_hold(subject: tuple[Verifier, RunContext] | str) -> float:
    """How long a worker making an audit holds it: `AUDIT_HOLD_SECONDS`, or its check's own timeout
    and a minute more when that is longer (a worker still inside a slow check is not dead: another
    that made the audit again meanwhile would run the check twice)."""
    if isinstance(subject, str):
        return AUDIT_HOLD_SECONDS
    return max(AUDIT_HOLD_SECONDS, (timeout_of(subject[0]) or 0.0) + 60.0)


def ended_result(
    record: RunRecord, snap: Snapshot, agent: Agent | ForeignAgent | None = None
) -> RunResult | None:
    """The result of a segment whose end its journal holds (a finished or limit stop's last
    checkpoint, durable) but whose record its worker never wrote (it died in between; or it was
    claimed for more budget and died before the extension was saved): None for any other snapshot.

    Rebuilt from the journal's stop and the saved usage. A per-turn check's verdict (the stops whose
    last checkpoint is written on its own, with no_progress) is asked again of `agent`'s checks, for
    the output, `verified` and error type that only the result held; a give-up's cause is not kept."""
    if snap.kind not in (SnapshotKind.FINISHED, SnapshotKind.LIMITED):
        return None
    stopped = next((e for e in reversed(snap.journal) if isinstance(e, Stopped)), None)
    if stopped is None:
        return None
    usage, ctx = snap.usage, context_of(snap, record)
    verdict = _verdict_again(agent, ctx, stopped.reason)
    done = verdict is not None and verdict.reason is StopReason.SUCCESS
    return RunResult(
        run_id=record.run_id,
        agent=record.agent,
        task_type=record.task_type,
        reason=stopped.reason,
        limit=stopped.limit,
        output=verdict.note if verdict is not None and done else "",
        note=stopped.note,
        verified=done,
        error_type=verdict.error_type if verdict is not None else None,
        summary=summarize(ctx, usage, stopped.reason, stopped.limit),
        turns=usage.turns,
        usage=usage.usage,
        active_seconds=round(usage.active_seconds, 6),
        waiting_seconds=round(usage.waiting_seconds, 6),
        verifier_failures=tuple(snap.verifier_failures),
        last_text=snap.last_text,
        trace_id=snap.trace_id,
    )


def _verdict_again(
    agent: Agent | ForeignAgent | None, ctx: RunContext, reason: StopReason
) -> TurnVerdict | None:
    """The verdict of `agent`'s per-turn checks on the run as it ended, when it ends it for `reason`
    (success or error) as it did; None otherwise, or when a check raises."""
    if reason not in (StopReason.SUCCESS, StopReason.ERROR) or not isinstance(agent, Agent):
        return None
    for check in agent.checks:
        try:
            verdict = check(ctx)
        except Exception:
            return None
        if verdict is not None:
            return verdict if isinstance(verdict, TurnVerdict) and verdict.reason is reason else None
    return None


def _started_before(agent: Agent | ForeignAgent, record: RunRecord) -> Agent | ForeignAgent:
    """The agent whose hooks see the run's first segment, run again from its task, as the one
    that began when the run did (its start was counted there): see `StartedBefore`."""
    if isinstance(agent.hooks, NoHooks):
        return agent
    return dataclasses.replace(agent, hooks=StartedBefore(agent.hooks, record.started_at))


def _cleanup(cleanup: Callable[[dict[str, Any]], object], job: Job) -> None:
    """The catalog's `cleanup` of the run `job` ended; its failure is logged (the run's end is recorded
    and its audit planned already)."""
    try:
        cleanup(job.record.state)
    except (Exception, SystemExit) as exc:
        log.warning("cleanup of run %s failed", job.run_id, exc_info=loggable(exc))


def _store_gave_up(job: Job, result: RunResult) -> BaseException | None:
    """The store's failure that outlasted the checkpoint retries (`Behind.gave_up`) and so ended the
    segment as error, if any. (A run that had its reason before its last write failed keeps it: its
    record carries that write's entries.)"""
    behind = getattr(job.agent, "checkpoint", None)
    if not isinstance(behind, Behind) or behind.gave_up is None or result.reason is not StopReason.ERROR:
        return None
    return behind.gave_up if result.error_type == type(behind.gave_up).__name__ else None


def _unsaved(job: Job) -> Checkpoint | None:
    """What the segment's checkpoints failed to write (the last one's entries, say): the record
    writes it, so the journal in the store still ends with the stop."""
    behind = getattr(job.agent, "checkpoint", None)
    return behind.unsaved if isinstance(behind, Behind) else None


class AuditCounter(Protocol):
    """Counts the audits of successes (telemetry.metrics.MetricsHooks does)."""

    def record_success_audit(self, agent: str, task_type: str, outcome: str) -> None: ...


class RunnerTelemetry(Protocol):
    """What a face's runner takes from its `telemetry.Telemetry` (agent/ imports no telemetry/)."""

    @property
    def hooks(self) -> RunHooks: ...

    @property
    def metrics(self) -> AuditCounter: ...


def runner_with_telemetry(
    store: RunStore, catalog: Catalog, telemetry: RunnerTelemetry, lease_seconds: float
) -> Runner:
    """The runner the faces drive (the command line, the service): every run and resume reports
    through the telemetry's hooks, every audit is counted in its metrics."""
    return Runner(
        store,
        catalog,
        hooks=telemetry.hooks,
        lease_seconds=lease_seconds,
        on_audit=telemetry.metrics.record_success_audit,
    )


def context_of(snap: Snapshot, record: RunRecord) -> RunContext:
    """A finished run as its checks see it: its journal, the calls it made, its state, its output."""
    journal = Journal(list(snap.journal))
    return RunContext(
        run_id=record.run_id,
        agent=snap.agent,
        task=record.task,
        task_type=record.task_type,
        journal=journal,
        calls=calls_of(journal),
        state=dict(snap.state),
        note=record.output,
    )


def _agrees(waiting: Suspension | None, record: RunRecord) -> bool:
    """The journal's suspension is the stored question and pending call (the question's text
    column keeps NUL and lone surrogates as U+FFFD)."""
    if waiting is None or waiting.pending != record.pending:
        return False
    return bool(column_text(waiting.question) == column_text(record.question))


def not_resumable(record: RunRecord) -> str:
    """Why a resume with no answer and no budget cannot take `record`, and what would."""
    if record.stop_reason is StopReason.LIMIT and record.snapshot_json:
        given = record.run_id if RUN_ID.fullmatch(record.run_id) else "RUN_ID"  # a command to copy, safely
        return (
            f"run {record.run_id} stopped at its {record.stop_limit or 'budget'} limit: give it more budget "
            f"to go on (`endstate resume {given} --more-turns 10`, or --more-seconds/--more-tokens/"
            '--more-cost; over HTTP {"more_turns": 10}); nothing was changed'
        )
    return f"run {record.run_id} is {record.status}, not waiting or cancelled; nothing was changed"


def unresumable(record: RunRecord) -> bool:
    """True for a run that ended as error because the runner could not continue it, which a resume
    continues once the cause is fixed: it could not be rebuilt (its snapshot is kept; one that died
    before its first checkpoint has none, and its task starts again), or its segment raised past every
    catch of the loop (its saved head is that segment's checkpoint, not an end the loop saved). Not
    one an operator ended (`end`)."""
    if record.status is not RunStatus.FINISHED or record.stop_reason is not StopReason.ERROR:
        return False
    if record.error_type in ("bad_snapshot", "agent_build_failed"):
        return True
    return (
        record.error_type != ENDED_BY_OPERATOR and head_kind(record.snapshot_json) is SnapshotKind.CHECKPOINT
    )


def head_kind(head_json: str | None) -> SnapshotKind | None:
    """The kind a stored head says it is; None when there is none, or it says none this code knows."""
    try:
        return SnapshotKind(json.loads(head_json or "{}").get("kind"))
    except (ValueError, AttributeError):
        return None


def _why(exc: BaseException) -> str:
    """What went wrong, in words: an exception of a catalog's or an agent's own code is read by `said`
    (within its bound: its `__str__` may hang)."""
    return str(exc) if isinstance(exc, EndstateError) else f"{type(exc).__name__}: {said(exc)}"


def _as_ended(why: str) -> str:
    """A refusal's reason, told of a run that is ended for it: its "nothing was changed" (true of a
    refused claim, which gives the run back) is not true of this run, so it is left out, and so is the
    way out of a damaged run by ending it (`ENDS_IT`)."""
    return ENDS_IT.sub("", re.sub(r"[;,]? (and )?nothing was changed\b", "", why))


def check_approved_tool(agent: Agent | ForeignAgent, record: RunRecord) -> None:
    """Refuse (`NotInCatalog`) to resume an approval of a call whose tool the agent (redeployed since) no
    longer has: the run would end as error, its approval spent; given back, it waits for a redeploy or a
    denial."""
    pending = record.pending
    if not (record.approved and pending is not None and isinstance(agent, Agent)):
        return
    if agent.tool_named(pending.name) is None:
        raise NotInCatalog(
            f"agent {record.agent!r} has no tool {pending.name!r} any more, so the approved call "
            f"cannot run; run {record.run_id} still waits. Deploy the agent with that tool again, "
            "or deny the call"
        )


def check_model_served(agent: Agent | ForeignAgent, record: RunRecord) -> None:
    """Refuse (`NotInCatalog`) to go on with a stored run whose agent calls a model the model table says
    the API has retired (its date came while the run waited): its next call would fail, ending the run as
    error for good, the reply it was claimed with spent. Given back, it waits for the agent to be deployed
    with a served model."""
    if retired := retired_model(agent):
        raise NotInCatalog(
            f"agent {record.agent!r} cannot call its model: {retired}; every call of it fails, so run "
            f"{record.run_id} would end as error. It is left as it was (it still waits, if it waited); "
            "nothing was changed. Deploy the agent with a model that is served, then reply or resume again"
        )


def task_type_refused(agent: str, task_type: str, allowed: str, saved_run: str | None) -> ConfigError:
    """A task type the agent's catalog entry does not run: asked for by a start, or saved with
    `saved_run` (a redeploy dropped it from the entry since: the run is refused, not relabelled)."""
    if saved_run is None:
        return ConfigError(
            f"agent {agent!r} does not run task type {task_type!r}; use one of: {allowed} "
            "(add it to the catalog entry's task_types)"
        )
    return ConfigError(
        f"run {saved_run} has task type {task_type!r}, which agent {agent!r} no longer runs (its catalog "
        f"entry's task types: {allowed}); the run keeps its place and its task type. Add {task_type!r} to "
        "the entry's task_types again and deploy, then answer or resume the run"
    )


def check_extensible(agent: Agent | ForeignAgent, snapshot: Snapshot, more: Extension) -> None:
    """More budget fits: too little is refused, and so is any for another framework's run."""
    if isinstance(agent, Agent):
        agent.extended(snapshot, more)
    else:
        raise ConfigError(
            f"run {snapshot.run_id} is a {agent.framework} run: it cannot be given more budget "
            "(foreign runs take no --more-* budget); nothing was changed"
        )


class CancelHookFailed(AgentUnavailable):
    """A catalog entry's `cancel(state)` raised for a stored run going on (see `Runner._own_cancel`)."""


def swept_unbuildable(job: Job, exc: Exception) -> bool:
    """True for a deadline sweep's run (no person's reply: `refused_why` keeps none) whose entry's
    `cancel(state)` raised: it ends as error there, as a build that fails in a sweep does (resumable
    once fixed), rather than be given back to fail again at every sweep."""
    record = job.record
    no_reply = record.answer is None and record.approved is None
    return isinstance(exc, CancelHookFailed) and job.release_to is RunStatus.WAITING and no_reply


def refused_why(record: RunRecord, release_to: RunStatus | None, exc: Exception) -> str | None:
    """Why what a run was claimed with (`record`) was not taken, as the run keeps it for the person who
    gave it; given back as `release_to`. None for a sweep's expiry, which no person asked for: the next
    sweep tries again."""
    if record.answer is None and record.approved is None and release_to is RunStatus.WAITING:
        return None
    what = "the answer" if record.answer is not None else "the resume"
    if record.approved is not None:
        what = "the approval" if record.approved else "the denial"
    return f"{what} given at {when(record.answered_at or record.updated_at)} was not taken: {exc}"


def check_foreign_saved(snap: Snapshot | None) -> None:
    """Refuse, before any claim, an answer to another framework's run whose state could not be
    saved when it suspended: no answer can resume it, and the person answering is told so now, not
    after a 202 (the run still waits, and ends at its deadline under its help policy)."""
    foreign = snap.foreign if snap is not None else None
    if foreign is None or foreign.state is not None:
        return
    assert snap is not None
    raise NotClaimable(
        f"run {snap.run_id} cannot be resumed from the store: its {foreign.framework} state could not "
        f"be saved when it suspended ({foreign.error}). Nothing was changed: no answer is taken, and it "
        "ends at its deadline under its help policy. Make that state serializable for later runs"
    )


def check_state(state: Any) -> None:
    """Refuse a run's state the store cannot keep (it is stored with the run, as JSON)."""
    if not isinstance(state, dict):
        raise ConfigError(f"state must be a dict of JSON values, not {type(state).__name__}")
    if (problem := unwritable(state)) is not None:
        raise ConfigError(
            f"the run's state cannot be stored: {problem}; keep JSON values in it (strings, numbers, "
            "booleans, None, lists and dicts with string keys)"
        )


def stored_pair(answer: HumanReply | str | None, approved: bool | None) -> tuple[str | None, bool | None]:
    """The store's `answer`/`approved` pair for a typed reply (`Answer`, `Approval`, `Denial`); a pair
    given as one is returned as it is (`check_answer` checks it). An `AnswerError` says what is wrong."""
    if not isinstance(answer, Answer | Approval | Denial):
        return answer, approved
    try:
        reply = as_reply(answer, approved)
    except ConfigError as exc:
        raise AnswerError(str(exc)) from None
    if isinstance(reply, Approval):
        return None, True
    if isinstance(reply, Denial):
        return reply.reason or None, False
    return (reply.text if reply is not None else None), None


def claimed_reply(
    answer: HumanReply | str | None, approved: bool | None, segments: object
) -> tuple[str | None, bool | None]:
    """A claim's reply as the store's pair (`stored_pair`), the blank text of a denial or an approval as
    none (`given_reason`: the model is told "no reason given"); `AnswerError` for a `segments` that is no
    count (True was read as 1, "1" raised TypeError), as the API and a Temporal run refuse it."""
    if segments is not None and not is_count(segments):
        raise AnswerError(
            f"segments must be the run's segments count as read (a whole number), not {segments!r:.40}; "
            "nothing was changed"
        )
    answer, approved = stored_pair(answer, approved)
    return (answer, approved) if approved is None else (given_reason(answer), approved)


def check_answer(record: RunRecord, answer: str | None, approved: bool | None) -> None:
    """Refuse an answer that does not fit what a waiting run waits for."""
    if answer is not None and not isinstance(answer, str):
        raise AnswerError(f"an answer must be text, not {type(answer).__name__}: pass a string")
    if approved is not None and not isinstance(approved, bool):
        raise AnswerError(f"approved must be True or False, not {approved!r:.40}")
    pending = record.pending.name if record.pending is not None else None
    if problem := reply_problem(as_reply(answer, approved), pending, record.question):
        raise AnswerError(f"run {record.run_id} {problem}")
    if approved is True and answer is not None:  # no other face can send it; the model would never read it
        raise AnswerError(
            f"run {record.run_id}: an approval carries no text (the call runs as shown, and the agent is "
            "told nothing more); nothing was changed. Approve without it, or deny with it as the reason"
        )


@functools.cache
def machine() -> str:
    """This host and, on Linux, its pid namespace and boot: containers may share a host name, not pids;
    and hosts may share a name (cloned VMs, `localhost`) and a pid namespace's number (the first one's
    is the same on every Linux host), not a boot (its random id, shared by the host's containers)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    except OSError:
        return socket.gethostname()
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip().replace("-", "")[:12]
    except OSError:
        boot = ""
    return f"{socket.gethostname()}/{namespace}" + (f"/{boot}" if boot else "")


def _a_lease(seconds: object) -> bool:
    """True when `seconds` can be a lease: a finite number above 0 (a lease of 0 or less, or NaN, runs
    out as it is written, and every sweep takes the run; an infinite one never runs out)."""
    return is_number(seconds) and 0 < seconds < math.inf


def worker_gone(record: RunRecord, now: float) -> bool:
    """True when a running run's lease ran out by `now` (the store's clock), or its worker's
    process here is gone."""
    return record.lease_until is None or record.lease_until < now or process_gone(record)


def process_gone(record: RunRecord) -> bool:
    """True when the run's worker ran on this machine and its process is gone.

    An owner is `machine:pid:runner`. Here means this machine and pid namespace; a
    worker with this very pid is an earlier process (a restarted container) unless
    it is one of this process's runners.
    """
    where, _, rest = (record.owner or "").partition(":")
    pid = rest.partition(":")[0]
    if where != machine() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return record.owner not in _LIVE_OWNERS
    return not _alive(int(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def audited(job: Job, result: RunResult) -> bool:
    """True when the run's success is to be audited (its agent audits, and samples this run)."""
    audit = job.agent.audit
    return result.reason is StopReason.SUCCESS and audit is not None and audit.samples(job.run_id)


def either(*signals: CancelSignal | None) -> CancelSignal:
    """A signal set when any of the given ones is set: the one given itself when there is one (the
    loop asks at every turn), else `_Either`."""
    given = tuple(s for s in signals if s is not None)
    return given[0] if len(given) == 1 else _Either(given)


class _Either:
    """Set when any of the given cancel signals is set."""

    def __init__(self, signals: tuple[CancelSignal, ...]) -> None:
        self._signals = signals

    def is_set(self) -> bool:
        """False when none is set, else the first other answer (True; or one that is no bool, which
        the loop refuses rather than `any` reading it as True)."""
        for signal in self._signals:
            if (asked := signal.is_set()) is not False:
                return asked
        return False
