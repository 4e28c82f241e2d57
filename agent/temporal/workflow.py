"""An Endstate run as a Temporal workflow.

The workflow is the loop: `Agent.arun`/`aresume`/`aexpire` over an agent
whose model, tools and verifiers are activities (see `_remote`). Between
segments it waits for a person on an update (`answer`, `approve`, `deny`)
with a timer at the deadline, then applies the help policy. Cancelling the
workflow ends the segment as `cancelled` with its snapshot in the result;
`resume` starts a new execution of the same workflow id from it. Past its history
bound a run continues as new at a turn boundary (`CONTINUE_AS_NEW`): no end.

Its result is `{"result": RunResult as JSON with its snapshot, "run": what
a resumed execution needs}`. Search attributes: agent, task type, stop
reason, waiting-for-a-person and since when.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import zlib
from collections.abc import Callable, Coroutine, Iterator
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue, SearchAttributePair
from temporalio.common import RetryPolicy as TemporalRetry
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from agent._valid import is_text
    from agent.agent import Agent
    from agent.budget import bounded_extension
    from agent.clock import CancelSignal
    from agent.durable.runner import ENDED_BY_OPERATOR, operator_end_note
    from agent.durable.store.base import answer_kind, answered_note, answerer
    from agent.hooks import RunHooks, RunInfo, SegmentLink, guard
    from agent.journal import Answer, Approval, HumanReply, Stopped, reply_problem
    from agent.result import RunResult, StopReason
    from agent.snapshot import Snapshot, SnapshotKind
    from agent.temporal import _wire as w
    from agent.temporal._registry import WorkerSetup, lookup
    from agent.temporal._remote import (
        CATALOG_CANCEL,
        ReplaySafeHooks,
        RunRef,
        catalog_room,
        now,
        workflow_agent,
    )
    from agent.usage import Usage

# A cancel lets the turn in flight end (a tool's result is kept) and stops the run before its next turn, as
# a runner's cancel does; past the worker's `cancel_grace` it cuts the turn there. Runs started before were
# cut at once, the call in flight recorded as of unknown outcome, as they were.
GRACEFUL_CANCEL = "endstate-cancel-at-the-next-turn"
PREPARE_TIMEOUT = timedelta(minutes=5)
# A reply to a waiting run is taken only once a worker has checked that it can go on with the run (it has
# the run's agent, and the approved call's tool): else the reply is refused and the run waits still, as
# the store's runner gives such a run back. Runs started before took every reply, as they did.
REPLY_CHECKED = "endstate-reply-checked-by-a-worker"
# Likewise a resumed execution (a cancelled run, a limit stop given more budget) goes on only once a worker
# has checked it can: else it ends at once with the run's stop as it was (`_wire.NOT_RESUMED`), resumable.
RESUME_CHECKED = "endstate-resume-checked-by-a-worker"
# A reply sent with the run's segment count as read (`segments`: from `/pending`, `/runs/{id}`, the inbox's
# form) is taken only while the run is still at that count, checked in the update's validator: a retried
# request or a stale page never answers the question, or approves the call, that came next. The count is the
# run's over all its executions (a resume carries it on), published in the memo. Runs started before publish
# none and take any count, as they did.
SEGMENTS_PUBLISHED = "endstate-segments-published"
# A run started by Temporal's own tools (a Schedule, a parent workflow, `temporal workflow start`) rather than
# Endstate's client carries no search attribute or memo of its own: once prepared, the workflow sets its agent
# and task, so `runs`, `pending` and the pending-help gauges show it by its agent as any other run. Runs
# started before set the task type only, as they did.
STARTED_ANYWHERE = "endstate-agent-and-task-set-by-the-workflow"
START_SHAPE = '{"agent": NAME, "task": TEXT, "task_type": NAME or null, "state": OBJECT}'
NO_INPUT = RawValue(Payload())  # what `run` is given for a start with no input (`temporal workflow start`)
READY_TIMEOUT = timedelta(seconds=20)  # in all, retries too: within the service's 30 s for a call
# The check is tried again about a second apart until READY_TIMEOUT: mid-deploy, workers from before
# `endstate.ready` fail it as unregistered, and any new worker polling within the window takes it (three
# attempts refused a reply whenever three old workers were asked first). A worker's refusal is final.
READY_RETRY = TemporalRetry(initial_interval=timedelta(seconds=0.5), maximum_interval=timedelta(seconds=1))
BEFORE = "The run was cancelled before it began."
WAIT_CANCELLED = "The run was cancelled while it waited for a person; resume it to wait again."
MEMO_TEXT = 2000  # characters of note and summary kept in the memo
# Temporal takes at most this many updates in flight on one execution (its default
# `history.maxInFlightUpdates`) and refuses the next: a read that waits for a segment only a reply can begin
# (`segment` on a run that waits for a person) is refused while one more would leave the reply no room (ten
# such reads kept every reply out: the run could not be answered until its deadline).
MAX_IN_FLIGHT_UPDATES = 10
# Reads taken while the run ran (each waiting for a segment) may come to wait for a reply once the run asks
# for one: when they leave the reply no room, the newest of them are refused then, as the validator refuses a
# new one. Runs started before kept them waiting (the reply refused by Temporal until the run's deadline).
READS_MAKE_ROOM = "endstate-reads-make-room-for-a-reply"
# A run whose execution's history grew past the worker's `continue_after_events` (or that Temporal suggests
# to continue as new) goes on in a new execution of its workflow at its next turn boundary, from its snapshot
# as a checkpoint (no stop in its journal, none counted): a worker takes up a long run by replaying one
# execution's history, not all of it, and the run is not stopped `history_too_large`. A run about to wait
# for a person hands over first when past the bound. Runs started before never continue as new.
CONTINUE_AS_NEW = "endstate-continue-as-new-past-a-bound"
# The worker settings that change what commands a run makes are read from its history, not from the
# worker that replays it: where it hands over (`continue_after_events`), and whether a cancelled turn, or
# a cut model call, is waited for with a timer (`cancel_grace`, `cut_grace`: 0 waits for none). The
# execution asks its worker once, as it begins, in a local activity (`_wire.WORKER_SETUP`) whose answer
# its history keeps. Workers of one task queue may not share them (a deploy that lowers the bound, or sets
# one where it was None; a Replayer, which has the defaults): a worker of a lower bound that took up an
# execution past it replayed a hand-over its history lacked (nondeterminism: the task failed on every
# such worker, the run never went on). An execution keeps the settings it began with; the next one takes
# its worker's. Executions begun before read the settings of whichever worker replays them, as they did.
SETUP_RECORDED = "endstate-worker-setup-recorded"
SETUP_TIMEOUT = timedelta(seconds=10)
# A hand-over whose start (the snapshot, mostly) is over a payload carries the snapshot compressed when that
# fits (`_wire.PACKED`): such a run stayed in its execution, its history growing to `history_too_large`.
# Runs started before went on in their execution, as they did.
PACKED_HAND_OVER = "endstate-hand-over-a-packed-snapshot"
# A result whose snapshot is over a payload keeps it packed when that fits (`_wire.PACKED`, beside `snapshot`
# None), so the run can still be resumed or extended. Runs ended before left it out, as they did.
PACKED_RESULT = "endstate-result-keeps-a-packed-snapshot"
# A reply carries who gave it (`by`, the name the store's runner keeps): once taken, the run keeps it with
# its time, kind and text in the memo (`_wire.ANSWERED`, carried to the run's next executions), where `runs`,
# `pending` and the inbox read it, and a reply refused because one came first is told whose it was. Runs
# started before kept no name, and a worker from before takes none (the client sends the reply without it).
# A reply taken also ends the run's wait in visibility at once (as the store's claim makes a run running), not
# when its next segment ends: `pending` and the pending-help gauges no longer list a run answered already.
ANSWERER_KEPT = "endstate-answerer-kept"
# A cancel that comes once the run has ended (its last segment over, its catalog `cleanup` under way) lets the
# cleanup run to its end, as the store's runner runs a finished run's cleanup whatever comes after: the
# workflow waits for it, and its result is the run's own stop. Runs started before cancelled the cleanup's
# activity and closed at once (a cleanup not begun yet never ran), as they did.
CLEANUP_OUTLASTS_CANCEL = "endstate-cleanup-outlasts-a-late-cancel"
# An operator ends a run no worker holds (`TemporalRuns.end`, `endstate end --temporal`), as the store's
# runner `end`s one: a waiting run on the `END` update, a cancelled one (its workflow closed) in a new
# execution whose start carries `_wire.ENDED`. Either ends `error` (`ended_by_operator`) at once, observed as
# a stop of no turns, its snapshot kept in its result (not resumable), then its catalog `cleanup` runs. No
# patch: a history from before holds neither the update nor the start key, and replays through the same
# commands.
CARRIED = ("agent", "task", "task_type", "state", "plan")  # what of the run its next execution is given
CUT_TO = (100_000, 10_000, 1_000, 100)  # characters each text is cut to, in turn, until a result fits


@dataclasses.dataclass(frozen=True)
class ManyInputs:
    """What `run` is given for a start of two inputs or more (see `worker.OneInput`): how many."""

    count: int


@dataclasses.dataclass
class Reply:
    """A person's reply to a waiting run."""

    answer: str | None
    approved: bool | None
    at: float
    by: str | None = None  # who gave it (None: no name)

    def kept(self) -> dict[str, Any]:
        """The reply as the memo keeps it (`_wire.ANSWERED`): who, when, its kind and its text (cut)."""
        text = None if self.answer is None else self.answer[:MEMO_TEXT]
        kind = answer_kind(self.answer, self.approved)
        return dict(zip(w.ANSWERED_FIELDS, (self.by, self.at, kind, text), strict=True))


class CancelRequested:
    """The loop's cancel signal on a workflow: set once the workflow is cancelled, or once an activity
    said the run's catalog entry's `cancel` signal is set (`ref.cancelled`)."""

    def __init__(self) -> None:
        self.requested = False
        self.ref: RunRef | None = None
        self.bound: int | None = None  # history events past which the run hands over (None: never)
        self.carried = 0  # the history's bytes when the execution began: the run's snapshot it was given
        self.boundaries = 0  # turn boundaries the loop asked about in this execution
        self.handed = False  # the loop was told to hand the run over (`CONTINUE_AS_NEW`)

    def is_set(self) -> bool:
        return self.requested or (self.ref is not None and self.ref.cancelled)

    def hand_over(self) -> bool:
        """Asked by the loop between turns: whether the run goes on in a new execution from here. Never
        at the execution's first boundary (a bound below one turn's events never lets it move on)."""
        self.boundaries += 1
        self.handed = self.boundaries > 1 and self.past_bound()
        return self.handed

    def past_bound(self) -> bool:
        """Whether this execution's history is past `bound` events, or Temporal suggests continuing as new
        (some 4,000 events or 4 MB by default) once the execution has added more than it was given: a
        long run's snapshot alone nears 4 MB, and it handed over at every other turn."""
        if self.bound is None:
            return False
        info = workflow.info()
        if info.get_current_history_length() > self.bound:
            return True
        return info.get_current_history_size() > 2 * self.carried and info.is_continue_as_new_suggested()


async def _worker_setup() -> WorkerSetup:
    """This worker's setup, with the settings that change the run's commands as the worker that began this
    execution gave them (`SETUP_RECORDED`)."""
    queue = workflow.info().task_queue
    setup = lookup(queue)
    if not workflow.patched(SETUP_RECORDED):  # an execution begun before: this worker's, as it was
        return setup
    recorded: dict[str, Any] = await workflow.execute_local_activity(
        w.WORKER_SETUP,
        {"task_queue": queue},
        start_to_close_timeout=SETUP_TIMEOUT,
        retry_policy=TemporalRetry(maximum_attempts=3),
    )
    return dataclasses.replace(setup, **{k: v for k, v in recorded.items() if k in w.RECORDED_SETUP})


Segment = Callable[[CancelSignal | None], Coroutine[Any, Any, RunResult]]


@workflow.defn(name=w.WORKFLOW)
class EndstateRun:
    """One Endstate run, from its task (or a cancelled execution's snapshot) to its end."""

    def __init__(self) -> None:
        self._segments = 0  # ended in this execution
        self._before = 0  # ended in the run's earlier executions (a resumed run)
        self._published = False  # the run's count is in its memo (`SEGMENTS_PUBLISHED`)
        self._last: RunResult | None = None
        self._waiting: RunResult | None = None
        self._reply: Reply | None = None
        self._done = False  # the run's last segment has ended: nobody waits for another
        self._cancel = CancelRequested()
        self._ref: RunRef | None = None
        self._checking = False  # a reply is being checked (see `REPLY_CHECKED`): another is refused
        self._in_flight = 0  # updates whose handlers run (see `MAX_IN_FLIGHT_UPDATES`)
        self._reads: list[int] = []  # the `segment` reads in flight (their numbers), oldest first
        self._next_read = 0
        self._moved: int | None = None  # handing over: this execution's segments the next one does not repeat
        self._end: str | None = None  # an operator's note, once `end` was taken (the run waited)
        self._setup = WorkerSetup()  # this execution's (see `SETUP_RECORDED`), once it is read

    @workflow.run
    async def run(self, given: RawValue = NO_INPUT) -> dict[str, Any]:
        start, unread = _start_of(given)
        start, unread = _unpacked(start, unread)
        if problem := unread or _start_problem(start):  # by hand, not by Endstate's client: no run, said why
            bare = {"agent": start.get("agent") if isinstance(start, dict) else None}
            bare["agent"] = bare["agent"] if is_text(bare["agent"]) else ""
            return await self._closing(bare, self._bare(bare, StopReason.ERROR, problem, "bad_start"))
        run = {"state": {}, "task_type": None, **start}  # a start by hand may leave these out
        self._before = _count_of(run.pop("segments", 0))
        if w.ENDED in run:  # a cancelled run an operator ends (`_wire.ENDED`): nothing runs
            return await self._ended_cancelled(run, run.pop(w.ENDED))
        check_cancel = workflow.patched(CATALOG_CANCEL)
        try:
            if "plan" not in run:
                run.update(await self._prepare({**run, "check_cancel": True} if check_cancel else run))
        except ActivityError as exc:
            if not is_cancelled_exception(exc):
                return await self._closing(run, self._unprepared(run, exc))
            return await self._closing(
                run, self._bare(run, StopReason.CANCELLED, "Cancelled before it began.")
            )
        except asyncio.CancelledError:
            return await self._closing(
                run, self._bare(run, StopReason.CANCELLED, "Cancelled before it began.")
            )
        ref = RunRef(
            workflow.info().workflow_id, run["agent"], run["task"], run["plan"]["task_type"], run["state"]
        )
        ref.check_cancel, ref.cancelled = check_cancel, bool(run.pop("cancel", False))
        self._ref = self._cancel.ref = ref
        self._setup = await _worker_setup()
        agent = workflow_agent(run["plan"], ref, self._setup)
        handed = bool(run.pop("handed", False))  # a hand-over's execution: no resume to check
        resumed = "plan" in start and not handed and workflow.patched(RESUME_CHECKED)  # see `RESUME_CHECKED`
        if resumed and (problem := await self._unready(_resumed_state(run))):
            return await self._closing(run, self._not_resumed(run, problem))
        result = await self._segments_of(agent, run)
        if result.reason is not StopReason.CANCELLED:
            await self._cleanup(run)
        return await self._closing(run, result)

    # -- segments --------------------------------------------------------

    async def _segments_of(self, agent: Agent, run: dict[str, Any]) -> RunResult:
        """The run's segments in this execution, until one ends it (or it continues as new)."""
        if workflow.patched(CONTINUE_AS_NEW):
            self._cancel.carried = workflow.info().get_current_history_size()
            self._cancel.bound = self._setup.continue_after_events
        result = await self._first_segment(agent, run)
        while True:
            if self._cancel.handed:  # paused at a turn boundary, past the bound
                result = await self._hand_over(agent, run, result, self._segments)
                continue
            self._ended(result)
            if result.reason is not StopReason.NEED_HELP:
                break
            if self._hands_over_to_wait():
                await self._hand_over(agent, run, result, self._segments - 1)  # waits again there
            result = await self._after_wait(agent, result)
        return result

    def _hands_over_to_wait(self) -> bool:
        """Whether the run, about to wait for a person, continues as new first (not while it waits): past
        the bound, uncancelled, and having run a turn here (an execution that began waiting waits)."""
        return not self._cancel.requested and self._cancel.boundaries > 0 and self._cancel.past_bound()

    async def _hand_over(self, agent: Agent, run: dict[str, Any], paused: RunResult, moved: int) -> RunResult:
        """Continue as new from `paused`'s snapshot, `moved` of this execution's segments behind it (the
        next one begins with the segment `paused` is in); the reads and replies in flight are told to
        follow. When the snapshot is too large to carry, even packed (`PACKED_HAND_OVER`), the run goes on
        here from it instead."""
        assert paused.snapshot is not None
        snap = paused.snapshot
        start: dict[str, Any] = {k: run[k] for k in CARRIED if k in run}
        start.update(segments=self._before + moved, snapshot=snap.to_json())
        if (size := w.payload_size(start)) > w.MAX_PAYLOAD_BYTES and workflow.patched(PACKED_HAND_OVER):
            start = w.packed_start(start)
        if w.payload_size(start) <= w.MAX_PAYLOAD_BYTES:
            self._moved = moved
            try:
                await workflow.wait_condition(workflow.all_handlers_finished)
                # readers see the run as it was (it waits once its next execution has begun to: a reply
                # that came before would be refused), until that execution publishes its segment
                waits = SearchAttributePair(w.SA_WAITING, False)
                workflow.continue_as_new(
                    {**start, "handed": True},
                    memo=dict(workflow.memo()),
                    search_attributes=workflow.info().typed_search_attributes.updated(waits),
                )
            except asyncio.CancelledError:  # cancelled meanwhile: the run goes on here, to its cancel
                self._cancel.requested, self._moved = True, None
        else:
            workflow.logger.warning(
                "run %s: its snapshot is too large to continue as new (its start: %d bytes, %d packed)",
                paused.run_id,
                size,
                w.payload_size(start),
            )
        self._cancel.bound, self._cancel.handed = None, False
        if paused.reason is StopReason.NEED_HELP:
            return paused
        return await self._segment(lambda cancel: agent.aresume(snap, now=now(), cancel=cancel))

    async def _prepare(self, run: dict[str, Any]) -> dict[str, Any]:
        args = {**run, "run_id": workflow.info().workflow_id}
        out: dict[str, Any] = await workflow.execute_activity(
            w.PREPARE,
            args,
            start_to_close_timeout=PREPARE_TIMEOUT,
            heartbeat_timeout=_heartbeat(),
            retry_policy=catalog_room(TemporalRetry(maximum_attempts=3), lookup(workflow.info().task_queue)),
        )
        attributes = [w.SA_TASK_TYPE.value_set(out["plan"]["task_type"])]
        if workflow.patched(STARTED_ANYWHERE):
            attributes.append(w.SA_AGENT.value_set(run["agent"]))
            if workflow.memo_value("task", None) is None:
                workflow.upsert_memo({"task": run["task"]})
        workflow.upsert_search_attributes(attributes)
        return {**out, "prepared": True}

    async def _first_segment(self, agent: Agent, run: dict[str, Any]) -> RunResult:
        if not run.get("snapshot"):
            run_id = workflow.info().workflow_id
            return await self._segment(
                lambda cancel: agent.arun(run["task"], run_id=run_id, state=run["state"], cancel=cancel)
            )
        snap = Snapshot.from_json(run["snapshot"])
        if snap.suspension is not None:  # cancelled while it waited: it waits again, for the same deadline
            return _waiting(snap)
        # a limit stop given more budget (read at the bounds: an older client's `more` may be past them)
        more = bounded_extension(**run["more"]) if run.get("more") else None
        return await self._segment(lambda cancel: agent.aresume(snap, more=more, now=now(), cancel=cancel))

    async def _segment(self, drive: Segment) -> RunResult:
        """Drive one segment of the loop. A cancel lets it end at its next turn, as a runner's cancel
        does (the tool in flight ends and its result is kept); past `cancel_grace` it is cut there."""
        if not workflow.patched(GRACEFUL_CANCEL):  # a run started before is cut at once, as it was
            return await drive(None)
        task = asyncio.create_task(drive(self._cancel))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            self._cancel.requested = True  # the loop stops before its next turn
        try:
            await workflow.wait_condition(task.done, timeout=self._setup.cancel_grace)
        except TimeoutError:
            if self._ref is not None:
                self._ref.cut = True  # a call's answer that comes now is not taken
            task.cancel()  # cut where it is: a call in flight is recorded as of unknown outcome
        return await task

    async def _after_wait(self, agent: Agent, waiting: RunResult) -> RunResult:
        """Wait for a person until the deadline; continue with the reply, or under the help policy."""
        s, snap = waiting.suspension, waiting.snapshot
        assert s is not None and snap is not None
        if self._cancel.requested:  # cancelled while the segment that asked ran: it waits no more
            return dataclasses.replace(waiting, reason=StopReason.CANCELLED, note=WAIT_CANCELLED)
        self._waiting = waiting
        try:
            if s.deadline > now():
                replied = lambda: self._reply is not None or self._end is not None  # noqa: E731
                await workflow.wait_condition(replied, timeout=s.deadline - now())
        except TimeoutError:
            pass
        except asyncio.CancelledError:
            return dataclasses.replace(waiting, reason=StopReason.CANCELLED, note=WAIT_CANCELLED)
        finally:
            self._waiting = None
        if self._end is not None:  # an operator ended it (`end`): taken over any reply or deadline
            return self._operator_end(agent.hooks, (agent.model.name, agent.model.provider), snap, self._end)
        reply, self._reply = self._reply, None
        if reply is None:
            return await self._segment(
                lambda cancel: agent.aexpire(snap, now=max(now(), s.deadline), cancel=cancel)
            )
        return await self._segment(
            lambda cancel: agent.aresume(
                snap, reply.answer, approved=reply.approved, now=reply.at, cancel=cancel
            )
        )

    async def _cleanup(self, run: dict[str, Any]) -> None:
        """Let the ended run's world go (its catalog entry's `cleanup`): a cancel that comes meanwhile does
        not stop it (`CLEANUP_OUTLASTS_CANCEL`)."""
        args = {"run_id": workflow.info().workflow_id, "agent": run["agent"], "state": run["state"]}
        outlasts = workflow.patched(CLEANUP_OUTLASTS_CANCEL)
        try:
            call = workflow.start_activity(
                w.CLEANUP,
                args,
                start_to_close_timeout=PREPARE_TIMEOUT,
                heartbeat_timeout=_heartbeat(),
                retry_policy=TemporalRetry(maximum_attempts=3),
            )
            await (_outlasting_cancel(call) if outlasts else call)
        except ActivityError:
            workflow.logger.warning("cleanup of run %s failed", workflow.info().workflow_id)
        except asyncio.CancelledError:  # a run started before: a cancel now stops only its cleanup
            workflow.logger.warning("cleanup of run %s was cancelled", workflow.info().workflow_id)

    async def _ended_cancelled(self, run: dict[str, Any], ended: Any) -> dict[str, Any]:
        """End the cancelled run this execution was started for (`_wire.ENDED`), as an operator asked: its
        stop observed by the worker's hooks (no agent is built: nothing runs), then its cleanup."""
        ended = ended if isinstance(ended, dict) else {}
        run.pop("plan", None)  # `{}`, for a worker from before (see `_wire.ENDED`): the run's is in `ended`
        if isinstance(plan := ended.get("plan"), dict):
            run["plan"] = plan
        else:  # cancelled before it was prepared
            plan = {}
        note = ended.get("note")
        task_type = plan.get("task_type") or run.get("task_type") or "default"
        self._ref = RunRef(workflow.info().workflow_id, run["agent"], run["task"], task_type, run["state"])
        hooks = ReplaySafeHooks(lookup(workflow.info().task_queue).hooks)
        model = (str(plan.get("model", "")), str(plan.get("provider", "")))
        result = self._operator_end(hooks, model, _snapshot_of(run), note)
        self._ended(result)
        await self._cleanup(run)
        return await self._closing(run, result)

    def _operator_end(
        self, hooks: RunHooks, model: tuple[str, str], snap: Snapshot | None, note: Any
    ) -> RunResult:
        """The run ended as an operator asked (`END`, `_wire.ENDED`): `error`, `ended_by_operator`, in the
        store's runner's words, its snapshot kept (its journal, for review: no resume takes an error)."""
        assert self._ref is not None
        spent = snap.usage if snap is not None else None
        result = RunResult(
            self._ref.run_id,
            self._ref.agent,
            self._ref.task_type,
            StopReason.ERROR,
            note=operator_end_note(note),
            error_type=ENDED_BY_OPERATOR,
            turns=spent.turns if spent else 0,
            usage=spent.usage if spent else Usage(),
            active_seconds=spent.active_seconds if spent else 0.0,
            waiting_seconds=spent.waiting_seconds if spent else 0.0,
            snapshot=snap,
        )
        return self._observed_end(hooks, model, result, snap)

    def _observed_end(
        self, hooks: RunHooks, model: tuple[str, str], result: RunResult, snap: Snapshot | None
    ) -> RunResult:
        """Show the worker's hooks (live, never on replay) a stop no loop ran: a segment of no turns that
        resumes the run's last stop, counted and traced as any stop (as the store's runner's `end`)."""
        assert self._ref is not None
        stopped = snap is not None and snap.kind is not SnapshotKind.CHECKPOINT
        link = SegmentLink(snap.trace_id, snap.span_id) if snap and snap.trace_id and snap.span_id else None
        info = RunInfo(
            run_id=result.run_id,
            agent=result.agent,
            task_type=result.task_type,
            model=model[0],
            provider=model[1],
            task=self._ref.task,
            segment=max(2, self._before + self._segments + 1),  # never a run's first: its start was counted
            continues=link,
            started_at=now(),
            resumed_from=str(snap.reason) if stopped and snap is not None else None,
            resumed_stopped_at=snap.stopped_at if snap is not None else None,
        )
        observer = guard(hooks, info)
        result = dataclasses.replace(result, trace_id=observer.trace_id or result.trace_id)
        observer.run_ended(result)
        return result

    # -- what readers see ------------------------------------------------

    def _ended(self, result: RunResult) -> None:
        """A segment ended: publish it (search attributes, memo) and wake whoever waits for it."""
        self._segments += 1
        self._published = workflow.patched(SEGMENTS_PUBLISHED)
        self._last = result
        s = result.suspension if result.reason is StopReason.NEED_HELP else None
        workflow.upsert_search_attributes(
            [
                w.SA_STOP_REASON.value_set(str(result.reason)),
                w.SA_WAITING.value_set(s is not None),
                w.SA_SUSPENDED_AT.value_set(w.utc(s.suspended_at)) if s else w.SA_SUSPENDED_AT.value_unset(),
            ]
        )
        read = {"segments": self._before + self._segments} if self._published else {}
        workflow.upsert_memo({"result": fitted(_memo(result)), **read, w.STATE: _published_state(result)})

    async def _closing(self, run: dict[str, Any], result: RunResult) -> dict[str, Any]:
        """Let the updates that wait for a segment answer, then end with the result."""
        if self._last is not result:
            self._ended(result)
        self._done = True
        with contextlib.suppress(asyncio.CancelledError):  # the run has ended: a cancel now cannot lose it
            await workflow.wait_condition(workflow.all_handlers_finished)
        return self._finish(run, result)

    def _finish(self, run: dict[str, Any], result: RunResult) -> dict[str, Any]:
        if self._last is not result:
            self._ended(result)
        keep: dict[str, Any] = {k: run[k] for k in CARRIED if k in run}
        if self._published:  # a resumed execution counts on from here
            keep["segments"] = self._before + self._segments
        return {"result": _carried(result, w.MAX_PAYLOAD_BYTES - w.payload_size(keep)), "run": keep}

    def _bare(
        self, run: dict[str, Any], reason: StopReason, note: str, error_type: str | None = None
    ) -> RunResult:
        task_type = run.get("task_type") or "default"
        return RunResult(
            workflow.info().workflow_id, run["agent"], task_type, reason, note=note, error_type=error_type
        )

    def _not_resumed(self, run: dict[str, Any], problem: str) -> RunResult:
        """The run's stop as it was before this execution (cancelled, or at a limit), saying why it did
        not go on: it stays resumable."""
        note = f"Not resumed: {problem}, then resume it again. The run is left as it was."
        if not run.get("snapshot"):
            return self._bare(run, StopReason.CANCELLED, note, w.NOT_RESUMED)
        snap = Snapshot.from_json(run["snapshot"])
        stop = next((e for e in reversed(snap.journal) if isinstance(e, Stopped)), None)
        return RunResult(
            snap.run_id,
            snap.agent,
            snap.task_type,
            stop.reason if stop else StopReason.CANCELLED,
            limit=stop.limit if stop else None,
            note=note,
            turns=snap.usage.turns,
            usage=snap.usage.usage,
            error_type=w.NOT_RESUMED,
            snapshot=snap,
        )

    def _unprepared(self, run: dict[str, Any], exc: ActivityError) -> RunResult:
        cause = exc.cause if isinstance(exc.cause, ApplicationError) else None
        note = cause.message if cause else f"the run could not be prepared: {exc.cause or exc}"
        error_type = (cause.type if cause else None) or "prepare_failed"
        return self._bare(run, StopReason.ERROR, note, error_type)

    # -- people ----------------------------------------------------------

    @workflow.update(name=w.ANSWER)
    async def answer(
        self, text: str, wait: bool = True, segments: Any = None, by: Any = None
    ) -> dict[str, Any]:
        """Answer the question (given by `by`: a name, or None); with `wait`, the result of the segment
        that follows."""
        return await self._take(Reply(text, None, now(), _named(by)), wait)

    @answer.validator
    def _answer_ok(self, text: str, wait: bool = True, segments: Any = None, by: Any = None) -> None:
        _check_text("an answer", text)
        _check_body(w.ANSWER, wait)
        _check_by(by)
        self._check_reply(Answer(text), segments)

    @workflow.update(name=w.APPROVE)
    async def approve(self, wait: bool = True, segments: Any = None, by: Any = None) -> dict[str, Any]:
        return await self._take(Reply(None, True, now(), _named(by)), wait)

    @approve.validator
    def _approve_ok(self, wait: bool = True, segments: Any = None, by: Any = None) -> None:
        _check_body(w.APPROVE, wait)
        _check_by(by)
        self._check_approval(segments)

    @workflow.update(name=w.DENY)
    async def deny(
        self, reason: str = "", wait: bool = True, segments: Any = None, by: Any = None
    ) -> dict[str, Any]:
        return await self._take(Reply(reason or None, False, now(), _named(by)), wait)

    @deny.validator
    def _deny_ok(self, reason: str = "", wait: bool = True, segments: Any = None, by: Any = None) -> None:
        _check_text("a denial's reason", reason)
        _check_body(w.DENY, wait)
        _check_by(by)
        self._check_approval(segments)

    @workflow.update(name=w.END)
    async def end(self, note: str = "") -> dict[str, Any]:
        """End the waiting run as an operator asks (`error`, `ended_by_operator`, the note kept), as the
        store's runner's `end`; the run's result once it has ended and its cleanup has run."""
        with self._in_hand():
            if self._waiting is None:  # its deadline's timer came first, in the same step: it runs on
                raise ApplicationError("stopped waiting meanwhile (its deadline passed)", type="NotClaimable")
            self._end = note  # the wait, not resumed yet, sees it when it is: the run ends
            await workflow.wait_condition(lambda: self._done)
        assert self._last is not None
        return fitted(self._last.to_dict())

    @end.validator
    def _end_ok(self, note: str = "") -> None:
        _check_text("an operator's note", note)
        if self._done:
            reason = self._last.reason if self._last else StopReason.ERROR
            raise ApplicationError(f"has ended already ({reason})", type="NotClaimable")
        if self._end is not None:
            raise ApplicationError("is being ended already (by an operator)", type="NotClaimable")
        if not self._waits_for_reply():
            raise ApplicationError(
                "is running, held by a live worker (Temporal's); nothing was changed. Cancel it (`temporal "
                "workflow cancel --workflow-id RUN_ID`: it then ends cancelled), then end it",
                type="NotClaimable",
            )

    @workflow.update(name=w.SEGMENT)
    async def segment(self, n: Any) -> dict[str, Any]:
        """The result of segment `n` of this execution, once it has ended. `n` is taken as any
        value and checked by the validator: a refusal, never a workflow task that fails."""
        with self._in_hand():
            await self._read(n)
        assert self._last is not None
        return fitted(self._last.to_dict())

    async def _read(self, n: int) -> None:
        """Until segment `n` has ended; refused (`_no_room`) once the read leaves a reply no room."""

        def ended() -> bool:
            return self._segments >= n or self._done

        def moved() -> bool:
            return self._moved is not None and not ended()

        read = self._next_read = self._next_read + 1
        self._reads.append(read)
        try:
            await workflow.wait_condition(lambda: ended() or moved() or self._crowded(read, n))
            if moved():
                raise self._follow(n)
            if not ended() and workflow.patched(READS_MAKE_ROOM):  # see `READS_MAKE_ROOM`
                raise self._no_room(n, self._in_flight - 1)
            await workflow.wait_condition(lambda: ended() or moved())
            if moved():
                raise self._follow(n)
        finally:
            self._reads.remove(read)

    @segment.validator
    def _segment_ok(self, n: Any) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ApplicationError(f"segment must be a whole number from 1, not {n!r}", type="AnswerError")
        if self._moved is not None and n > self._segments:
            raise self._follow(n)
        if n > self._segments and self._waits_for_reply() and self._in_flight + 2 > MAX_IN_FLIGHT_UPDATES:
            raise self._no_room(n, self._in_flight)

    def _waits_for_reply(self) -> bool:
        """The run waits for a person, and no reply is being taken."""
        waits = self._waiting is not None and self._reply is None and self._end is None
        return waits and not (self._done or self._checking)

    def _crowded(self, read: int, n: int) -> bool:
        """Whether `read` (a wait for segment `n`) is among the newest reads that leave a reply to the run,
        which waits for a person, no room among the updates in flight (see `READS_MAKE_ROOM`)."""
        over = self._in_flight - (MAX_IN_FLIGHT_UPDATES - 1)
        return over > 0 and n > self._segments and self._waits_for_reply() and read in self._reads[-over:]

    def _follow(self, n: int) -> ApplicationError:
        """Segment `n` of this execution will end in the run's next one (it continues as new): which
        segment of that one to read, in the error's details."""
        assert self._moved is not None
        then = n - self._moved
        return ApplicationError(
            f"the run continued as new: read segment {then} of its latest execution", then, type=w.CONTINUED
        )

    def _no_room(self, n: int, others: int) -> ApplicationError:
        return ApplicationError(
            f"segment {n} begins only once the run, which waits for a person, is replied to, and {others} "
            f"calls wait on the run already: Temporal takes at most {MAX_IN_FLIGHT_UPDATES} updates in "
            "flight on a run, and the reply needs one. Read the run once it is replied to, or wait on it "
            "with fewer callers",
            type="NotClaimable",
        )

    @contextlib.contextmanager
    def _in_hand(self) -> Iterator[None]:
        """Counts an update in flight while its handler runs (begun in the step its validator ran in)."""
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1

    @workflow.query(name=w.STATUS)
    def status(self) -> dict[str, Any]:
        return {
            "segments": self._segments,
            "waiting": self._waiting is not None and self._reply is None and self._end is None,
            "result": fitted(self._last.to_dict()) if self._last else None,
        }

    async def _take(self, reply: Reply, wait: bool) -> dict[str, Any]:
        with self._in_hand():
            return await self._taken(reply, wait)

    async def _taken(self, reply: Reply, wait: bool) -> dict[str, Any]:
        seen = self._segments
        if workflow.patched(REPLY_CHECKED):
            await self._ready_for(reply)
        self._reply = reply
        if workflow.patched(ANSWERER_KEPT):  # see `ANSWERER_KEPT`
            workflow.upsert_memo({w.ANSWERED: reply.kept()})
            workflow.upsert_search_attributes([w.SA_WAITING.value_set(False)])  # taken: no longer pending
        if not wait:
            return {}
        await workflow.wait_condition(lambda: self._segments > seen or self._done or self._moved is not None)
        if self._segments <= seen and not self._done:  # the segment it began goes on in the next execution
            raise self._follow(seen + 1)
        assert self._last is not None
        return fitted(self._last.to_dict())

    async def _ready_for(self, reply: Reply) -> None:
        """Refuse `reply` (`NOT_IN_CATALOG`, the run waiting still) unless a worker can go on with the run:
        one that lacks the run's agent, or the approved call's tool, would end it as error, the reply
        spent (a redeploy dropped or renamed them while the run waited)."""
        waiting = self._waiting
        if waiting is None or waiting.suspension is None or waiting.snapshot is None:  # as validated: never
            raise ApplicationError("the run is not waiting for a person", type="NotWaiting")
        pending = waiting.suspension.pending
        self._checking = True
        try:
            tool = pending.name if pending is not None and reply.approved else None
            if problem := await self._unready(waiting.snapshot.state, tool):
                raise ApplicationError(
                    f"{problem}, then reply again. The reply was not taken: the run still waits; nothing "
                    "was changed",
                    type=w.NOT_IN_CATALOG,
                )
        finally:
            self._checking = False
        if self._waiting is not waiting:  # its deadline passed, or it was cancelled, meanwhile
            reason = self._last.reason if self._last else "running"
            raise ApplicationError(f"the run stopped waiting meanwhile (it is {reason})", type="NotWaiting")

    async def _unready(self, state: dict[str, Any], tool: str | None = None) -> str | None:
        """Why no worker can go on with the run (the `READY` activity's refusal), or None when one can."""
        assert self._ref is not None
        check = {"run": self._ref.wire(dict(state)), "tool": tool}
        try:
            await workflow.execute_activity(
                w.READY,
                check,
                schedule_to_close_timeout=READY_TIMEOUT,  # no worker takes it: refused, not waited for
                retry_policy=READY_RETRY,
            )
        except ActivityError as exc:
            cause = _refusal_of(exc)
            return cause.message if cause else f"no worker could check the run ({exc.cause or exc})"
        return None

    def _expecting(self) -> str | None:
        """The pending tool's name, or None for a question; refuses when nothing waits."""
        if self._checking:
            raise ApplicationError("another reply to the run is being taken", type="NotWaiting")
        if self._waiting is None or self._reply is not None or self._end is not None:
            reason = self._last.reason if self._last else "running"
            raise ApplicationError(
                f"the run is not waiting for a person (it is {reason}{_answered()})", type="NotWaiting"
            )
        s = self._waiting.suspension
        assert s is not None
        if s.deadline <= now():
            raise ApplicationError("too late: the run's deadline has passed", type="NotWaiting")
        return s.pending.name if s.pending else None

    def _check_read(self, segments: Any) -> None:
        """Refuse a reply sent with the count it read (`segments`) once the run has moved past it."""
        if segments is None:
            return
        if not isinstance(segments, int) or isinstance(segments, bool) or segments < 0:  # published or not
            raise ApplicationError(
                f"segments must be the run's segments count as read (a whole number), not {segments!r:.40}",
                type="AnswerError",
            )
        if not self._published:
            return
        if segments != (now_at := self._before + self._segments):
            raise ApplicationError(
                f"the run moved on (segment {now_at}, not {segments}{_answered()}) since it was read: read "
                "the run again and answer its current question; nothing was changed",
                type="NotClaimable",
            )

    def _check_approval(self, segments: Any = None) -> None:
        self._check_reply(Approval(), segments)

    def _check_reply(self, reply: HumanReply, segments: Any = None) -> None:
        """Refuse a reply that does not fit what the run waits for (`reply_problem`, the loop's check)."""
        pending = self._expecting()
        self._check_read(segments)
        assert self._waiting is not None and self._waiting.suspension is not None  # _expecting checked
        if problem := reply_problem(reply, pending, self._waiting.suspension.question):
            raise ApplicationError(f"the run {problem}", type="AnswerError")


async def _outlasting_cancel(call: workflow.ActivityHandle[Any]) -> Any:
    """The activity's result once it has ended, whatever cancel of the workflow comes meanwhile: the
    cancel reaches this wait, never the activity (`asyncio.wait` leaves what it waits for as it is)."""
    while not call.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait([call])
    return call.result()


def _refusal_of(exc: ActivityError) -> ApplicationError | None:
    """A worker's refusal that failed the activity: its failure, or the last one before it timed out
    (refusals tried again until the check's own timeout: `_wire.CATALOG_WAIT`)."""
    for cause in (exc.cause, getattr(exc.cause, "cause", None)):
        if isinstance(cause, ApplicationError):
            return cause
    return None


def _heartbeat() -> timedelta:
    """The worker's heartbeat timeout: a worker that dies mid-call is noticed within it, not at the end of
    the call's whole timeout (a catalog's `prepare` or `cleanup` held its run `PREPARE_TIMEOUT`, 5 min)."""
    return timedelta(seconds=lookup(workflow.info().task_queue).heartbeat_seconds)


def _check_text(what: str, value: Any) -> None:
    """Refuse a reply that is not text: taken, it would fail every workflow task after it (the loop
    refuses it), and the run would wait, unreadable, for ever."""
    if not isinstance(value, str):
        raise ApplicationError(
            f"{what} must be text, not {type(value).__name__}: pass a string", type="AnswerError"
        )
    if problem := w.reply_too_large(what, value):  # taken, its update's event failed every workflow task
        raise ApplicationError(problem, type="AnswerError")


def _check_by(by: Any) -> None:
    """Refuse a reply whose `by` is no name (not text, too long, control or invisible characters), with
    the words the store's runner refuses it in."""
    try:
        answerer(by)
    except ValueError as exc:
        raise ApplicationError(str(exc), type="ConfigError") from None


def _named(by: Any) -> str | None:
    """The name a reply is given under, as checked by its validator (None: none)."""
    return answerer(by)


def _answered() -> str:
    """`; answered by NAME at TIME: what` of the run's last reply taken (the memo's `_wire.ANSWERED`), for a
    refusal; '' when none was kept."""
    kept = w.answered_of(workflow.memo_value(w.ANSWERED, None))
    note = answered_note(*(kept.get(k) for k in w.ANSWERED_FIELDS))
    return f"; {note}" if note else ""


# what Endstate's client sends as each reply's update input (WAIT, SEGMENTS and BY may be left out)
BODIES = {
    w.ANSWER: "[TEXT, WAIT, SEGMENTS, BY]",
    w.APPROVE: "[WAIT, SEGMENTS, BY] or none",
    w.DENY: "[REASON, WAIT, SEGMENTS, BY]",
}


def _check_body(update: str, wait: Any) -> None:
    """Refuse a reply whose input is not what Endstate's client sends (a `temporal workflow update` by
    hand, with a made-up input): taken, `approve` with `{"approved": false}` was an approval. Its
    `segments` is checked by `_check_read`."""
    if not isinstance(wait, bool):
        raise ApplicationError(
            f"the {update} update's input is {BODIES[update]}, as Endstate's client sends it: WAIT must be "
            f"true or false, not {wait!r:.60}. Use `endstate {update} RUN_ID`, or send that input",
            type="AnswerError",
        )


def _start_of(given: RawValue | Any) -> tuple[Any, str | None]:
    """The workflow's input, and why it could not be read, if so. It is read here, not by Temporal's
    worker, which fails every workflow task of an input it cannot decode: the run never ends."""
    if given is NO_INPUT:
        return None, f"the workflow was started with no input: it must be one JSON object {START_SHAPE}"
    if isinstance(given, ManyInputs):
        said = f"the workflow was started with {given.count} inputs: it must be one JSON object {START_SHAPE}"
        return None, said
    if not isinstance(given, RawValue):  # read already (a subclass's `run` that takes the start typed)
        return given, None
    try:
        return workflow.payload_converter().from_payload(given.payload), None
    except Exception as exc:  # an encoding no converter reads, JSON nested past the decoder's depth
        cause = exc.__cause__ or exc
        return None, (
            f"the workflow's input could not be read ({type(cause).__name__}: {cause!s:.200}): it must be "
            f"one JSON object {START_SHAPE}"
        )


def _unpacked(start: Any, unread: str | None) -> tuple[Any, str | None]:
    """The start with a hand-over's packed snapshot unpacked (`_wire.PACKED`), or why it could not be."""
    try:
        return w.unpacked(start), unread
    except (ValueError, zlib.error) as exc:
        return None, f"the hand-over's packed snapshot ({w.PACKED}) could not be read: {exc!s:.200}"


def _start_problem(start: Any) -> str | None:
    """What makes a workflow's input no run (a start from Temporal's own tools, not Endstate's client), or
    None. Taken as it is, it would fail every workflow task, the run running for ever with no reason."""
    if not isinstance(start, dict):
        return f"the workflow's input must be a JSON object {START_SHAPE}, not {type(start).__name__}"
    wrong = [
        key
        for key, ok in (
            ("agent", _label(start.get("agent"))),
            ("task", isinstance(start.get("task"), str) and ("plan" in start or is_text(start["task"]))),
            ("task_type", start.get("task_type") in (None, "") or _label(start["task_type"])),
            ("state", isinstance(start.get("state", {}), dict)),
        )
        if not ok
    ]
    if wrong:
        return (
            f"the workflow's input must be {START_SHAPE}: {', '.join(wrong)} "
            f"{'is' if len(wrong) == 1 else 'are'} not (a name is text of at most "
            f"{w.MAX_KEYWORD_BYTES:,} bytes as Temporal counts them: its JSON, where a letter beyond ASCII "
            "takes six)"
        )
    return None


def _label(value: Any) -> bool:
    """A name Temporal takes as a keyword search attribute (an agent, a task type)."""
    return is_text(value) and w.keyword_fits(value)


def _count_of(value: Any) -> int:
    """A segment count carried from an earlier execution (0 when there is none)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _resumed_state(run: dict[str, Any]) -> dict[str, Any]:
    """A resumed run's state: its snapshot's, or the state it started with (cancelled before its first
    checkpoint)."""
    if run.get("snapshot"):
        return dict(Snapshot.from_json(run["snapshot"]).state)
    return dict(run["state"])


def _snapshot_of(run: dict[str, Any]) -> Snapshot | None:
    """The snapshot a cancelled run's execution was given (None: cancelled before its first checkpoint)."""
    return Snapshot.from_json(run["snapshot"]) if run.get("snapshot") else None


def _waiting(snap: Snapshot) -> RunResult:
    """The waiting result a cancelled-while-waiting run is resumed into."""
    s = snap.suspension
    assert s is not None
    usage = snap.usage
    return RunResult(
        snap.run_id,
        snap.agent,
        snap.task_type,
        StopReason.NEED_HELP,
        note=s.question,
        turns=usage.turns,
        usage=usage.usage,
        suspension=s,
        snapshot=snap,
    )


def _carried(result: RunResult, room: int) -> dict[str, Any]:
    """The result as the workflow's result, in `room` bytes (a payload, less what the result goes with:
    the run's task, state and plan): its snapshot packed when only so it fits (`PACKED_RESULT`), left out
    when it does not fit even so (the workflow could never complete), and the note says so. Its other long
    texts are cut to fit first (`fitted`): the snapshot keeps them whole."""
    whole = w.result_json(result)
    snapshot = whole["snapshot"]
    data = {**fitted({**whole, "snapshot": None}, room), "snapshot": snapshot}
    if snapshot is None or w.payload_size(data) <= room:
        return data
    size = w.payload_size(snapshot)
    if workflow.patched(PACKED_RESULT) and (kept := _packed_result(whole, snapshot, room)):
        return kept
    workflow.logger.warning("run %s: its snapshot (%d bytes) is left out of the result", result.run_id, size)
    note = (
        f"{data['note'] or ''}\n[Endstate: the run's snapshot ({size:,} bytes) is too large for a Temporal "
        "payload and was not kept: this run cannot be resumed or extended.]"
    )
    return {**data, "snapshot": None, "note": note.strip()}


def _packed_result(data: dict[str, Any], snapshot: str, room: int) -> dict[str, Any] | None:
    """`data` (a result as JSON) with its `snapshot` packed under `_wire.PACKED`, `snapshot` None (what a
    client from before reads: a result without one), in `room` bytes; None when it does not fit so."""
    pack = w.packed(snapshot)
    said = (
        f"[Endstate: the run's snapshot ({w.payload_size(snapshot):,} bytes) is over a Temporal payload: it "
        f"is kept zlib-compressed ({len(pack):,} bytes, under {w.PACKED!r}), which resume and extend read; a "
        "client from before that reads no snapshot: resume the run with a newer one.]"
    )
    note = f"{data['note'] or ''}\n{said}".strip()
    rest = fitted({**data, "snapshot": None, "note": note}, room - w.payload_size({w.PACKED: pack}))
    kept = {**rest, w.PACKED: pack}
    return kept if w.payload_size(kept) <= room else None


def fitted(data: dict[str, Any], room: int = w.MAX_PAYLOAD_BYTES) -> dict[str, Any]:
    """`data` (a result as JSON, without its snapshot's weight) as it fits in `room` bytes: each
    long text in it (a question, a note, a pending call's argument, a verifier's failure) cut, and saying
    so, until it does. Past the limit, the worker could never complete the workflow task that carries it
    (an update's answer, the memo, the result): the run would wait for ever, with no stop reason."""
    if w.payload_size(data) <= room:
        return data
    for keep in CUT_TO:
        cut: dict[str, Any] = _cut(data, keep)
        if w.payload_size(cut) <= room:
            break
    workflow.logger.warning("a result of %d bytes was cut to fit a Temporal payload", w.payload_size(data))
    return cut


def _cut(value: Any, keep: int) -> Any:
    """`value` with each text longer than `keep` characters cut there, saying how long it was."""
    if isinstance(value, str) and len(value) > keep:
        return value[:keep] + f"... [Endstate: cut from {len(value):,} characters to fit a Temporal payload]"
    if isinstance(value, dict):
        return {k: _cut(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut(v, keep) for v in value]
    return value


def _published_state(result: RunResult) -> dict[str, Any] | None:
    """The run's state as `result`'s segment left it, for the memo (`_wire.STATE`): None (the key removed)
    when it kept no snapshot (finished) or the state is over `_wire.MEMO_STATE_BYTES`."""
    snap = result.snapshot
    if snap is None or w.payload_size(snap.state) > w.MEMO_STATE_BYTES:
        return None
    return snap.state


def _memo(result: RunResult) -> dict[str, Any]:
    data = result.to_dict()
    for key in ("note", "summary", "output", "last_text"):
        data[key] = str(data.get(key) or "")[:MEMO_TEXT]
    return data
