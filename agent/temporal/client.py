"""Endstate runs on Temporal from the caller's side: start, answer, approve, deny, resume, list.

    runs = await TemporalRuns.connect("127.0.0.1:7233")
    result = await runs.start("researcher", "Find ...")        # waits for the segment's end
    result = await runs.answer(result.run_id, "Use the 2024 figures")

Every call returns `RunResult`s or `RunRecord`s as the store-backed commands
do, and refuses what the run does not wait for with an `EndstateError`.

A client acts on the runs of its own task queue only, as it lists only those:
a run another deployment started on another queue of the namespace is not
found (`UnknownRun`, naming the queue it is on). To act on it, name its queue
(`TemporalRuns.connect(..., task_queue=...)`, the CLI's `--task-queue`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import (
    Client,
    WorkflowExecution,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowHistoryEventFilterType,
    WorkflowUpdateFailedError,
)
from temporalio.client import Plugin as ClientPlugin
from temporalio.common import (
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDConflictPolicy,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import ConnectConfig as ServiceConfig
from temporalio.service import RetryConfig, RPCError, RPCStatusCode, ServiceClient

from agent._state import extended
from agent._valid import is_text, is_whole
from agent.budget import Extension
from agent.durable.runner import (
    ENDED_BY_OPERATOR,
    RUN_ID,
    AnswerError,
    NotInCatalog,
    check_given_id,
    check_state,
    checked_answerer,
    given_reason,
    operator_end_note,
)
from agent.durable.store import NotClaimable, RunExists, RunRecord, RunStatus, StoreError, UnknownRun
from agent.durable.store.base import too_late
from agent.errors import ConfigError
from agent.journal import Journal, reply_problem
from agent.result import LimitKind, RunResult, StopReason
from agent.temporal import _wire as w
from agent.temporal._pollers import unpolled
from agent.text import LONE_SURROGATE, one_line
from agent.usage import Usage

_TEMPORAL_ENDED = {
    WorkflowExecutionStatus.FAILED: "the workflow failed",
    WorkflowExecutionStatus.TERMINATED: "the workflow was terminated",
    WorkflowExecutionStatus.TIMED_OUT: "the workflow timed out",
    WorkflowExecutionStatus.CANCELED: "the workflow was cancelled",
}
# how an execution that Temporal ended with no result (an operator's `temporal workflow terminate`, a
# workflow timeout, a failed workflow) ends as a run: `error`, with this `error_type`
_NO_RESULT = {
    WorkflowExecutionStatus.FAILED: "workflow_failed",
    WorkflowExecutionStatus.TERMINATED: "workflow_terminated",
    WorkflowExecutionStatus.TIMED_OUT: "workflow_timed_out",
}
MAX_KEYWORD_BYTES = w.MAX_KEYWORD_BYTES
CLOSE_EVENT = WorkflowHistoryEventFilterType.CLOSE_EVENT
CLOSING_WAIT = 30.0  # seconds to wait for an execution Temporal says is closing to close, then send again
log = logging.getLogger("endstate.temporal")


class ElsewhereRun(UnknownRun):
    """A run on another task queue of the namespace than the client's: not found here (404, exit 2)."""


class NoWorker(NotInCatalog):
    """No worker polls the run's task queue now: a reply or a resume sent would wait, silently, for one
    (this deployment cannot carry the run on now: HTTP 503, exit 2). Nothing was sent or changed."""


class TemporalUnavailable(StoreError):
    """Temporal did not answer (down, restarting, unreachable): the service's fault, not the request's
    (HTTP 503 with `Retry-After`, exit 2 with one line)."""

    headers: ClassVar[dict[str, str]] = {"Retry-After": "5"}


# what Temporal's client says when the server is down, restarting or out of reach (after its own retries)
_NOT_ANSWERING = {
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.RESOURCE_EXHAUSTED,
    RPCStatusCode.CANCELLED,
}
NO_SEARCH_ATTRIBUTE = "no mapping defined for search attribute"  # Temporal's words, before any worker ran
MAPPING_TRIES = 20  # starts tried, about 0.5 s apart, while attributes just registered are not yet mapped
# A worker that has not run a run replays its whole history in one workflow task, and Temporal times a
# task out after 10 s by default: measured here, 481 turns replayed in 8.7 s and 2,500 (about where a run
# stops at the event limit) in 47.9 s, so a long run would never be taken up by a new worker, each task
# timing out and tried again. 120 s leaves room for a run that stops at the event limit, on a loaded
# worker; the price: a worker that dies holding a workflow task holds its run up to that long, as does each
# retry a worker from before packing takes of a packed execution's task (README: it reports the failure once).
WORKFLOW_TASK_TIMEOUT = timedelta(seconds=120)
# How long `submit_resume` waits for a worker to check that it can go on with a resumed run (the workflow's
# check takes up to 20 s, its retries included): within the service's 30 s for a call.
RESUME_CHECK_S = 25.0
MEMO_NOTE = 2000  # characters of a note the memo keeps (as the workflow's own memo keeps them)
# An execution that ends a run no worker polls for (`end`) waits this long for a worker to count its stop and
# run its cleanup, then Temporal closes it: the run reads as ended all along (its memo holds its end).
ENDING_TIMEOUT = timedelta(days=7)
# the events that close an execution
_CLOSES = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    }
)


class TemporalRuns:
    """Runs on one Temporal namespace and task queue."""

    def __init__(self, client: Client, task_queue: str = w.TASK_QUEUE) -> None:
        self.client = client
        self.prompt = PromptCaps(client)
        self.task_queue = task_queue
        self.clock: Callable[[], float] = time.time  # what the queue's pollers' last polls are timed by

    @classmethod
    async def connect(
        cls, address: str, namespace: str = w.NAMESPACE, task_queue: str = w.TASK_QUEUE
    ) -> TemporalRuns:
        try:
            client = await Client.connect(address, namespace=namespace)
        except (RuntimeError, ValueError) as exc:  # unreachable, or no address at all
            raise ConfigError(
                f"cannot reach Temporal at {address!r} (namespace {namespace!r}): {exc}"
            ) from exc
        if problem := await _namespace_problem(client, address, namespace):
            del client  # dropped and collected now: one left to interpreter exit can abort it
            gc.collect()
            raise ConfigError(problem)
        return cls(client, task_queue)

    @property
    def shown(self) -> str:
        return f"Temporal namespace {self.client.namespace!r}"

    # -- starting and continuing -----------------------------------------

    async def start(
        self,
        agent: str,
        task: str,
        *,
        task_type: str | None = None,
        state: dict[str, Any] | None = None,
        run_id: str | None = None,
        wait: bool = True,
    ) -> RunResult | str:
        """Start a run; with `wait`, its first segment's result, else its run id at once."""
        if not is_text(task):
            raise ConfigError("task must be a non-empty string")
        check_given_id(run_id)
        run_id = run_id or _new_id()
        if not RUN_ID.fullmatch(run_id):
            raise ConfigError(
                f"run id {run_id!r} must be 1-64 ASCII letters, digits, '_', '-' or '.', "
                "not starting with '.'"
            )
        _check_label("agent", agent)
        if task_type:
            _check_label("task type", task_type)
        check_state(state or {})
        start = {"agent": agent, "task": task, "task_type": task_type, "state": dict(state or {})}
        if (size := w.payload_size(start)) > w.MAX_PAYLOAD_BYTES:
            raise ConfigError(
                f"the run's task and state are {size:,} bytes, over the {w.MAX_PAYLOAD_BYTES:,} an Endstate "
                "run sends in one Temporal payload: pass a shorter task (a reference to the document, not "
                "the document), keep the state small, or run this agent on the PostgreSQL store"
            )
        attributes = [SearchAttributePair(w.SA_AGENT, agent)]
        if task_type:
            attributes.append(SearchAttributePair(w.SA_TASK_TYPE, task_type))
        try:
            handle = await self._start_workflow(
                run_id,
                start,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                search_attributes=TypedSearchAttributes(attributes),
                memo={"task": task},
            )
        except WorkflowAlreadyStartedError as exc:
            raise RunExists(f"a run with id {run_id!r} already exists; pick another id") from exc
        return await self._segment(handle, 1) if wait else run_id

    async def _start_workflow(
        self, run_id: str, start: dict[str, Any], **options: Any
    ) -> WorkflowHandle[Any, Any]:
        """Start the run's workflow on this client's task queue. A namespace no worker has run on yet
        lacks Endstate's search attributes: they are registered here, as a worker would, and the run
        waits on the queue for one (a start before the workers is not refused). Temporal not
        answering is `TemporalUnavailable`; any other refusal a `ConfigError` saying why."""
        for attempt in range(MAPPING_TRIES):  # a server may take seconds to map attributes just added
            try:
                return await self.client.start_workflow(
                    w.WORKFLOW,
                    start,
                    id=run_id,
                    task_queue=self.task_queue,
                    task_timeout=WORKFLOW_TASK_TIMEOUT,
                    **{"id_conflict_policy": WorkflowIDConflictPolicy.FAIL, **options},
                )
            except RPCError as exc:
                if NO_SEARCH_ATTRIBUTE not in exc.message or attempt == MAPPING_TRIES - 1:
                    raise _rpc_error(run_id, exc) from exc
                if attempt == 0:
                    await self._register_search_attributes(exc)
                else:
                    await asyncio.sleep(0.5)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _register_search_attributes(self, missing: RPCError) -> None:
        from agent.temporal.worker import ensure_search_attributes

        namespace = self.client.namespace
        try:
            await ensure_search_attributes(self.client, namespace)
        except RPCError as exc:
            raise ConfigError(
                f"Temporal namespace {namespace!r} lacks Endstate's search attributes ({missing.message}) "
                f"and this client could not register them ({exc.message}): start an `endstate worker` on "
                "it first (it registers them), or have its operator add them; nothing was started"
            ) from exc

    async def answer(self, run_id: str, text: str, *, by: str | None = None) -> RunResult:
        """Answer a waiting run's question (`by`: who answers, kept on the run; None: no name); the
        result of the segment that follows."""
        return await self._reply(run_id, w.ANSWER, [text], by)

    async def approve(self, run_id: str, *, by: str | None = None) -> RunResult:
        return await self._reply(run_id, w.APPROVE, [], by)

    async def deny(self, run_id: str, reason: str = "", *, by: str | None = None) -> RunResult:
        return await self._reply(run_id, w.DENY, [given_reason(reason) or ""], by)

    async def submit(
        self,
        run_id: str,
        answer: str | None = None,
        approved: bool | None = None,
        segments: int | None = None,
        by: str | None = None,
    ) -> None:
        """Hand a waiting run its reply and return once the run has taken it (not when it has run on).
        With `segments` (the run's count as read: `RunRecord.segments`), only while the run is still
        there: once it has moved on, `NotClaimable` and nothing changed. `by` names who replies (kept
        on the run, as the store's runner keeps it; None: no name); a bad name is a `ConfigError`."""
        update, args = _update_of(answer, approved)
        await self._update(run_id, update, *_sent(args, False, segments, checked_answerer(by)))

    async def record(self, run_id: str) -> RunRecord | None:
        """One run as the store-backed commands show it, or None when there is no such run (one on
        another task queue is `UnknownRun`, naming its queue)."""
        try:
            execution = await self._described(run_id)
            record = await _record(execution)
            if execution.status is WorkflowExecutionStatus.COMPLETED:  # texts in full, not the memo's start
                record = _with_texts(record, (await self._outcome(self._pinned(execution)))["result"])
            return record
        except ElsewhereRun:
            raise
        except UnknownRun:
            return None

    async def started(self, run_id: str) -> RunRecord | None:
        """`record`, with the state the run's latest execution started with (read from its history, as
        visibility holds no state): what a start sent again is compared with."""
        record = await self.record(run_id)
        if record is None:
            return None
        execution = await self._described(run_id)
        try:
            async for event in self._pinned(execution).fetch_history_events():
                given = event.workflow_execution_started_event_attributes.input.payloads
                [start] = await self.client.data_converter.decode(given) if given else [{}]
                return dataclasses.replace(record, state=dict(start.get("state") or {}))
        except RPCError as exc:
            raise _rpc_error(run_id, exc) from exc
        return record

    async def resume(self, run_id: str, more: Extension | None = None) -> RunResult:
        """Continue a cancelled run from its snapshot, or, with `more`, a run that stopped at a limit with
        that much more budget added to its ceilings (as the store's runner does), in a new execution of
        its workflow; the result of that execution's first segment. `NotInCatalog` when no worker can go
        on with it (the run's agent or task type is not deployed): the run is left as it was."""
        result = await self._segment(await self._resumed(run_id, more), 1)
        if result.error_type == w.NOT_RESUMED:  # no worker can go on with it: the run is left as it was
            raise NotInCatalog(f"run {run_id}: {result.note}; nothing was changed")
        return result

    async def submit_resume(self, run_id: str, more: Extension | None = None) -> bool:
        """`resume`, returning once a worker has checked that it can go on with the run (not when its
        segment has ended): `NotInCatalog` when none can, the run left as it was, as `resume` says it.
        When no worker has checked it within `RESUME_CHECK_S` (the queue's worker died, say), it returns
        False: the new execution waits on the queue for one. True once one has."""
        handle = await self._resumed(run_id, more)
        try:
            closed = await asyncio.wait_for(_checked(handle), RESUME_CHECK_S)
        except RPCError as exc:
            raise _rpc_error(run_id, exc) from exc
        except TimeoutError:
            log.warning("run %s: resumed, and no worker has checked it yet: it waits for one", run_id)
            return False
        result = w.result_from_json((await self._outcome(handle))["result"]) if closed else None
        if result is not None and result.error_type == w.NOT_RESUMED:
            raise NotInCatalog(f"run {run_id}: {result.note}; nothing was changed")
        return True

    async def _resumed(self, run_id: str, more: Extension | None) -> WorkflowHandle[Any, Any]:
        result, run = await self._resumable(run_id, more)
        await self._check_polled(await self._described(run_id), "resume")
        start = {**run, "snapshot": result.snapshot.to_json() if result.snapshot else None}
        if more is not None:
            start["more"] = dataclasses.asdict(more)
        start = _fitting(run_id, start)
        # what `runs`, `/runs/{id}` and the inbox show; who answered last carried on, as a store's row is
        memo = {"task": run.get("task", ""), **await self._answered_memo(run_id)}
        try:
            return await self._start_workflow(
                run_id,
                start,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(w.SA_AGENT, run["agent"]),
                        SearchAttributePair(w.SA_TASK_TYPE, result.task_type),
                    ]
                ),
                memo=memo,
            )
        except WorkflowAlreadyStartedError as exc:
            raise NotClaimable(f"run {run_id} was resumed by someone else meanwhile") from exc

    async def _resumable(self, run_id: str, more: Extension | None) -> tuple[RunResult, dict[str, Any]]:
        """The run's last execution's result and run, when it can go on (cancelled; with `more`, stopped
        at a limit that much more budget lifts); else `NotClaimable` or `ConfigError`, saying why."""
        ended = await self.ended(run_id)
        wanted = StopReason.CANCELLED if more is None else StopReason.LIMIT
        if ended is None or ended[0].reason is not wanted:
            waits = await self._waits(run_id) if ended is None else None
            if waits is not None and more is None:  # as a store's runner says it (an `AnswerError`)
                raise AnswerError(f"run {run_id} {waits}; nothing was changed")
            where = "running" if ended is None else f"ended as {ended[0].reason}"
            where = "waiting for a person" if waits is not None else where
            wants = "cancelled" if more is None else "stopped at a limit"
            hint = " (give it more budget to go on)" if more is None and ended and ended[0].limit else ""
            raise NotClaimable(f"run {run_id} is {where}, not {wants}{hint}; nothing was changed")
        result, run = ended
        if result.snapshot is None and (result.turns or more is not None):  # too large for a payload
            raise NotClaimable(
                f"run {run_id} kept no snapshot to resume from (see its note); nothing was changed"
            )
        if more is not None and result.snapshot is not None and (still := _still_out(run, result, more)):
            raise ConfigError(
                f"run {run_id} would still be out of {still} budget with that much more: add {still} too; "
                "nothing was changed"
            )
        return result, run

    async def end(self, run_id: str, note: str = "", *, by: str | None = None) -> RunResult:
        """End, as an operator, a run that is not finished and that no worker holds, as the store's runner's
        `end` does: one waiting for a person (the `end` update), or a cancelled one (its workflow closed: a
        new execution of it ends it at once). It ends `error` (error type `ended_by_operator`, `note` kept),
        counted and traced as any stop by the worker that ends it, its snapshot kept in its result for
        review (it is not resumed), then its catalog `cleanup` runs; the result once that has run. A run
        that is running (a worker holds it) or has ended is refused (`NotClaimable`): nothing changed.
        When no worker polls the run's queue, it ends at once all the same (`_end_unattended`); `by` (None:
        this client's Temporal identity) names who ended it there."""
        if not isinstance(note, str):
            raise ConfigError(f"an operator's note must be text, not {type(note).__name__}")
        if problem := w.reply_too_large("an operator's note", note):
            raise ConfigError(f"run {run_id}: {problem}; nothing was changed")
        by = checked_answerer(by)
        for _ in range(3):  # an execution that closed (or continued as new) as we asked: asked again
            execution = await self._described(run_id)
            if await _ended_unattended(execution) is not None:  # its ending execution waits for a worker
                raise NotClaimable(
                    f"run {run_id} has ended already ({ENDED_BY_OPERATOR}); nothing was changed"
                )
            if unpolled_by := await unpolled(self.client, self.task_queue, self.clock):
                execution = await self._described(run_id)  # as it is now: the pollers took seconds to read
                return await self._end_unattended(execution, note, by or self.client.identity, unpolled_by)
            if execution.status is not WorkflowExecutionStatus.RUNNING:
                return await self._end_cancelled(run_id, note)
            if (result := await self._end_waiting(run_id, self._pinned(execution), note)) is not None:
                return result
        raise NotClaimable(f"run {run_id} kept changing while it was being ended; nothing was changed")

    async def _end_waiting(
        self, run_id: str, handle: WorkflowHandle[Any, Any], note: str
    ) -> RunResult | None:
        """`end` of a run whose workflow is open: its result, a refusal, or None when the execution closed
        before the update reached it."""
        try:
            return w.result_from_json(await self.prompt.execute(handle, w.END, [note]))
        except WorkflowUpdateFailedError as exc:
            raise _end_refused(run_id, exc) from exc
        except RPCError as exc:
            if said := _update_cap(run_id, exc):
                raise NotClaimable(said) from exc
            if not (_closing(exc) or exc.status is RPCStatusCode.NOT_FOUND):
                raise _rpc_error(run_id, exc) from exc
            await self._closed(handle)
            return None

    async def _end_cancelled(self, run_id: str, note: str) -> RunResult:
        """`end` of a run whose workflow has closed: a cancelled one is ended in a new execution of it
        (`_wire.ENDED`), its result read once that has closed; any other has ended already."""
        ended = await self.ended(run_id)
        if ended is None:  # resumed meanwhile
            raise NotClaimable(f"run {run_id} was resumed by someone else meanwhile; nothing was changed")
        result, run = ended
        if result.reason is not StopReason.CANCELLED:
            raise NotClaimable(f"run {run_id} has ended already ({result.reason}); nothing was changed")
        asked = {"note": note, "plan": run.get("plan")}  # the start's `plan` stops a worker from before
        snapshot = result.snapshot.to_json() if result.snapshot else None
        start = {**run, "plan": {}, "snapshot": snapshot, w.ENDED: asked}
        memo = {"task": run.get("task", ""), **await self._answered_memo(run_id)}
        try:
            handle = await self._start_workflow(
                run_id,
                _ending(run_id, start),
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                search_attributes=TypedSearchAttributes(
                    [
                        SearchAttributePair(w.SA_AGENT, result.agent),
                        SearchAttributePair(w.SA_TASK_TYPE, result.task_type),
                    ]
                ),
                memo=memo,
            )
        except WorkflowAlreadyStartedError as exc:
            raise NotClaimable(
                f"run {run_id} was resumed by someone else meanwhile; nothing was changed"
            ) from exc
        return w.result_from_json((await self._outcome(handle))["result"])

    async def _end_unattended(
        self, execution: WorkflowExecutionDescription, note: str, by: str, unpolled_by: str
    ) -> RunResult:
        """`end` of a run whose queue no worker polls (every worker gone: no update is taken, no execution
        runs). A new execution of its workflow is started to end it (`_wire.ENDED`, as for a cancelled run;
        one still open, waiting or not, is terminated first: `_terminate_read`), its end in its memo
        (`_wire.ENDED`) and its stop reason in visibility: the run reads as ended at once, everywhere. Once a
        worker polls, the execution ends it as `end` does (counted, traced, its cleanup run), or Temporal
        closes it after `ENDING_TIMEOUT` (it reads as ended all the same). The result: the run's end, as
        read then."""
        run_id = execution.id
        record = await _record(execution)
        if record.status is RunStatus.FINISHED:
            raise NotClaimable(f"run {run_id} has ended already ({record.stop_reason}); nothing was changed")
        run, snapshot = await self._ending_run(execution, record)
        said = f"{note} " if note.strip() else ""
        why = one_line(
            f"{said}(by {by}; {unpolled_by}: it ended without a worker, its cleanup runs once one polls)"
        )
        result = RunResult(
            run_id,
            record.agent,
            record.task_type or str(run.get("task_type") or "default"),
            StopReason.ERROR,
            note=operator_end_note(why),
            error_type=ENDED_BY_OPERATOR,
            turns=record.turns,
            usage=record.usage,
            active_seconds=record.active_seconds,
            waiting_seconds=record.waiting_seconds,
        )
        start = {**run, "plan": {}, "snapshot": snapshot, w.ENDED: {"note": why, "plan": run.get("plan")}}
        memo = {
            "task": record.task,
            "segments": record.segments,
            "result": {**result.to_dict(), "note": result.note[:MEMO_NOTE]},
            w.ENDED: {"by": by, "at": self.clock()},
            **await self._answered_memo(run_id),
        }
        attributes = [(w.SA_AGENT, result.agent), (w.SA_TASK_TYPE, result.task_type)]
        attributes.append((w.SA_STOP_REASON, str(StopReason.ERROR)))
        if execution.status is WorkflowExecutionStatus.RUNNING:
            await self._terminate_read(execution, by)
        try:
            await self._start_workflow(
                run_id,
                _ending(run_id, start),
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                execution_timeout=ENDING_TIMEOUT,
                search_attributes=TypedSearchAttributes([SearchAttributePair(k, v) for k, v in attributes]),
                memo=memo,
            )
        except WorkflowAlreadyStartedError as exc:
            raise NotClaimable(
                f"run {run_id} was resumed by someone else meanwhile; nothing was changed"
            ) from exc
        log.warning("run %s: ended by %s with no worker polling task queue %r", run_id, by, self.task_queue)
        return result

    async def _terminate_read(self, execution: WorkflowExecutionDescription, by: str) -> None:
        """Terminate the open execution `end` read (pinned by its run id), before the one that ends the run
        starts: an `end` that raced this one has closed it already (its own ending execution may be open,
        which a start terminating whatever is open would have replaced, both told they ended the run):
        refused (`NotClaimable`), nothing changed."""
        try:
            await self._pinned(execution).terminate(reason=f"ended by {by} with no worker polling")
        except RPCError as exc:
            if exc.status is not RPCStatusCode.NOT_FOUND:
                raise _rpc_error(execution.id, exc) from exc
            raise NotClaimable(
                f"run {execution.id} was ended or resumed by someone else meanwhile; nothing was changed"
            ) from exc

    async def _ending_run(
        self, execution: WorkflowExecutionDescription, record: RunRecord
    ) -> tuple[dict[str, Any], str | None]:
        """The run an execution that ends it starts with, and its snapshot: a cancelled run's as its
        result keeps them; an open execution's as it started (its snapshot, in its workflow's memory, is
        not to be had without a worker: its journal stays in that execution's history)."""
        if execution.status is not WorkflowExecutionStatus.RUNNING:
            ended = await self.ended(execution.id)
            if ended is None or ended[0].reason is not StopReason.CANCELLED:
                reason = ended[0].reason if ended else "running"
                raise NotClaimable(f"run {execution.id} has ended already ({reason}); nothing was changed")
            result, run = ended
            return run, result.snapshot.to_json() if result.snapshot else None
        kept = ("agent", "task", "task_type", "state", "plan", "segments")
        try:
            async for event in self._pinned(execution).fetch_history_events(page_size=1):
                given = event.workflow_execution_started_event_attributes.input.payloads
                [start] = await self.client.data_converter.decode(given) if given else [{}]
                run = {k: start[k] for k in kept if isinstance(start, dict) and k in start}
                break
            else:
                run = {}
        except RPCError as exc:
            raise _rpc_error(execution.id, exc) from exc
        base = {"agent": record.agent, "task": record.task, "state": {}}
        task_type = record.task_type or run.get("task_type")  # as the run's preparation set it, if it ran
        return {**base, **run, "task_type": task_type, "segments": record.segments}, None

    async def _waits(self, run_id: str) -> str | None:
        """What the run waits for (`reply_problem`'s words for no reply), or None when it waits for no
        person: a run that waits is `running` to Temporal."""
        record = await self.record(run_id)
        if record is None or record.status is not RunStatus.WAITING:
            return None
        return reply_problem(None, record.pending.name if record.pending else None, record.question)

    async def _answered_memo(self, run_id: str) -> dict[str, Any]:
        """The run's last reply as its latest execution's memo keeps it (`_wire.ANSWERED`), for the next."""
        try:
            kept = (await (await self._described(run_id)).memo()).get(w.ANSWERED)
        except (UnknownRun, StoreError):  # not kept on: the resume goes on, as one from before did
            return {}
        return {w.ANSWERED: kept} if w.answered_of(kept) else {}

    async def cancel(self, run_id: str) -> None:
        """Cancel a run: its segment ends as `cancelled` at once, resumable (in whichever execution the run
        is in when the cancel reaches it)."""
        handle = await self._handle(run_id)
        try:
            await handle.cancel()
        except RPCError as exc:
            raise _rpc_error(run_id, exc) from exc
        if await self._cancel_dropped(handle):  # the run goes on in the next execution: cancel that one
            await self.cancel(run_id)

    async def _cancel_dropped(self, handle: WorkflowHandle[Any, Any]) -> bool:
        """True when the execution `handle` pins had continued as new before a cancel reached it: Temporal
        takes such a cancel and drops it, and its history holds no cancel request. (One that took the
        cancel, and continued as new to end its segment so, holds it: the run is cancelled already.)"""
        if handle.run_id is None:  # the latest execution: the cancel reached the run
            return False
        try:  # (its status, not its close event: a read of that waits for an open execution to close)
            if (await handle.describe()).status is not WorkflowExecutionStatus.CONTINUED_AS_NEW:
                return False
            async for event in handle.fetch_history_events():
                if event.HasField("workflow_execution_cancel_requested_event_attributes"):
                    return False
        except RPCError as exc:
            raise _rpc_error(handle.id, exc) from exc
        return True

    async def result(self, run_id: str) -> RunResult:
        """How the run's latest execution ended, waiting for it to end."""
        ended = await self.ended(run_id, wait=True)
        assert ended is not None
        return ended[0]

    async def ended(self, run_id: str, wait: bool = False) -> tuple[RunResult, dict[str, Any]] | None:
        """The latest execution's result and run, or None while it runs (unless `wait`)."""
        execution = await self._described(run_id)
        if not wait and execution.status is WorkflowExecutionStatus.RUNNING:
            kept = await _ended_unattended(execution)  # ended with no worker: open until one takes it
            return None if kept is None else (w.result_from_json(kept), {})
        out = await self._outcome(self._pinned(execution))
        return w.result_from_json(out["result"]), out["run"]

    async def _outcome(self, handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
        """The execution's result (`{"result": ..., "run": ...}`), waiting for it. One Temporal ended
        with none (terminated, failed, timed out) reads as an `error` stop saying so, never raises."""
        try:
            out: dict[str, Any] = await handle.result()
        except WorkflowFailureError as exc:
            return {"result": await self._without_result(handle, exc), "run": {}}
        except RPCError as exc:
            raise _rpc_error(handle.id, exc) from exc
        return out

    async def _without_result(
        self, handle: WorkflowHandle[Any, Any], exc: WorkflowFailureError
    ) -> dict[str, Any]:
        """An `error` stop for an execution Temporal ended with no result, with what it had done."""
        try:
            execution = await handle.describe()
        except RPCError as rpc:
            raise _rpc_error(handle.id, rpc) from rpc
        if (kept := await _ended_unattended(execution)) is not None:  # closed by `ENDING_TIMEOUT`, say
            return kept
        record = await _record(execution)
        status = execution.status or WorkflowExecutionStatus.FAILED
        return {
            "run_id": record.run_id,
            "agent": record.agent,
            "task_type": record.task_type,
            "reason": str(StopReason.ERROR),
            "error_type": _NO_RESULT.get(status, "workflow_failed"),
            "note": _no_result_note(status, exc),
            "turns": record.turns,
            **record.usage.flat(),
        }

    async def _reply(self, run_id: str, update: str, args: list[Any], by: str | None) -> RunResult:
        sent = _sent(args, True, None, checked_answerer(by))
        return w.result_from_json(await self._update(run_id, update, *sent))

    async def _update(
        self, run_id: str, update: str, args: list[Any], older: Sequence[list[Any]] = ()
    ) -> Any:
        """A reply's update of the waiting run (refused, or no waiting run: said why); with `older`, the
        arguments to send instead, in turn, to a worker whose handler does not take `args` (an older
        release: see `_sent`)."""
        for text in (a for a in args if isinstance(a, str)):
            if problem := w.reply_too_large("the reply", text):
                raise AnswerError(f"run {run_id}: {problem}; nothing was changed")
        execution = await self._described(run_id)
        if await _ended_unattended(execution) is not None:  # its ending execution waits for a worker
            raise NotClaimable(
                f"run {run_id} is not waiting for a person (it ended as error: {ENDED_BY_OPERATOR}); nothing "
                "was changed"
            )
        await self._check_in_time(execution)
        await self._check_polled(execution, "reply")
        handle = self._pinned(execution)
        try:
            return await self.prompt.execute(handle, update, args)
        except WorkflowUpdateFailedError as exc:
            if (then := _continued(exc)) is not None:  # taken; its segment goes on in the next execution
                return (await self._segment(await self._handle(run_id), then)).to_dict()
            if older and _arguments_refused(exc):
                _left_out(run_id, args, older[0])
                return await self._update(run_id, update, older[0], older[1:])
            raise _refused(run_id, exc) from exc
        except RPCError as exc:
            if _closing(exc) or (exc.status is RPCStatusCode.NOT_FOUND and await self._moved_on(handle, 1)):
                await self._closed(handle)  # not taken: sent again to the run's next execution
                return await self._update(run_id, update, args, older)
            raise await self._not_waiting(run_id, exc) from exc

    async def _check_in_time(self, execution: WorkflowExecutionDescription) -> None:
        """Refuse (`NotClaimable`) a reply to a run whose deadline has passed, as the workflow's validator
        would: sent, it waited for a worker to refuse it, for ever while none polls the task queue."""
        record = await _record(execution)
        deadline = record.deadline if record.status is RunStatus.WAITING else None
        if deadline is not None and deadline <= time.time():
            timer = "The deadline's timer ends the run under its help policy once an `endstate worker` polls"
            raise too_late(execution.id, deadline, f"{timer} task queue {self.task_queue!r}")

    async def _check_polled(self, execution: WorkflowExecutionDescription, what: str) -> None:
        """Refuse (`NoWorker`) a call only a worker carries on when no worker polls the run's task queue:
        sent, it waited for one without a word (the service's 30 s, the command's wait for ever)."""
        if problem := await unpolled(self.client, self.task_queue, self.clock):
            agent = execution.typed_search_attributes.get(w.SA_AGENT) or ""
            raise NoWorker(
                f"run {execution.id} (agent {agent!r:.100}): {problem}: the {what} was not sent; nothing was "
                f"changed. Start a worker on that queue whose catalog has the agent (`endstate worker "
                f"--temporal HOST:PORT --task-queue {self.task_queue}`), then send it again; to end the run "
                f"without one: `endstate end {execution.id} --temporal HOST:PORT`"
            )

    async def _described(self, run_id: str) -> WorkflowExecutionDescription:
        """The run's latest execution, when it is on this client's task queue; else `UnknownRun` (for
        one on another queue, `ElsewhereRun` naming it: another deployment's run is not acted on)."""
        if not run_id or LONE_SURROGATE.search(run_id):  # no run has it, and Temporal cannot be sent it
            raise UnknownRun(f"no run with id {run_id!r}")
        try:
            execution = await self.client.get_workflow_handle(run_id).describe()
        except RPCError as exc:
            raise _rpc_error(run_id, exc) from exc
        if execution.workflow_type != w.WORKFLOW:  # another workflow sharing the queue: never sent our calls
            raise UnknownRun(
                f"no run with id {run_id!r}: it is a workflow of type {execution.workflow_type!r:.200}, "
                f"not an Endstate run ({w.WORKFLOW}); nothing was changed. Check the run id (`endstate runs`)"
            )
        if not w.on_queue(execution.task_queue, self.task_queue):
            raise ElsewhereRun(
                f"no run with id {run_id!r} on task queue {self.task_queue!r}: it is on task queue "
                f"{execution.task_queue!r} (another deployment's); nothing was changed. To act on it, name "
                "its queue (--task-queue, or TemporalRuns' task_queue)"
            )
        return execution

    async def _handle(self, run_id: str) -> WorkflowHandle[Any, Any]:
        """A handle on the run's latest execution, checked to be on this client's task queue."""
        return self._pinned(await self._described(run_id))

    def _pinned(self, execution: WorkflowExecution) -> WorkflowHandle[Any, Any]:
        """A handle on that very execution: a resume on another queue meanwhile is not acted on."""
        return self.client.get_workflow_handle(execution.id, run_id=execution.run_id)

    async def _segment(self, handle: WorkflowHandle[Any, Any], n: int) -> RunResult:
        """Segment `n`'s result, or the run's end when it ended before we asked."""
        try:
            data = await self.prompt.execute(handle, w.SEGMENT, [n])
        except WorkflowUpdateFailedError as exc:
            if (then := _continued(exc)) is not None:  # continued as new: read on in its next execution
                return await self._segment(await self._handle(handle.id), then)
            data = (await self._outcome(handle))["result"]
        except RPCError as exc:
            if _closing(exc) and handle.run_id is not None and not await self._closed(handle):
                return await self._segment(handle, n)  # it went on after all: read it again
            follows = _closing(exc) or exc.status is RPCStatusCode.NOT_FOUND
            if follows and (moved := await self._moved_on(handle, n)):
                return await self._segment(moved[0], moved[1])
            data = (await self._outcome(handle))["result"]
        return w.result_from_json(data)

    async def _closed(self, handle: WorkflowHandle[Any, Any]) -> bool:
        """Whether the execution `handle` pins has closed, waiting up to `CLOSING_WAIT` for it: Temporal
        refuses updates to one that is closing (continuing as new, say) until it has closed."""
        events = handle.fetch_history_events(wait_new_event=True, event_filter_type=CLOSE_EVENT)
        try:
            await asyncio.wait_for(anext(aiter(events)), CLOSING_WAIT)
        except TimeoutError:
            return False
        except RPCError as exc:
            raise _rpc_error(handle.id, exc) from exc
        return True

    async def _moved_on(
        self, handle: WorkflowHandle[Any, Any], n: int
    ) -> tuple[WorkflowHandle[Any, Any], int] | None:
        """When the execution `handle` pins had continued as new before the read of its segment `n` reached
        it: its next execution, and which segment of that one to read (as `_wire.CONTINUED` would say: less
        the segments the next execution does not repeat; its first when segment `n` ended in this one, as a
        read of a segment that has ended gets the latest). None for an execution that ended otherwise."""
        if handle.run_id is None:  # the latest execution: none continued as new under it
            return None
        try:
            closed = [e async for e in handle.fetch_history_events(event_filter_type=CLOSE_EVENT)]
            if not closed or not closed[-1].HasField("workflow_execution_continued_as_new_event_attributes"):
                return None
            moved = closed[-1].workflow_execution_continued_as_new_event_attributes
            started = await anext(aiter(handle.fetch_history_events(page_size=1)))
        except RPCError as exc:
            raise _rpc_error(handle.id, exc) from exc
        [then] = await self.client.data_converter.decode(moved.input.payloads)
        given = started.workflow_execution_started_event_attributes.input.payloads
        [start] = await self.client.data_converter.decode(given) if given else [{}]
        read = n - (_carried_count(then) - _carried_count(start))
        return self.client.get_workflow_handle(handle.id, run_id=moved.new_execution_run_id), max(read, 1)

    async def _not_waiting(self, run_id: str, exc: RPCError) -> Exception:
        """Why an update found no waiting run: it is unknown, or it has ended; or Temporal's cap on a run's
        updates refused it (`_update_cap`)."""
        if said := _update_cap(run_id, exc):
            return NotClaimable(said)
        if exc.status is not RPCStatusCode.NOT_FOUND:
            return _rpc_error(run_id, exc)
        ended = await self.ended(run_id)  # raises UnknownRun for a run that never existed
        reason = ended[0].reason if ended else "running"
        record = await self.record(run_id)
        said = f"; {record.answered_note}" if record and record.answered_note else ""
        return NotClaimable(
            f"run {run_id} is not waiting for a person (it ended as {reason}{said}); nothing was changed"
        )

    # -- listing -----------------------------------------------------------

    async def runs(
        self,
        status: RunStatus | None = None,
        limit: int | None = 50,
        agent: str | None = None,
        task_type: str | None = None,
    ) -> list[RunRecord]:
        """The latest execution of each run on this client's task queue, newest first (an execution that
        continued as new, past its history bound, is no run's latest); of `agent` and `task_type` when
        given."""
        query = f"{w.runs_query(self.task_queue)} AND ExecutionStatus != 'ContinuedAsNew'"
        if status is RunStatus.WAITING:
            query += f" AND {w.SA_WAITING.name} = true AND ExecutionStatus = 'Running'"
        query += _only("agent", w.SA_AGENT.name, agent) + _only("task type", w.SA_TASK_TYPE.name, task_type)
        records: dict[str, RunRecord] = {}
        seen: set[str] = set()  # a run's latest execution, listed first, is its status: not an older one's
        try:
            async for execution in self.client.list_workflows(query):
                if execution.id in seen or not w.on_queue(execution.task_queue, self.task_queue):
                    continue  # an older execution of a resumed run, or another queue's run
                seen.add(execution.id)
                record = await _record(execution)
                if (status is None or record.status is status) and _of(record, agent, task_type):
                    records[execution.id] = record
        except RPCError as exc:
            if "invalid search attribute" not in exc.message:
                raise _rpc_error(None, exc) from exc
            return []  # no Endstate worker has run on this namespace yet: no runs
        found = sorted(records.values(), key=lambda r: r.started_at, reverse=True)
        return found if limit is None else found[:limit]

    async def pending(self, agent: str | None = None, task_type: str | None = None) -> list[RunRecord]:
        """Runs waiting for a person, oldest request first; of `agent` and `task_type` when given."""
        waiting = await self.runs(RunStatus.WAITING, limit=None, agent=agent, task_type=task_type)
        return sorted(waiting, key=lambda r: r.suspended_at or 0.0)


async def _checked(handle: WorkflowHandle[Any, Any]) -> bool:
    """Wait until a worker has carried the execution on (its first activity done: the check that it can
    go on with the run, `_wire.READY`, or its preparation), False; or until the execution closed, True."""
    async for event in handle.fetch_history_events(wait_new_event=True):
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            return False
        if event.event_type in _CLOSES:
            return True
    return True


def _only(what: str, attribute: str, value: str | None) -> str:
    """The visibility query's condition that a keyword search attribute is `value` ('' for None). A
    value the query cannot quote as it is (a quote or a backslash, which the server's filter does not
    match even escaped; a character that is not printable) is narrowed to its longest prefix the query
    can quote (`STARTS_WITH`), and `_of` keeps only the runs of that very value: the listing reads the
    runs whose names begin so, not every run of the queue. A value that begins with such a character
    has no such prefix: refused (`ConfigError`), as reading every run of the queue is unbounded."""
    if value is None:
        return ""
    prefix = _quotable_prefix(value)
    if prefix == value:
        return f" AND {attribute} = '{value}'"
    if prefix:
        return f" AND {attribute} STARTS_WITH '{prefix}'"
    raise ConfigError(
        f"{what} {value[:60]!r} cannot be looked up in Temporal's visibility: its query cannot quote "
        f"{value[0]!r}, which the name begins with (only the runs whose names begin with a letter, a digit "
        "or another printable character but a quote or a backslash can be found by name); nothing was read. "
        "List the runs without this filter (`--json` gives each run's agent and task type)"
    )


def _quotable_prefix(value: str) -> str:
    """The longest start of `value` that a visibility query can quote as it is."""
    for i, c in enumerate(value):
        if not c.isprintable() or c in "'\"\\":
            return value[:i]
    return value


def _of(record: RunRecord, agent: str | None, task_type: str | None) -> bool:
    """Whether `record` is of `agent` and of `task_type` (None: any)."""
    return agent in (None, record.agent) and task_type in (None, record.task_type)


def _state_of(memo: Mapping[str, Any]) -> dict[str, Any]:
    """The run's state its workflow published (`_wire.STATE`), else none: visibility holds no state."""
    state = memo.get(w.STATE)
    return dict(state) if isinstance(state, dict) else {}


async def _record(execution: WorkflowExecution) -> RunRecord:
    """A run as the store-backed commands show one, from Temporal's visibility."""
    attrs = execution.typed_search_attributes
    memo = await execution.memo()
    last: dict[str, Any] = memo.get("result") or {}
    ended_here = isinstance(memo.get(w.ENDED), dict)  # ended with no worker polling: its memo holds its end
    status = (
        RunStatus.FINISHED if ended_here else _status(execution.status, last, bool(attrs.get(w.SA_WAITING)))
    )
    suspension = w.suspension_from_json(last.get("suspension")) if status is RunStatus.WAITING else None
    reason = last.get("reason") or None
    note, error_type = last.get("note", ""), last.get("error_type") or None
    if not ended_here and (
        execution.status in _NO_RESULT or (execution.status in _TEMPORAL_ENDED and not reason)
    ):
        # the memo holds the last segment's end (a suspension, say), not this end, which Temporal made
        reason, note = str(StopReason.ERROR), _TEMPORAL_ENDED[execution.status]
        error_type = _NO_RESULT.get(execution.status, "workflow_failed")  # as `_without_result` says
        last = {k: v for k, v in last.items() if k not in ("limit", "verified", "output", "summary")}
    started = execution.start_time.timestamp()
    closed = execution.close_time if status is RunStatus.FINISHED else None
    closed = (closed or execution.start_time) if ended_here else closed
    return RunRecord(
        run_id=execution.id,
        agent=attrs.get(w.SA_AGENT) or "",
        task=str(memo.get("task", "")),
        task_type=attrs.get(w.SA_TASK_TYPE) or last.get("task_type") or "",
        status=status,
        state=_state_of(memo),
        started_at=started,
        updated_at=(execution.close_time or execution.start_time or datetime.now(UTC)).timestamp(),
        stop_reason=StopReason(reason) if reason and status is not RunStatus.RUNNING else None,
        stop_limit=last.get("limit"),
        turns=int(last.get("turns", 0)),
        usage=Usage.from_flat(last),
        active_seconds=_seconds(last.get("active_seconds")),
        waiting_seconds=_seconds(last.get("waiting_seconds")),
        ended_at=closed.timestamp() if closed else None,
        trace_id=_text(last.get("trace_id")) or None,
        note=note,
        summary=_text(last.get("summary")),
        output=_text(last.get("output")),
        verified=bool(last.get("verified", False)),
        error_type=error_type if status is not RunStatus.RUNNING else None,
        question=suspension.question if suspension else None,
        pending=suspension.pending if suspension else None,
        deadline=suspension.deadline if suspension else None,
        suspended_at=suspension.suspended_at if suspension else None,
        segments=_whole(memo.get("segments")),
        **w.answered_of(memo.get(w.ANSWERED)),
    )


async def _ended_unattended(execution: WorkflowExecution) -> dict[str, Any] | None:
    """The end an operator gave a run whose queue no worker polled (`TemporalRuns._end_unattended`), as its
    execution's memo keeps it; None for any other execution."""
    memo = await execution.memo()
    kept = memo.get("result")
    return kept if isinstance(memo.get(w.ENDED), dict) and isinstance(kept, dict) else None


def _with_texts(record: RunRecord, result: dict[str, Any]) -> RunRecord:
    """`record` with the note, summary and output of the execution's result in full (the memo keeps the
    start of each)."""
    return dataclasses.replace(
        record,
        note=_text(result.get("note")),
        summary=_text(result.get("summary")),
        output=_text(result.get("output")),
    )


def _seconds(value: object) -> float:
    """A duration from the memo: 0.0 for anything but a finite, non-negative number."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < float("inf"):
        return float(value)
    return 0.0


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _no_result_note(status: WorkflowExecutionStatus, exc: WorkflowFailureError) -> str:
    """What ended an execution with no result, and what that means for the run."""
    said = str(exc.cause) if exc.cause is not None else ""
    why = f" ({said})" if said and said != str(exc) else ""
    return (
        f"{_TEMPORAL_ENDED.get(status, 'the workflow failed')}{why}: Temporal ended it with no result, so "
        "it kept no snapshot and cannot be resumed; start it again to redo it (to stop a run so that it "
        "can go on later, cancel it: `temporal workflow cancel -w RUN_ID`, or `TemporalRuns.cancel`)"
    )


def _still_out(run: dict[str, Any], stopped: RunResult, more: Extension) -> LimitKind | None:
    """The budget a limit stop would still be out of with `more` added (as `Agent.aresume` checks it)."""
    assert stopped.snapshot is not None
    snap = stopped.snapshot
    return extended(w.budget_of(run["plan"]), Journal(snap.journal)).plus(more).exceeded(snap.usage)


def _fitting(run_id: str, start: dict[str, Any]) -> dict[str, Any]:
    """A resumed execution's start, its snapshot packed when only so it fits in a payload (`_wire.PACKED`:
    the workflow unpacks it); one that does not fit even so is refused, saying why."""
    if w.payload_size(start) <= w.MAX_PAYLOAD_BYTES or not start.get("snapshot"):
        return start
    packed = w.packed_start(start)
    if (size := w.payload_size(packed)) > w.MAX_PAYLOAD_BYTES:
        raise ConfigError(
            f"run {run_id}: its snapshot is {size:,} bytes even compressed, over the {w.MAX_PAYLOAD_BYTES:,} "
            "a Temporal execution is started with, so it cannot be resumed on Temporal; nothing was changed"
        )
    return packed


def _ending(run_id: str, start: dict[str, Any]) -> dict[str, Any]:
    """The start of an execution that ends a cancelled run (`_wire.ENDED`), as `_fitting` makes it; its
    snapshot left out when it does not fit even packed (the run's earlier execution keeps it)."""
    try:
        return _fitting(run_id, start)
    except ConfigError:
        log.warning(
            "run %s: its snapshot is too large to carry to its end; its earlier execution keeps it", run_id
        )
        return {**start, "snapshot": None}


def _carried_count(start: object) -> int:
    """The segments an execution's start says the run's earlier executions ended (0 when none)."""
    return _whole(start.get("segments")) if isinstance(start, dict) else 0


def _whole(value: object) -> int:
    """A count from the memo (0 when a run started before published none)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _check_label(what: str, value: object) -> None:
    """An agent's name or a task type: text, short enough to be a Temporal search attribute."""
    if not is_text(value):
        raise ConfigError(f"{what} must be a non-empty string, not {value!r:.60}")
    if not w.keyword_fits(value):
        raise ConfigError(
            f"{what} {value[:40]!r}... is over {MAX_KEYWORD_BYTES:,} bytes as Temporal counts a search "
            "attribute (its JSON, where a letter beyond ASCII takes six), which it refuses: use a short name"
        )
    if not _quotable_prefix(value):
        raise ConfigError(
            f"{what} {value[:60]!r} begins with {value[0]!r}, which Temporal's visibility query cannot "
            f"quote: its runs could not be listed by {what} (`runs --agent`, `/runs?agent=`); nothing was "
            "started. Use a name that begins with a letter, a digit or another printable character but a "
            "quote or a backslash"
        )


def _sent(
    args: list[Any], wait: bool, segments: int | None, by: str | None
) -> tuple[list[Any], list[list[Any]]]:
    """A reply's update arguments (`args`, then WAIT, SEGMENTS and BY as the workflow takes them), and
    those to send instead, in turn, to a worker from before `segments` or `by` (mid-deploy) whose
    handler refuses them: such a worker always took the reply without them (its runs publish no count
    to check against, and keep no name)."""
    base = [*args, wait]
    read = [*base, segments]
    if by is not None:
        return [*read, by], ([read, base] if segments is not None else [base])
    return (read, [base]) if segments is not None else (base, [])


def _left_out(run_id: str, args: list[Any], older: list[Any]) -> None:
    """Log a reply's name that a worker from before `by` could not take (the run keeps none): in `_sent`'s
    forms, a text last past the second argument is the name (SEGMENTS is a count or None)."""
    if len(args) >= 3 and isinstance(args[-1], str) and older[-1:] != args[-1:]:
        log.warning(
            "run %s: its worker (a release from before answerers' names) takes none: the reply was sent "
            "without %r, which the run does not keep",
            run_id,
            args[-1],
        )


def _update_of(answer: str | None, approved: bool | None) -> tuple[str, list[Any]]:
    """The update and its arguments for a reply; an approval with text is refused, as a store's runner
    refuses it (the text would be dropped unread), and a blank denial reason is sent as none."""
    if approved is None:
        return w.ANSWER, [answer or ""]
    if approved and given_reason(answer) is not None:
        raise AnswerError(
            "an approval carries no text (the call runs as shown, and the agent is told nothing more); "
            "nothing was changed. Approve without it, or deny with it as the reason"
        )
    return (w.APPROVE, []) if approved else (w.DENY, [given_reason(answer) or ""])


def _status(status: WorkflowExecutionStatus | None, last: dict[str, Any], waiting: bool) -> RunStatus:
    if status is WorkflowExecutionStatus.RUNNING:
        return RunStatus.WAITING if waiting else RunStatus.RUNNING
    if last.get("reason") == StopReason.CANCELLED or status is WorkflowExecutionStatus.CANCELED:
        return RunStatus.CANCELLED
    return RunStatus.FINISHED


def _refused(run_id: str, exc: WorkflowUpdateFailedError) -> Exception:
    cause = exc.cause if isinstance(exc.cause, ApplicationError) else None
    message = f"run {run_id}: {cause.message if cause else exc}"
    message = message if message.endswith("nothing was changed") else f"{message}; nothing was changed"
    kind = cause.type if cause else None
    refusals = {"AnswerError": AnswerError, "ConfigError": ConfigError, w.NOT_IN_CATALOG: NotInCatalog}
    return refusals.get(kind or "", NotClaimable)(message)


def _end_refused(run_id: str, exc: WorkflowUpdateFailedError) -> Exception:
    """Why the workflow refused an operator's `end` (its validator's words, as the store's runner says them:
    "run ID has ended already", "run ID is running"); a note it could not take is a `ConfigError`."""
    cause = exc.cause if isinstance(exc.cause, ApplicationError) else None
    if cause is None or cause.type != "NotClaimable":
        said = cause.message if cause else str(exc)
        return ConfigError(f"run {run_id}: {said}; nothing was changed")
    said = (
        cause.message if "nothing was changed" in cause.message else f"{cause.message}; nothing was changed"
    )
    return NotClaimable(f"run {run_id} {said}")


def _continued(exc: WorkflowUpdateFailedError) -> int | None:
    """The segment of the run's next execution to read, when the update's execution continued as new
    (`_wire.CONTINUED`); else None."""
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type == w.CONTINUED and cause.details:
        then = cause.details[0]
        return then if is_whole(then) and then >= 1 else None
    return None


def _closing(exc: RPCError) -> bool:
    """Whether Temporal refused a call because the execution is closing (it has asked to end or continue
    as new, and ends once it has taken the updates it was sent): it is refused until it has closed."""
    return exc.status is RPCStatusCode.RESOURCE_EXHAUSTED and "closing" in exc.message.lower()


def _arguments_refused(exc: WorkflowUpdateFailedError) -> bool:
    """Whether the update's handler could not take its arguments (a `TypeError` in the worker: one from
    an older release, whose handlers take fewer); Endstate's own refusals have types of their own."""
    return isinstance(exc.cause, ApplicationError) and exc.cause.type == "TypeError"


def _capped(exc: RPCError) -> bool:
    """Whether Temporal refused an update for one of its caps on a run's updates (its words say so)."""
    said = exc.message.lower()
    return "limit" in said and "update" in said


def _update_cap(run_id: str, exc: RPCError) -> str | None:
    """What a reply that one of Temporal's caps on a run's updates refused is told (None for any other
    refusal): updates in flight at once (10 by default: other callers wait on the run), or updates in all
    in one execution (2,000 by default). Said as "Temporal did not answer" (503) or "refused" (400), the
    caller retried blind, or gave up on a run that a resume can still answer."""
    if not _capped(exc):
        return None
    if exc.status is RPCStatusCode.RESOURCE_EXHAUSTED:
        return (
            f"run {run_id} takes no reply now: Temporal's cap on updates in flight on one run is reached "
            f"({exc.message}): other calls wait on the run; nothing was changed. Read the run, then send the "
            "reply again with the `segments` read once those calls end"
        )
    if exc.status is RPCStatusCode.FAILED_PRECONDITION:
        return (
            f"run {run_id} takes no more replies in this execution: Temporal's cap on updates in one "
            f"execution is reached ({exc.message:.100}); nothing was changed. Cancel the run and resume it: "
            "the resumed execution waits for the same reply, its count of updates anew"
        )
    return None


def _rpc_error(run_id: str | None, exc: RPCError) -> Exception:
    """What a failed Temporal call means for the caller (`run_id` None: listing the runs)."""
    if exc.status is RPCStatusCode.NOT_FOUND and run_id is not None:
        return UnknownRun(f"no run with id {run_id!r}")
    call = "the call listing the runs" if run_id is None else f"the call for run {run_id}"
    if exc.status in _NOT_ANSWERING:
        return TemporalUnavailable(
            f"Temporal did not answer {call} ({exc.message}): it is down, restarting or out of reach. "
            "Nothing is lost (waiting runs keep waiting); send it again once it is back"
        )
    return ConfigError(f"Temporal refused {call}: {exc.message}")


def _new_id() -> str:
    return uuid.uuid4().hex


async def _namespace_problem(client: Client, address: str, namespace: str) -> str | None:
    """What is wrong when the server has no such namespace (checked before any command or worker
    depends on it); None when it has, or when it will not say (the commands will)."""
    try:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            return (
                f"Temporal at {address!r} has no namespace {namespace!r}: pass --namespace (default "
                f"{w.NAMESPACE!r}), or create it (`temporal operator namespace create {namespace}`)"
            )
    return None


# The first send of an update: one attempt (in Temporal's core a `max_retries` of 0 is "no limit")
ONE_ATTEMPT = RetryConfig(max_retries=1, max_elapsed_time_millis=0)
Connecting = Callable[[ServiceConfig], Awaitable[ServiceClient]]


class PromptCaps:
    """Sends an update first on a connection of its own without retries: the SDK sends each with its
    retries, which take a run's cap on updates in flight (RESOURCE_EXHAUSTED) for an overloaded server and
    try again for about 14 s, so a reply the cap refused was told so only then. A refusal by the cap is
    raised at once; any other failure of the call sends the update again on `client`, with its retries
    (the same update id: Temporal takes it once). The connection is made at the first update (lazy), one
    for the client's life (updates sent while it is made wait for it), from the client's connection config
    (as its plugins' hooks left it) through those hooks again, as `Client.connect` makes it (public API
    only): headers, TLS, interceptors or metrics a plugin adds when it connects are the same on both; a
    hook that fails sends the reply on `client`.
    No call-level option turns the SDK's retries off (`rpc_timeout` bounds an attempt, and the update waits
    for its result on it), hence the second connection."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._once: Client | None = None
        self._given: tuple[str | None, Any] = (None, None)  # the client's API key and headers `_once` has
        self._making: asyncio.Future[None] | None = None  # `_once` being made, for every caller meanwhile

    async def execute(self, handle: WorkflowHandle[Any, Any], update: str, args: list[Any]) -> Any:
        """`handle.execute_update(update, args=args)`, the cap's refusal raised at once (`RPCError`)."""
        try:
            connection = await self.connection()
        except Exception as exc:  # a plugin's hook failed (the client's own connection went through them)
            log.warning(
                "a reply goes on the client's connection, with retries: its prompt one failed: %s", exc
            )
            return await handle.execute_update(update, args=args)
        once = connection.get_workflow_handle(
            handle.id, run_id=handle.run_id, first_execution_run_id=handle.first_execution_run_id
        )
        return await _sent_promptly(once, handle, update, args)

    async def connection(self) -> Client:
        """The connection without retries (made once); an API key or headers set anew on `client` since
        are set on it too (those the plugins' hooks gave it otherwise kept)."""
        if self._once is None:
            await asyncio.shield(self._being_made())
        assert self._once is not None
        api_key, headers = self._given
        if self.client.api_key != api_key:
            self._once.api_key = api_key = self.client.api_key
        if self.client.rpc_metadata != headers:
            self._once.rpc_metadata = headers = self.client.rpc_metadata
        self._given = (api_key, headers)
        return self._once

    def _being_made(self) -> asyncio.Future[None]:
        """The making of the connection, one for every caller that asks while it is made (the plugins'
        hooks run once, one connection made): begun anew after one failed, or on another event loop."""
        making = self._making
        if making is None or making.done() or making.get_loop() is not asyncio.get_running_loop():
            making = self._making = asyncio.ensure_future(self._make())  # done: it failed (else `_once`)
        return making

    async def _make(self) -> None:
        options = self.client.config()  # as given: its plugins configure the new client once
        options["service_client"] = await _connected_once(
            self.client.service_client.config, options["plugins"]
        )
        self._once = Client(**options)
        self._given = (self.client.api_key, self.client.rpc_metadata)


async def _connected_once(config: ServiceConfig, plugins: Sequence[ClientPlugin]) -> ServiceClient:
    """A lazy connection with `config` through the plugins' `connect_service_client` hooks, chained as
    `Client.connect` chains them (the first wraps the others); one attempt a call whatever they set."""

    def one_attempt(config: ServiceConfig) -> Awaitable[ServiceClient]:
        return ServiceClient.connect(dataclasses.replace(config, retry_config=ONE_ATTEMPT, lazy=True))

    def hooked(plugin: ClientPlugin, inner: Connecting) -> Connecting:
        return lambda config: plugin.connect_service_client(config, inner)

    connect: Connecting = one_attempt
    for plugin in reversed(plugins):
        connect = hooked(plugin, connect)
    return await connect(config)


async def _sent_promptly(
    once: WorkflowHandle[Any, Any], retried: WorkflowHandle[Any, Any], update: str, args: list[Any]
) -> Any:
    """The update sent on `once` (no retries); the cap's refusal raised, any other failure of the call
    sent again on `retried` under the same update id (Temporal takes it once). A connection `once` could
    not make (the SDK's `RuntimeError`: the server was down at its first update) is such a failure."""
    update_id = uuid.uuid4().hex
    try:
        return await once.execute_update(update, args=args, id=update_id)
    except RPCError as exc:
        if exc.status is RPCStatusCode.RESOURCE_EXHAUSTED and (_capped(exc) or _closing(exc)):
            raise  # retried, the cap's refusal comes late; a closing execution's, until it has closed
    except RuntimeError:
        pass
    return await retried.execute_update(update, args=args, id=update_id)
