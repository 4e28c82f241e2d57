"""The loop. It reads like the pseudocode in DESIGN.md, "The loop, in order".

Each turn returns a decision (`Continue`, `Stop` or `Suspend`) and the loop
dispatches on it. Everything a turn does is appended to the run's journal;
what is still to do (the calls of a turn in flight, an answer to apply) is
read back from it, so starting, resuming, expiring and recovering a run are
one path. Telemetry sees the loop only through its observer.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass
from inspect import isawaitable
from typing import TYPE_CHECKING, Any, Protocol

from agent._codec import unkept
from agent._frozen import fast_init
from agent._state import RunState
from agent.checks import TurnVerdict
from agent.clock import CancelSignal, pause, unanswered
from agent.errors import ConfigError, HandedOver, ModelError, SnapshotError, TakenOver, TransientModelError
from agent.finish import FINISH_TOOL, Signal, parse_finish
from agent.history import CONTEXT_FULL, Compaction
from agent.hooks import RunObserver
from agent.journal import (
    Answer,
    Answered,
    Call,
    Denial,
    Note,
    Part,
    Reply,
    Result,
    Started,
    Stopped,
    Suspended,
)
from agent.models.base import ModelReply, ModelRequest, UnreadableReply, recording_cut_calls, refusal_note
from agent.policies import MAX_RETRY_AFTER
from agent.progress import ProgressDetector, call_signature, digest
from agent.result import FinishKind, LimitKind, PendingAction, RunResult, StopCause, StopReason, Suspension
from agent.snapshot import SnapshotKind
from agent.stops import StopKind, TurnSignal
from agent.summary import headline
from agent.summary import summarize as default_summary
from agent.text import written
from agent.tools import (
    UNKNOWN_TOOL,
    Tool,
    ToolOutcome,
    arguments_problem,
    execute,
    loggable,
    run_cancelled,
    said,
    said_soon,
)
from agent.verify import JudgeRefused, run_verifiers, said_by

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agent.budget import PriceTable, Spent
    from agent.checks import TurnCheck
    from agent.context import RunContext
    from agent.history import HistoryPolicy
    from agent.journal import Shrunk
    from agent.models.base import Model
    from agent.policies import RetryPolicy
    from agent.snapshot import Checkpoint
    from agent.verify import Verifier


class Agent(Protocol):
    """What the loop needs of an agent (`agent.Agent` is one)."""

    name: str
    model: Model
    tools: Sequence[Tool]
    verifiers: Sequence[Verifier]
    checks: Sequence[TurnCheck]
    history: HistoryPolicy
    retry: RetryPolicy
    prices: PriceTable
    fingerprint: Callable[[RunContext], str] | None
    checkpoint: Callable[[Checkpoint], Awaitable[None] | None] | None
    max_tokens: int
    finish_last: bool

    @property
    def skip_declined(self) -> Callable[[], bool]: ...

    @property
    def skip_repeats(self) -> Callable[[], bool]: ...

    @property
    def count_denials(self) -> Callable[[], bool]: ...

    @property
    def summarize(self) -> Callable[[RunContext, Spent, StopReason, LimitKind | None], str]: ...

    @property
    def system_prompt(self) -> str: ...

    @property
    def tool_specs(self) -> list[dict[str, Any]]: ...

    @property
    def context_window(self) -> int | None: ...

    def tool_named(self, name: str) -> Tool | None: ...

    def suspension(self, question: str, pending: PendingAction | None, call_id: str = "") -> Suspension: ...


log = logging.getLogger("endstate.loop")

NUDGE = "Use a tool or call finish."
REJECTED = "Criterion not met: "  # how a `done` the verifiers rejected begins its result
CUT_OFF = "Your reply was cut off at max_tokens. Go on from where it stopped."
NOT_RUN = "Not run: the run paused for a person before this call. Call it again if you still need it."
NOT_RUN_DECLINED = (  # the API never sees it: the request leaves such calls and their results out
    "Not run: a model that declined this turn made this call (a server-side fallback answered instead), "
    "so it is not part of the conversation; an approval or answer given for it is not acted on."
)
NOT_RUN_AFTER_CUT = (
    "Not run: the run was stopped while an earlier call of this reply ran, and that call's outcome is "
    "unknown. Call it again if you still need it."
)
NOT_RUN_REPEATED = (
    "Not run: {name} was called {count} times in a row with the same arguments and no change in state; "
    "the run is stuck and stops at the end of this turn."
)
CUT_SHORT = (
    "Outcome unknown: the run was stopped while this call ran, so it may or may not have taken "
    "effect. Check before you call it again."
)
# A reply's later `finish(done)` calls, once the verifiers rejected one of it: each would run them
# again (an evaluator's paid call, the test suite) within one turn, past the budget the loop checks
# before each turn.
ONCE_A_REPLY = (
    "Not checked: the verifiers already rejected a finish in this reply. Fix what they said, then "
    "call finish again."
)
DENIED = "\x00denied"  # the state a denied call saw, when the agent gives no fingerprint
CUT_STOPS = (StopKind.MAX_TOKENS, StopKind.CONTEXT_FULL)
MAX_PAUSES = 20  # pause_turn continuations in one turn before the run ends as error


@fast_init
@dataclass(frozen=True)
class Continue:
    """Go on to the next turn; `signal` names what this turn did."""

    signal: TurnSignal = TurnSignal.TOOL_USE


@fast_init
@dataclass(frozen=True)
class Stop:
    """End the run segment with a reason."""

    reason: StopReason
    limit: LimitKind | None = None
    output: str = ""
    note: str = ""
    verified: bool = False
    error_type: str | None = None
    cause: StopCause | None = None


@fast_init
@dataclass(frozen=True)
class Suspend:
    """Pause for a person."""

    suspension: Suspension


@fast_init
@dataclass(frozen=True)
class Rejected:
    """A call's step: a `done` the verifiers rejected. Its result (why) goes back to the model, and
    its turn's signal is `done_rejected`: a fact of the step, never read from the result's words."""

    result: Result


Decision = Continue | Stop | Suspend
Step = Result | Rejected | Stop | Suspend  # what answering one call did
_GO_ON = {s: Continue(s) for s in TurnSignal}  # a decision is a value: one of each, made once


async def drive(
    agent: Agent, run: RunState, obs: RunObserver, cancel: CancelSignal | None = None
) -> RunResult:
    """Run turns until one decides to stop or suspend."""
    if run.journal.open_calls():  # a turn in flight: an answer to apply, or a recovered checkpoint
        decision = await observed(obs, run.usage.turns, finish_turn(agent, run, obs), continued=True)
        if not isinstance(decision, Continue):
            await durable(run)  # every checkpoint durable before the run ends
            return conclude(agent, run, decision)
    again = run.journal.turn_cut()  # the turn a cancellation cut before its reply: its span says so
    while True:
        if limit := run.budget.exceeded(run.tick()):  # 1. the budget first
            decision = Stop(StopReason.LIMIT, limit=limit)
        elif cancel is not None and (asked := cancel.is_set()) is not False:
            decision = cancelled(asked)
        elif cancel is not None and hands_over(cancel):  # between turns only: the call in flight is recorded
            await durable(run)
            raise HandedOver(f"run {run.ctx.run_id} was handed over at a turn boundary to go on elsewhere")
        else:
            decision = await observed(obs, run.begin_turn(), turn(agent, run, obs), again)  # 2-5
            again = False
        if not isinstance(decision, Continue):
            await durable(run)
            return conclude(agent, run, decision)


def cancelled(asked: object) -> Stop:
    """The stop for a cancel signal's `is_set()` answer that was not False: `cancelled` for True, and
    for anything else (a Mock, "no") an error saying what a cancel signal is, rather than a guess."""
    if asked is True:
        return Stop(StopReason.CANCELLED, note="The caller cancelled the run.")
    return Stop(StopReason.ERROR, note=unanswered(asked), error_type="ConfigError")


def hands_over(cancel: CancelSignal) -> bool:
    """Whether the cancel signal asks the segment to pause here for the run to go on elsewhere: a signal
    may have `hand_over()` (a Temporal run's, past its history bound); a plain event has none."""
    ask = getattr(cancel, "hand_over", None)
    return callable(ask) and ask() is True


def paused(run: RunState, why: TakenOver) -> RunResult:
    """The segment's result where it was handed over: `cancelled`, with the run's checkpoint as it stands
    (no stop written to its journal) for the segment that goes on from it."""
    return run.result(StopReason.CANCELLED, note=str(why), snapshot=run.snapshot(SnapshotKind.CHECKPOINT))


async def turn(agent: Agent, run: RunState, obs: RunObserver) -> Decision:
    """One turn: ask the model, record its reply and act on why it ended (`stop`), answer its calls,
    check progress. A refusal ends the run, a reply that filled the window shrinks the history, and a
    reply with no tool call is nudged."""
    reply = await ask_model(agent, run, obs)  # 2
    if isinstance(reply, Stop):
        return reply
    run.record(reply)
    stop = reply.stop
    if stop == StopKind.REFUSED:
        return Stop(StopReason.GAVE_UP, note=refusal_note(reply), cause=StopCause.REFUSAL)
    if stop == StopKind.CONTEXT_FULL and (
        cut := await shrink_more(agent, run, obs, f"the reply stopped at {reply.stop_reason}")
    ):
        return cut  # the reply filled the window: shrink before going on, or stop
    if not (calls := reply.calls):
        run.record(Note(CUT_OFF if stop in CUT_STOPS else NUDGE))
        return end_turn(agent, run, _GO_ON[TurnSignal.NO_TOOL_CALL])
    return end_turn(agent, run, await act_on_calls(agent, run, calls, obs))  # 3, 4, then 5


async def finish_turn(agent: Agent, run: RunState, obs: RunObserver) -> Decision:
    """Complete a turn whose reply was recorded but whose calls were not all answered."""
    return end_turn(agent, run, await act_on_calls(agent, run, run.journal.open_calls(), obs))


_INCOMPLETE = Stop(StopReason.ERROR, note="the turn did not complete")


async def observed(
    obs: RunObserver, index: int, steps: Awaitable[Decision], continued: bool = False
) -> Decision:
    """Run a turn's steps between `turn_started` and `turn_ended`, whatever happens (a hook
    interrupted in `turn_started` cancels the run: the steps are closed, never begun)."""
    decision: Decision = _INCOMPLETE
    try:
        if continued:  # a turn that an earlier segment began: its span says so, and it is not counted twice
            obs.turn_started(index, True)
        else:
            obs.turn_started(index)
        decision = await steps
        return decision
    except (asyncio.CancelledError, KeyboardInterrupt):
        decision = Stop(StopReason.CANCELLED)  # so the turn's signal says what happened
        if isinstance(steps, Coroutine):
            steps.close()  # not begun when `turn_started` raised; else done already, and this does nothing
        raise
    finally:
        obs.turn_ended(index, _signal_of(decision))


def end_turn(agent: Agent, run: RunState, decision: Decision) -> Decision:
    """After a completed turn: the per-turn checks, then progress; then the checkpoint."""
    if not isinstance(decision, Continue):
        return decision
    if agent.checks and (verdict := check_turn(agent, run)) is not None:
        return verdict
    if stuck := run.progress.end_turn():
        return Stop(StopReason.NO_PROGRESS, note=stuck)
    checkpoint(agent, run)
    return decision


def check_turn(agent: Agent, run: RunState) -> Stop | None:
    """The agent's per-turn checks: a goal reached ends the run as success, a broken invariant as error.
    A check that raises ends it as error: a `CancelledError` of its own too (a sync call is never where
    the run's cancel lands), as a verifier's does, not as a cancel nobody asked for."""
    for check in agent.checks:
        try:
            verdict = check(run.ctx)
        except (Exception, SystemExit, asyncio.CancelledError) as exc:  # a KeyboardInterrupt: `cancelled`
            if isinstance(exc, asyncio.CancelledError) and run_cancelled():
                raise  # the run's task is being cancelled: the run's cancel, not the check's
            note = f"A per-turn check raised {type(exc).__name__}: {said(exc)}"
            return Stop(StopReason.ERROR, note=note, error_type="verifier_error")
        if verdict is not None and not isinstance(verdict, TurnVerdict):
            note = (
                f"A per-turn check returned {written(verdict):.60} ({type(verdict).__name__}): a check "
                "returns None to let the run go on, or a TurnVerdict to end it"
            )
            return Stop(StopReason.ERROR, note=note, error_type="verifier_error")
        if verdict is not None:
            done = verdict.reason is StopReason.SUCCESS
            return Stop(
                verdict.reason,
                output=verdict.note if done else "",
                note="" if done else verdict.note,
                verified=done,
                error_type=verdict.error_type,
            )
    return None


def checkpoint(agent: Agent, run: RunState) -> None:
    """Hand the checkpointer the new journal entries; a checkpointer that raises ends the run as error.

    A checkpointer may write them later: it returns an awaitable, which `durable` awaits before the
    next tool starts and before the segment ends (a write that failed raises there, and the run ends
    as error). The last one is kept: a checkpointer writes its checkpoints in order, so it stands
    for all of them."""
    if agent.checkpoint is None:
        return
    # strict: a state JSON cannot hold (a tool's bug: no checkpoint could keep it) raises ConfigError
    if isawaitable(write := _hand_over(agent, run, run.checkpoint(strict=True))):
        run.pending = write


def _hand_over(agent: Agent, run: RunState, new: Checkpoint) -> Awaitable[None] | None:
    """`agent.checkpoint(new)`; when it raises, its entries count as unsaved again, so that the
    run's last checkpoint carries them (a checkpointer never sees a gap)."""
    assert agent.checkpoint is not None
    try:
        return agent.checkpoint(new)
    except BaseException:
        run.saved = min(run.saved, new.first)
        raise


async def durable(run: RunState) -> None:
    """Wait until every checkpoint handed over has been written; a write that failed raises here."""
    write, run.pending = run.pending, None
    if write is not None:
        await write


_KIND_OF = {StopReason.CANCELLED: SnapshotKind.CANCELLED, StopReason.LIMIT: SnapshotKind.LIMITED}


def last_checkpoint(agent: Agent, run: RunState, kind: SnapshotKind) -> None:
    """A finished run's last entries go to the store too (its journal is kept for review and replay).
    Failing here loses no result: the run has ended, and its reason is returned all the same."""
    try:
        if agent.checkpoint is not None and isawaitable(
            write := _hand_over(agent, run, run.checkpoint(kind))
        ):
            run.pending = write  # the segment's caller awaits it (`settle`)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # the run has its reason already
        log.warning(
            "run %s: its last journal entries could not be saved", run.ctx.run_id, exc_info=loggable(exc)
        )


async def settle(run: RunState) -> None:
    """After `conclude`: wait for the checkpoints still being written (the segment returns only when
    they are durable); one that failed is logged, as the run has its reason already. A cancellation
    meanwhile (a second one, or a first that came after the run's end was decided) stops the wait,
    not the result: it is logged, and the segment returns its result all the same."""
    try:
        await durable(run)
    except asyncio.CancelledError:
        log.warning("run %s: cancelled while its last journal entries were being saved", run.ctx.run_id)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # the checkpointer's write's
        log.warning(
            "run %s: its last journal entries could not be saved", run.ctx.run_id, exc_info=loggable(exc)
        )


# -- 2. the model ----------------------------------------------------------------------------------


async def ask_model(agent: Agent, run: RunState, obs: RunObserver, pauses: int = 0) -> Reply | Stop:
    """The turn's reply. Call the model; retry transient failures with backoff while time is left,
    and shrink the history (per the agent's policy) before the context window is full, or when it is.
    A paused reply (Anthropic's `pause_turn`) is sent back within the same turn (`send_back`);
    `pauses` counts the turn's paused replies so far."""
    if (due := agent.history.due(run.journal.entries, agent.context_window)) and (
        stop := await shrink(agent, run, obs, due)
    ):
        return stop
    attempt = 0
    while True:
        attempt += 1
        request = ModelRequest(agent.system_prompt, tuple(run.sent), agent.tool_specs, agent.max_tokens)
        obs.model_started(request, attempt)
        try:
            reply = await _complete(agent, run, request)
        except _BudgetCut:
            note = "The model call was cut off when the time budget ran out."
            return Stop(StopReason.LIMIT, limit=LimitKind.SECONDS, note=note)
        except ModelError as exc:
            obs.model_ended(None, exc)
            if stop := await recover(agent, run, obs, exc, attempt):
                return stop
            continue  # ask again, in the same turn
        except Exception as exc:  # an adapter bug: the run ends as error, and the call says why
            obs.model_ended(None, exc)
            raise
        replied = received(agent, run, obs, reply)
        if isinstance(replied, Stop) or replied.stop != StopKind.PAUSED:
            return replied
        return await send_back(agent, run, obs, replied, pauses + 1)


async def recover(
    agent: Agent, run: RunState, obs: RunObserver, exc: ModelError, attempt: int
) -> Stop | None:
    """After a failed model call: None to ask again, once a transient failure has waited its turn (see
    `retry_wait`) or a prompt too long has had the history shrunk; else the stop (a budget that the
    failed calls used up, as a call cut off mid-stream still used tokens, stops the run: `limit`)."""
    if isinstance(exc, TransientModelError):
        if spent := _spent_on_failures(run, exc):  # a retry is a model call: the budget first
            return spent
        wait = retry_wait(agent, run, exc, attempt)
        if isinstance(wait, Stop):
            return wait
        await pause(run.clock, wait)
        return None
    if exc.error_type != CONTEXT_FULL:
        return Stop(StopReason.ERROR, note=f"The model call failed: {exc}", error_type=exc.error_type)
    return await shrink_more(agent, run, obs, exc)  # or the stop, when nothing more can go


async def send_back(agent: Agent, run: RunState, obs: RunObserver, reply: Reply, pauses: int) -> Reply | Stop:
    """A paused reply, the turn's `pauses`-th: recorded and sent back within the same turn (the model
    is asked again), unless the budget ran out with it or the turn has paused `MAX_PAUSES` times."""
    run.record(reply)
    if limit := run.budget.exceeded(run.tick(), within_turn=True):
        return Stop(StopReason.LIMIT, limit=limit)
    if pauses < MAX_PAUSES:
        return await ask_model(agent, run, obs, pauses)
    note = f"The model API paused the same turn {MAX_PAUSES} times."
    return Stop(StopReason.ERROR, note=note, error_type="pause_turn")


def received(agent: Agent, run: RunState, obs: RunObserver, reply: object) -> Reply | Stop:
    """A reply came: the observer sees it, then the journal takes it. A reply the loop cannot read
    (an adapter's bug) ends the run as `invalid_reply`, saying what is wrong, not with a TypeError."""
    if not isinstance(reply, ModelReply):
        problem = f"complete() returned {type(reply).__name__}, not a ModelReply"
        return unreadable(obs, UnreadableReply(problem))
    try:
        parts = reply.parts  # read and checked in one pass
    except UnreadableReply as exc:
        return unreadable(obs, exc)
    obs.model_ended(reply, None)
    try:
        return taken(agent, run, reply, parts)
    except (AttributeError, TypeError, ValueError, KeyError) as exc:  # a field of the wrong kind (`extra`...)
        return invalid_reply(f"{type(exc).__name__}: {exc}")


def unreadable(obs: RunObserver, error: UnreadableReply) -> Stop:
    """The model call gave a reply the loop cannot read: the observer sees why, and the run ends."""
    obs.model_ended(None, error)
    return invalid_reply(str(error))


def taken(agent: Agent, run: RunState, reply: ModelReply, parts: tuple[Part, ...]) -> Reply | Stop:
    """The reply (its content read as `parts`) as a journal entry, with why it ended (`stop`), its
    usage charged; or an error stop when the journal cannot keep it (see `invalid_reply`; token counts
    that are no counts are not charged either). An adapter that set no `stop` has its stop reason
    read in the words `ModelReply.stop_reason` has always used (the Messages API's)."""
    if (problem := reply.uncounted()) is not None:
        return invalid_reply(problem)
    run.add_usage(agent.prices.usage_of(agent.model.name, reply))  # `charge`, its counts checked above
    entry = reply.entry(parts)
    if (problem := unkept(entry)) is not None:
        return invalid_reply(problem)
    return entry


def invalid_reply(problem: str) -> Stop:
    """An adapter's (or a model API's) bug: a reply the journal cannot keep could be neither saved nor
    resumed, so the run ends before it is recorded."""
    note = (
        f"The model adapter gave a reply the run journal cannot keep: {problem}. Tool arguments "
        "must be JSON, and token counts whole numbers from 0 to 2**63 - 1."
    )
    return Stop(StopReason.ERROR, note=note, error_type="invalid_reply")


_NOT_CALLED = object()  # `_complete`'s model call not made yet


class _BudgetCut(Exception):
    """The time budget ran out during a model call."""


async def _complete(
    agent: Agent, run: RunState, request: ModelRequest, model: Model | None = None
) -> ModelReply:
    """One call of `model` (the agent's by default), cut off when the time budget runs out (no timer
    when time is not budgeted). A call cut off, or whose stream broke, still used tokens: what the
    adapter recorded of it is charged to the run."""
    model = model or agent.model
    left = run.seconds_left()
    pending: object = _NOT_CALLED
    with recording_cut_calls(left) as cut:
        try:
            if left is None:
                return await (pending := model.complete(request))
            async with asyncio.timeout(left) as budget:
                return await (pending := model.complete(request))
        except (TimeoutError, asyncio.CancelledError, ModelError) as exc:
            for partial in cut:
                charge(agent, run, model.name, partial)
            if isinstance(exc, TimeoutError) and left is not None and budget.expired():
                raise _BudgetCut() from None
            raise  # the adapter's own timeout, or a cancellation
        except TypeError:
            if pending is not _NOT_CALLED and not isawaitable(pending):  # a plain `def complete`
                raise not_awaitable(model, pending) from None
            raise


def not_awaitable(model: Model, value: object) -> ConfigError:
    """What a model adapter whose `complete` returned its reply instead of an awaitable is told."""
    return ConfigError(
        f"the model adapter {type(model).__name__}'s complete() returned {type(value).__name__}, not an "
        "awaitable: define it as `async def complete(self, request)`"
    )


async def shrink_more(agent: Agent, run: RunState, obs: RunObserver, cause: object) -> Stop | None:
    """The window is full: the policy's next, stronger shrink; `limit`/`context` when there is none."""
    if (step := agent.history.stronger(run.journal.entries)) is None:
        return context_full(cause)
    return await shrink(agent, run, obs, step)


async def shrink(agent: Agent, run: RunState, obs: RunObserver, step: Shrunk | Compaction) -> Stop | None:
    """Shrink the history. A compaction by a model asks it for the summary first: that call is
    charged to the run, and a budget it uses up stops the run there (the summary is kept)."""
    if isinstance(step, Compaction):
        step = await summarize(agent, run, obs, step)
        run.record(step)
        if limit := run.budget.exceeded(run.tick(), within_turn=True):
            note = f"The {limit} budget ran out with the model call that summarized the older turns."
            return Stop(StopReason.LIMIT, limit=limit, note=note)
        return None
    run.record(step)
    return None


async def summarize(agent: Agent, run: RunState, obs: RunObserver, compaction: Compaction) -> Shrunk:
    """The compaction with the model's summary; when its call fails, the account written by code."""
    model = compaction.how.model or agent.model
    request = compaction.request(agent.system_prompt, agent.tool_specs, agent.max_tokens)
    obs.model_started(request, 1)
    try:
        reply = await _complete(agent, run, request, model)
    except Exception as exc:  # a failed summary never fails the run: the account stands in
        obs.model_ended(None, exc)
        told = await said_soon(exc)  # the model's exception: read off the loop
        log.warning("run %s: the model could not summarize older turns: %s", run.ctx.run_id, told)
        why = "the time budget ran out" if isinstance(exc, _BudgetCut) else f"{type(exc).__name__}: {told}"
        return compaction.failed(why[:300])
    obs.model_ended(reply, None)
    charge(agent, run, model.name, reply)
    return compaction.done(reply)


def charge(agent: Agent, run: RunState, model: str, reply: ModelReply) -> None:
    """Count a model call's tokens and cost (cache reads and writes at their own prices); a call
    whose token counts are no counts is not counted (a warning says so: no store could hold them)."""
    if (problem := reply.uncounted()) is not None:
        log.warning("run %s: a model call's usage was not counted: %s", run.ctx.run_id, problem)
        return
    run.add_usage(agent.prices.usage_of(model, reply))


def charged(agent: Agent, run: RunState) -> None:
    """Count the model calls a tool or a verifier made for the run (`RunContext.charge`)."""
    charges, run.ctx.charges = run.ctx.charges, []
    for c in charges:
        charge(agent, run, c.model, c.reply)


def context_full(cause: object) -> Stop:
    note = f"The model's context window is full and the history policy cannot shrink it further: {cause}"
    return Stop(StopReason.LIMIT, limit=LimitKind.CONTEXT, note=note)


def _spent_on_failures(run: RunState, exc: ModelError) -> Stop | None:
    """`limit` when the calls that failed (a stream broken or cut mid-way still used tokens) used up
    the tokens or cost budget; time is `retry_wait`'s to weigh."""
    limit = run.budget.exceeded(run.tick(), within_turn=True)
    if limit is None or limit is LimitKind.SECONDS:
        return None
    note = f"The {limit} budget ran out with the model calls that failed (what they used counts): {exc}"
    return Stop(StopReason.LIMIT, limit=limit, note=note)


def retry_wait(agent: Agent, run: RunState, exc: TransientModelError, attempt: int) -> float | Stop:
    """How long to wait before the next attempt, or the stop when no attempt is left, when the wait
    would run past the time budget, or when the API asks for a wait no run should sleep through."""
    delay = agent.retry.delay(attempt, exc.retry_after)
    left = run.seconds_left()
    if delay is not None and exc.retry_after is not None:  # the API's own wait
        if left is not None and delay >= left:
            note = (
                f"The model API asked to wait {exc.retry_after:g} s (retry-after) and the time budget "
                f"has {left:.1f} s left: {exc}"
            )
            return Stop(StopReason.LIMIT, limit=LimitKind.SECONDS, note=note)
        if delay > MAX_RETRY_AFTER:
            note = (
                f"The model API asked to wait {exc.retry_after:g} s (retry-after), more than the "
                f"{MAX_RETRY_AFTER:g} s a run waits out: {exc}"
            )
            return Stop(StopReason.ERROR, note=note, error_type=exc.error_type)
    if delay is not None and (left is None or delay < left):
        return delay
    note = f"The model API still failed after {attempt} attempts: {exc}"
    if delay is not None and left is not None:  # attempts were left, but no time for the next one
        note = (
            f"The model API failed (attempt {attempt}) and the next retry, in {delay:.1f} s, would pass the "
            f"time budget ({left:.1f} s left): {exc}"
        )
    return Stop(StopReason.ERROR, note=note, error_type=exc.error_type)


# -- 3, 4. the calls -------------------------------------------------------------------------------


async def act_on_calls(agent: Agent, run: RunState, calls: Sequence[Call], obs: RunObserver) -> Decision:
    """Answer the calls, the other tools first and then `finish` (3, then 4), which may stop or
    suspend the run: what the verifiers check is what the whole reply did. An agent made with
    `finish_last=False` takes them in the model's order, as before.

    Each result but the last is checkpointed as it lands, and the last one
    with the completed turn, so a crash never runs a call again whose result
    was recorded.
    """
    if agent.finish_last and len(calls) > 1:
        calls = sorted(calls, key=_is_finish)  # stable: the model's order otherwise
    signal = TurnSignal.TOOL_USE
    for i, call in enumerate(calls):
        if signal is TurnSignal.DONE_REJECTED and _is_done(call):  # the verifiers run once a reply
            step: Step = Result(call.id, ONCE_A_REPLY, is_error=True)
        else:
            try:
                step = await handle_call(agent, run, call, obs)
            except asyncio.CancelledError:
                cut_after(run, call, calls[i + 1 :])
                raise
        if not isinstance(step, Result):  # most steps are a result: one check
            if isinstance(step, (Stop, Suspend)):
                return ends_turn(run, step, calls[i + 1 :])
            signal = TurnSignal.DONE_REJECTED  # a `done` the verifiers rejected: the model is told why
            step = step.result
        run.record(step)
        if i < len(calls) - 1:
            checkpoint(agent, run)
    return _GO_ON[signal]


def cut_after(run: RunState, call: Call, later: Sequence[Call]) -> None:
    """A call cut short (its outcome unknown, `CUT_SHORT`): the reply's later calls were planned on
    it, so they are recorded as not run, and a resumed run asks the model again instead of running
    them (as after a suspension)."""
    last = run.journal.entries[-1]
    if isinstance(last, Result) and last.call_id == call.id:
        not_run(run, later, NOT_RUN_AFTER_CUT)


def ends_turn(run: RunState, step: Stop | Suspend, later: Sequence[Call]) -> Stop | Suspend:
    """A stop ends the turn as it is; a suspension records the calls after it as not run, then itself."""
    if isinstance(step, Suspend):
        not_run(run, later, NOT_RUN)
        run.record(Suspended(step.suspension))
    return step


def not_run(run: RunState, calls: Sequence[Call], why: str) -> None:
    """Record each of `calls` as not run, `why` being what the model is told."""
    for call in calls:
        run.record(Result(call.id, why, is_error=True))


def _is_finish(call: Call) -> bool:
    return call.name == FINISH_TOOL


def _is_done(call: Call) -> bool:
    return call.name == FINISH_TOOL and call.arguments.get("kind") == FinishKind.DONE


async def handle_call(agent: Agent, run: RunState, call: Call, obs: RunObserver) -> Step:
    """One call: an answered one, `finish`, an unknown tool, a tool needing approval, or a tool to run."""
    if (answered := run.journal.answer_for(call.id)) is not None:
        return await apply_answer(agent, run, call, answered, obs)
    if call.name == FINISH_TOOL:
        return await on_finish(agent, run, call, obs)
    tool = agent.tool_named(call.name)
    if tool is None:
        return unknown_tool(agent, call, obs)
    if tool.needs_approval and arguments_problem(tool, call.arguments) is None:  # else: run_tool says why
        args = json.dumps(call.arguments, sort_keys=True)
        question = f"Approve the call {call.name}({args})?"
        return Suspend(agent.suspension(question, PendingAction(call.id, call.name, call.arguments), call.id))
    return (
        declined(agent, run, call)
        or repeated(agent, run, call)
        or await run_tool(agent, run, tool, call, obs)
    )


def unknown_tool(agent: Agent, call: Call, obs: RunObserver) -> Result:
    """A call to a tool the agent lacks: an error result for the model, and a failed call
    (`unknown_tool`) in the run's telemetry, as a framework's run observed by Endstate records it."""
    known = ", ".join(sorted(t.name for t in agent.tools)) or "none"
    text = f"Error: there is no tool {call.name!r}. Tools: {known}, finish."
    obs.tool_started(call)
    obs.tool_ended(call, ToolOutcome(text, is_error=True, error_type=UNKNOWN_TOOL))
    return Result(call.id, text, True)


def declined(agent: Agent, run: RunState, call: Call) -> Result | None:
    """The result of a call a model that declined made (`Reply.declined`: only a journal an older release
    wrote holds one), which is never run, even approved. Asked only where the call would run: a Temporal
    run's gate (`workflow.patched`) must be asked where the older code ran the call, and only there."""
    if not run.journal.declined(call.id) or not agent.skip_declined():
        return None
    log.warning(
        "run %s: call %s (%s) was made by a model that declined: not run", run.ctx.run_id, call.id, call.name
    )
    return Result(call.id, NOT_RUN_DECLINED, is_error=True)


def repeated(agent: Agent, run: RunState, call: Call) -> Result | None:
    """The result of a call the run is stuck on already (`ProgressDetector.stuck_on`: a reply that makes
    one call hundreds of times), which is not run again: the run stops `no_progress` at the turn's end, as
    it would have after running them all. Asked only where the call would run (a Temporal run's gate)."""
    progress = run.progress
    if not (isinstance(progress, ProgressDetector) and progress.stuck()):
        return None  # the usual: no call has been made that often
    count = progress.stuck_on(call_signature(call.name, call.arguments))
    if count is None or not agent.skip_repeats():
        return None
    return Result(call.id, NOT_RUN_REPEATED.format(name=call.name, count=count), is_error=True)


async def apply_answer(
    agent: Agent, run: RunState, call: Call, answered: Answered, obs: RunObserver
) -> Result | Stop | Suspend:
    """What a person (or the help policy) said becomes the result of the call the run waited on."""
    who = "a person" if answered.by == "person" else "the help policy, as nobody answered in time"
    run.progress.heard()  # news: idle turns before the question never end the run before the model reads it
    reply = answered.reply
    if isinstance(reply, Answer):
        return Result(call.id, f"Answer from {who}: {reply.text}")
    if isinstance(reply, Denial):
        reason = reply.reason.strip().rstrip(". ") or "no reason given"  # blank: none, as on every face
        return denied(agent, run, call, f"Denied by {who}: {reason}. Do not retry this call.")
    tool = agent.tool_named(call.name)
    if tool is None:
        raise SnapshotError(f"agent {agent.name!r} has no tool {call.name!r} to run after approval")
    if run.journal.started(call.id):  # approved and started, but no result: it may have happened
        return Suspend(agent.suspension(_unsure(call), None, call.id))
    if (skipped := declined(agent, run, call)) is not None:
        return skipped
    run.record(Started(call.id))
    checkpoint(agent, run)  # before the side effect, so a crash never repeats it unasked
    return await run_tool(agent, run, tool, call, obs)


def denied(agent: Agent, run: RunState, call: Call, text: str) -> Result | Stop:
    """A denied call's result. A denial changes nothing, so the call counts as a repeat like any other:
    the same call denied `max_repeats` times ends the run `no_progress` instead of asking again and again.
    The state it saw is the agent's fingerprint, or `DENIED` (the reason is not state), kept in `seen`.
    (Not counted where `count_denials` says no: a Temporal history whose worker asked again.)"""
    if not agent.count_denials():
        return Result(call.id, text)
    seen = state_seen(agent, run, DENIED)
    if isinstance(seen, Stop):
        return seen
    run.progress.observe(call_signature(call.name, call.arguments), seen)
    return Result(call.id, text, seen=seen)


def state_seen(agent: Agent, run: RunState, fallback: str) -> str | Stop:
    """The digest of the state a call saw: the agent's fingerprint, else `fallback`. A fingerprint that
    raises ends the run as error (its exception goes up to the segment); a `CancelledError` of its own
    too, named so, where the segment would take it for the caller's cancel (a sync call is never where
    the run's cancel lands)."""
    if agent.fingerprint is None:
        return digest(fallback)
    try:
        return digest(agent.fingerprint(run.ctx))
    except asyncio.CancelledError as exc:
        if run_cancelled():
            raise  # the run's task is being cancelled: the run's cancel, not the fingerprint's
        note = f"The agent's fingerprint raised CancelledError: {said(exc)}"
        return Stop(StopReason.ERROR, note=note, error_type="CancelledError")


def _unsure(call: Call) -> str:
    args = json.dumps(call.arguments, sort_keys=True)
    return (
        f"The approved call {call.name}({args}) was started, but its worker stopped before it "
        "reported back: it may or may not have happened. Check, then answer with what happened."
    )


async def run_tool(
    agent: Agent, run: RunState, tool: Tool, call: Call, obs: RunObserver
) -> Result | Stop | Suspend:
    """Execute a tool, record the call, and tell the progress detector what it saw; a call lost on its
    way (`ToolOutcome.lost`) suspends the run: a person says whether it took effect."""
    if run.pending is not None:  # no side effect before every earlier checkpoint is durable
        await durable(run)
    check = getattr(agent.checkpoint, "lease_check", None)  # a runner's: see `Runner._lease_check`
    if check is not None and (held := check()) is not None:
        await held  # nor while another worker may hold the run (this one stalled past its lease)
    obs.tool_started(call)
    object.__setattr__(run.ctx, "call_id", call.id)  # the loop's own write: past the identity guard
    left = run.seconds_left()
    try:
        outcome = await execute(tool, call.arguments, run.ctx, limit=left)
    except asyncio.CancelledError:  # cut off (a shutdown's grace ran out): what it did is unknown
        if not tool.needs_approval:  # an approved call is marked started: a person is asked instead
            run.record(Result(call.id, CUT_SHORT, is_error=True, ran=tool.name))
        raise
    finally:  # the tool's own model calls (a sub-agent's) count in the run's budget
        if run.ctx.charges:
            charged(agent, run)
    obs.tool_ended(call, outcome)
    if outcome.lost:
        return Suspend(agent.suspension(_unsure(call), None, call.id))
    run.note_call(call.name, call.arguments, outcome.text, outcome.is_error)
    if isinstance(seen := state_seen(agent, run, outcome.text), Stop):
        return seen
    run.progress.observe(call_signature(call.name, call.arguments), seen)
    result = Result(call.id, outcome.text, outcome.is_error, tool.name, seen, outcome.blocks)
    if outcome.budget_cut:  # the time budget ran out during the call: its result is kept, the run stops
        run.record(result)
        when = (
            f"before {tool.name} could start" if left is not None and left <= 0 else f"while {tool.name} ran"
        )
        return Stop(StopReason.LIMIT, limit=LimitKind.SECONDS, note=f"The time budget ran out {when}.")
    return result


async def on_finish(agent: Agent, run: RunState, call: Call, obs: RunObserver) -> Step:
    """The model's signal: done is verified, give_up stops, need_help suspends."""
    signal = parse_finish(call.arguments)
    if isinstance(signal, str):
        return Result(call.id, signal, is_error=True)
    run.ctx.note = signal.note
    if signal.kind is FinishKind.GIVE_UP:
        return Stop(StopReason.GAVE_UP, note=signal.note, cause=StopCause.AGENT)
    if signal.kind is FinishKind.NEED_HELP:
        return Suspend(agent.suspension(signal.note or "The agent asked for help.", None, call.id))
    return await verify(agent, run, signal, call, obs)


async def verify(
    agent: Agent, run: RunState, signal: Signal, call: Call, obs: RunObserver
) -> Rejected | Stop:
    """Run every verifier; a failure goes back to the model as the finish result."""
    try:
        verdict = await run_verifiers(agent.verifiers, run.ctx, run.seconds_left())
    except JudgeRefused as exc:  # as a refusal of the agent's own model: no finish can be judged
        return Stop(StopReason.GAVE_UP, note=str(exc), cause=StopCause.REFUSAL)
    except Exception as exc:  # its message read off the loop (its own code), within the time left
        note = f"A verifier raised {type(exc).__name__}: {await said_by(exc, run.seconds_left())}"
        return Stop(StopReason.ERROR, note=note, error_type="verifier_error")
    finally:  # a verifier's own model calls (an evaluator) count in the run's budget
        charged(agent, run)
    if verdict.budget_cut:
        note = "The time budget ran out while the verifiers checked the result."
        return Stop(StopReason.LIMIT, limit=LimitKind.SECONDS, note=note)
    failures = verdict.failures
    obs.verified(failures)
    if not failures:
        return Stop(StopReason.SUCCESS, output=signal.note, verified=bool(agent.verifiers))
    run.failures.extend(failures)
    return Rejected(Result(call.id, REJECTED + "; ".join(failures), is_error=True))


# -- the end ---------------------------------------------------------------------------------------


def conclude(agent: Agent, run: RunState, decision: Stop | Suspend) -> RunResult:
    """Turn a stop or a suspend into the run's structured result. A run whose state JSON cannot
    hold ends as error where its state would be saved (a snapshot to resume, or a store)."""
    if (problem := run.stop_clock()) is not None:  # the result and the snapshot are reckoned by it
        log.warning("run %s: the agent's clock failed (%s); its time stops there", run.ctx.run_id, problem)
    if _saves_state(agent, decision) and (problem := run.state_problem()) is not None:
        decision = Stop(StopReason.ERROR, note=problem, error_type="ConfigError")
    if isinstance(decision, Suspend):
        s = decision.suspension
        snap = run.snapshot(SnapshotKind.SUSPENDED)
        summary = summary_of(agent, run, StopReason.NEED_HELP, None)
        return run.result(StopReason.NEED_HELP, note=s.question, summary=summary, suspension=s, snapshot=snap)
    run.record(Stopped(decision.reason, decision.limit, decision.note, run.turn_cut, run.clock.time()))
    kind = _KIND_OF.get(decision.reason, SnapshotKind.FINISHED)
    if kind is not SnapshotKind.CANCELLED:
        last_checkpoint(agent, run, kind)
    return run.result(
        decision.reason,
        limit=decision.limit,
        cause=decision.cause,
        output=decision.output,
        note=decision.note,
        summary=summary_of(agent, run, decision.reason, decision.limit),
        verified=decision.verified,
        error_type=decision.error_type,
        snapshot=run.snapshot(kind) if kind is not SnapshotKind.FINISHED else None,
    )


def summary_of(agent: Agent, run: RunState, reason: StopReason, limit: LimitKind | None) -> str:
    """The agent's summary of the run; the default one (logged) when the agent's raises (`SystemExit`,
    `KeyboardInterrupt` and a `CancelledError` of its own too: the run's end is decided already) or
    gives no text: a summary never keeps a run from its result."""
    text: object
    try:
        text = agent.summarize(run.ctx, run.tick(), reason, limit)
    except (Exception, SystemExit, KeyboardInterrupt, asyncio.CancelledError) as exc:  # a sync call's own
        text = exc
    if isinstance(text, str):
        return text
    why = (
        f"raised {type(text).__name__}: {said(text)}"
        if isinstance(text, BaseException)
        else f"returned {type(text).__name__}, not text"
    )
    log.warning("run %s: the agent's summarize %s; the default summary stands in", run.ctx.run_id, why)
    usage = run.tick()
    try:
        return default_summary(run.ctx, usage, reason, limit)
    except Exception:  # what it reads was corrupted (a tool's junk in `ctx.calls`): the headline stands
        log.warning(
            "run %s: the default summary failed; its headline stands in", run.ctx.run_id, exc_info=True
        )
        return headline(reason, limit, usage.turns, usage.tokens, usage.known_cost())


def _saves_state(agent: Agent, decision: Stop | Suspend) -> bool:
    if isinstance(decision, Suspend):
        return True
    return decision.reason is not StopReason.ERROR and (
        agent.checkpoint is not None or decision.reason in _KIND_OF
    )


def _signal_of(decision: Decision) -> TurnSignal | StopReason:
    """What the turn did, as `turn_ended` gets it: a turn that ends the segment signals its reason."""
    if isinstance(decision, Continue):
        return decision.signal
    if isinstance(decision, Suspend):
        return StopReason.NEED_HELP
    return decision.reason
