"""`Agent`: a model, tools, verifiers and budgets, and the runs made with them."""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agent._aio import in_running_loop
from agent._frozen import cached
from agent._loop import Stop, conclude, drive, paused, settle
from agent._state import RunState
from agent._valid import is_finite_number, is_text, is_whole
from agent.audit import SuccessAudit
from agent.budget import Budget, Extension, PriceTable, Spent
from agent.checks import TurnCheck
from agent.clock import SYSTEM_CLOCK, CancelSignal, Clock, check_cancel, check_clock
from agent.context import RunContext, own_state
from agent.errors import ConfigError, HandedOver, SnapshotError, TakenOver
from agent.finish import FINISH_SPEC, FINISH_TOOL
from agent.history import HistoryPolicy, ModelSummary
from agent.hooks import HumanWait, NoHooks, RunHooks, RunInfo, RunObserver, SegmentLink, check_hooks, guard
from agent.journal import (
    Answer,
    Answered,
    Approval,
    Denial,
    Extended,
    HumanReply,
    Journal,
    Task,
    reply_problem,
)
from agent.models.base import Model, max_tokens_problem
from agent.models.catalog import DEFAULT_MODEL
from agent.policies import HelpPolicy, RetryPolicy
from agent.progress import ProgressDetector
from agent.result import LimitKind, PendingAction, RunResult, StopReason, Suspension
from agent.snapshot import Checkpoint, Snapshot, SnapshotKind
from agent.summary import summarize as default_summary
from agent.tools import Tool, own_cancels, said, said_soon
from agent.verify import Verifier, evaluators

Summarizer = Callable[[RunContext, Spent, StopReason, LimitKind | None], str]
# a `KeyboardInterrupt` from a callback of the run (a hook, a check, the fingerprint, the checkpointer)
_INTERRUPTED = "The run was interrupted (KeyboardInterrupt in one of its callbacks)."


async def _said_uncut(exc: BaseException) -> str:
    """`said_soon(exc)` where a cancel must not cut the run's end short: one that arrives while the
    message is read leaves it unread (the cancel stays asked: `cancelling()` still says so)."""
    try:
        return await said_soon(exc)
    except asyncio.CancelledError:
        return "(its message could not be read: the run was cancelled meanwhile)"


@dataclass
class Agent:
    """What a team defines once and runs many tasks through.

    `run`/`arun` start a task, `resume`/`aresume` continue a suspended or
    cancelled one from its snapshot, `expire`/`aexpire` apply the help policy
    when a person never answered. None of them raises for an expected stop.
    """

    name: str
    model: Model
    instructions: str = ""
    tools: Sequence[Tool] = ()
    verifiers: Sequence[Verifier] = ()
    budget: Budget = field(default_factory=Budget)
    task_type: str = "default"
    progress: Callable[[], ProgressDetector] = ProgressDetector
    fingerprint: Callable[[RunContext], str] | None = None
    help: HelpPolicy = field(default_factory=HelpPolicy)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    prices: PriceTable = field(default_factory=PriceTable)
    hooks: RunHooks = field(default_factory=NoHooks)
    max_tokens: int = 4096
    summarize: Summarizer = default_summary
    checkpoint: Callable[[Checkpoint], Awaitable[None] | None] | None = None  # may write later (see _loop)
    clock: Clock = SYSTEM_CLOCK
    history: HistoryPolicy = field(default_factory=HistoryPolicy)
    checks: Sequence[TurnCheck] = ()  # run after every turn: a goal reached or an invariant broken ends it
    audit: SuccessAudit | None = None  # re-check a share of successes later (durable runs: the Runner does)
    # a reply's `finish` is judged after its other calls ran (DESIGN.md's order); False takes the calls
    # in the model's order, as before: a Temporal run started by that code replays with it
    finish_last: bool = True
    # whether a call a model that declined made (`Reply.declined`: a journal an older release wrote) is left
    # unrun, asked when the loop meets one: a Temporal run asks `workflow.patched`, so that a history whose
    # worker ran such a call replays as it ran
    skip_declined: Callable[[], bool] = field(default=lambda: True, repr=False, compare=False)
    # whether a call the run is stuck on already (made `max_repeats` times in a row with no change in state)
    # is left unrun when the same reply makes it again, asked when the loop meets one: a Temporal run asks
    # `workflow.patched`, so that a history whose worker ran such calls replays as it ran
    skip_repeats: Callable[[], bool] = field(default=lambda: True, repr=False, compare=False)
    # whether a denied call counts toward `no_progress` as a repeat (a denial changes nothing), asked at each
    # denial: a Temporal run asks `workflow.patched`, so that a history whose worker asked again replays so
    count_denials: Callable[[], bool] = field(default=lambda: True, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.hooks is None:  # "no hooks", said out loud
            self.hooks = NoHooks()
        _check_config(self)
        names = [t.name for t in self.tools]
        if FINISH_TOOL in names:
            raise ConfigError(f"agent {self.name!r}: the tool name 'finish' is reserved for the loop")
        if dupes := sorted({n for n in names if names.count(n) > 1}):
            raise ConfigError(f"agent {self.name!r}: tool names must be unique; repeated: {dupes}")
        _check_server_tool_names(self, names)
        models = [self.model, *(v.model for v in evaluators(self.verifiers))]  # in all_of too
        if aliases := _priced_as(models):
            self.prices = self.prices.pricing_as(aliases)
        if self.budget.max_cost_usd is not None:  # a cost budget needs every model's price
            for name in {*(m.name for m in models), *self.history.models()}:
                self.prices.require(name, self.name)
            for model in models:  # and a model asked for fast mode its fast-mode price
                if getattr(model, "speed", None) == "fast":
                    self.prices.require(model.name, self.name, fast=True)

    # -- what the loop asks of the agent ---------------------------------

    @cached
    def tool_specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self.tools] + [FINISH_SPEC]

    @property
    def system_prompt(self) -> str:
        return self.instructions

    @property
    def context_window(self) -> int | None:
        """The model's context window in tokens, when the model says (else the policy's default)."""
        window = getattr(self.model, "context_window", None)
        return window if isinstance(window, int) else None

    def tool_named(self, name: str) -> Tool | None:
        return self._tools_by_name.get(name)

    @cached
    def _tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    @cached
    def _tools_by_name(self) -> dict[str, Tool]:
        named: dict[str, Tool] = {}
        for t in self.tools:
            named.setdefault(t.name, t)  # the first of a name, as the model's list shows it
        return named

    def suspension(self, question: str, pending: PendingAction | None, call_id: str = "") -> Suspension:
        now = self.clock.time()
        return Suspension(question, now + self.help.wait_seconds, now, pending, call_id)

    # -- entry points ----------------------------------------------------

    def run(self, task: str, **kwargs: Any) -> RunResult:
        """Sync entry point; see `arun`."""
        return _sync(self.arun(task, **kwargs))

    async def arun(
        self,
        task: str,
        *,
        run_id: str | None = None,
        state: dict[str, Any] | None = None,
        cancel: CancelSignal | None = None,
    ) -> RunResult:
        """Carry `task` through the loop until it ends or suspends.

        `cancel` is any object with `is_set()` (an `asyncio.Event` or a
        `threading.Event`); it is checked before every turn. `True` cancels the
        run; an answer that is neither True nor False ends it as `error`.
        """
        if not is_text(task):
            raise ConfigError("task must be a non-empty string")
        if run_id is not None and not (isinstance(run_id, str) and run_id):
            raise ConfigError(f"run_id must be a non-empty string (or None for a new id), not {run_id!r}")
        if state is not None and not isinstance(state, dict):
            raise ConfigError(f"state must be a dict of JSON values, not {type(state).__name__}")
        check_cancel(cancel)
        self._check_clock()
        first = Task(task)
        ctx = RunContext(
            run_id or new_run_id(),
            self.name,
            task,
            self.task_type,
            Journal([first]),
            state=own_state(state or {}),
        )
        run = RunState(  # the model is sent the task as it is (no history policy to apply yet)
            ctx, Spent(), self.progress(), self.clock, history=self.history, budget=self.budget, sent=[first]
        )
        return await self._segment(run, cancel)

    def resume(self, snapshot: Snapshot, reply: HumanReply | str | None = None, **kwargs: Any) -> RunResult:
        """Sync entry point; see `aresume`."""
        return _sync(self.aresume(snapshot, reply, **kwargs))

    async def aresume(
        self,
        snapshot: Snapshot,
        reply: HumanReply | str | None = None,
        *,
        approved: bool | None = None,
        more: Extension | None = None,
        cancel: CancelSignal | None = None,
        now: float | None = None,
    ) -> RunResult:
        """Continue a suspended, cancelled or checkpointed run in this process.

        A question needs an `Answer("...")` (or the text), a pending tool call
        an `Approval()` or a `Denial("why")` (or `approved=True`/`False`, with
        the text as a denial's reason). An answer that comes after the
        deadline is too late: the help policy applies instead. A run that
        stopped at a limit goes on with `more=Extension(turns=10)` (or seconds,
        tokens, cost), added to the agent's ceilings for this run.
        """
        self._check_snapshot(snapshot)
        check_cancel(cancel)
        self._check_clock()
        now = self.clock.time() if now is None else _check_now(now)
        if snapshot.kind is SnapshotKind.LIMITED or more is not None:
            if snapshot.kind is SnapshotKind.LIMITED:  # no question open: a reply would go unread
                refuse_unasked(snapshot, as_reply(reply, approved))
            return await self._extend(snapshot, more, now, cancel)
        s = snapshot.suspension
        if s is not None and now >= s.deadline:
            return await self.aexpire(snapshot, now=now, cancel=cancel)
        human = as_reply(reply, approved)
        if s is None:
            refuse_unasked(snapshot, human)
        else:
            check_reply(s, human)
            if isinstance(human, Approval):
                check_pending(snapshot, s)
                self._check_runnable(snapshot, s)
        return await self._continue(snapshot, human, "person", now, cancel)

    def expire(self, snapshot: Snapshot, **kwargs: Any) -> RunResult:
        """Sync entry point; see `aexpire`."""
        return _sync(self.aexpire(snapshot, **kwargs))

    async def aexpire(
        self, snapshot: Snapshot, *, now: float | None = None, cancel: CancelSignal | None = None
    ) -> RunResult:
        """A suspended run whose deadline passed: end it, or go on with the default answer."""
        self._check_snapshot(snapshot)
        check_cancel(cancel)
        self._check_clock()
        now = self.clock.time() if now is None else _check_now(now)
        s = snapshot.suspension
        if s is None or now < s.deadline:
            raise SnapshotError(f"run {snapshot.run_id} is not waiting past a deadline")
        if self.help.on_timeout == "resume":
            default = self.help.default_answer
            human: HumanReply = Denial(default) if s.pending else Answer(default)
            return await self._continue(snapshot, human, "policy", now, cancel)
        run = RunState.from_snapshot(snapshot, self.progress(), self.clock, self.history, self.budget)
        obs = self._observe(run, snapshot)
        self._record_wait(run, obs, s, now, "expired")
        note = f"Nobody answered {s.question!r} before the deadline."
        result = conclude(self, run, Stop(StopReason.HELP_TIMEOUT, note=note))
        await settle(run)
        obs.run_ended(result)
        return result

    # -- segments --------------------------------------------------------

    async def _extend(
        self, snap: Snapshot, more: Extension | None, now: float, cancel: CancelSignal | None
    ) -> RunResult:
        """Give a run that stopped at a limit more budget, and drive it on."""
        if snap.kind is not SnapshotKind.LIMITED:
            raise SnapshotError(
                f"run {snap.run_id} did not stop at a limit ({snap.kind}); more= is for limit stops"
            )
        if more is None:
            raise SnapshotError(
                f"run {snap.run_id} stopped at a limit: pass more=Extension(turns=..., seconds=..., "
                "tokens=..., cost_usd=...) to continue it"
            )
        run = self.extended(snap, more)
        run.extend(Extended(more.turns, more.seconds, more.tokens, more.cost_usd, now))
        return await self._segment(run, cancel, self._observe(run, snap, extended=True))

    def extended(self, snap: Snapshot, more: Extension) -> RunState:
        """The run of a limit stop as `more` would leave it; a `SnapshotError` when it would still
        be out of budget (the runner asks before it takes the run, so an HTTP resume hears of it)."""
        run = RunState.from_snapshot(snap, self.progress(), self.clock, self.history, self.budget)
        if (still := run.budget.plus(more).exceeded(spent := run.tick())) is not None:
            short = run.budget.short_by(spent, still)  # the whole amount: a lowered ceiling may need more
            raise SnapshotError(
                f"run {snap.run_id} would still be out of {still} budget: extend {still} {short}"
            )
        return run

    async def _continue(
        self,
        snap: Snapshot,
        human: HumanReply | None,
        by: Literal["person", "policy"],
        now: float,
        cancel: CancelSignal | None,
    ) -> RunResult:
        """Append the answer (if the run waits for one) and drive the loop on."""
        run = RunState.from_snapshot(snap, self.progress(), self.clock, self.history, self.budget)
        obs = self._observe(run, snap)
        s = snap.suspension
        if s is not None and human is not None:
            self._record_wait(run, obs, s, now, "answered" if by == "person" else "expired")
            run.record(Answered(human, now, by))
        return await self._segment(run, cancel, obs)

    async def _segment(
        self, run: RunState, cancel: CancelSignal | None, obs: RunObserver | None = None
    ) -> RunResult:
        """Drive one segment; whatever happens, it ends with a result and `run_ended`."""
        obs = obs or self._observe(run, None)
        taken: TakenOver | None = None
        with own_cancels():  # a cancel left on the task by an earlier run is not this run's
            try:
                result = await drive(self, run, obs, cancel)
            except (asyncio.CancelledError, KeyboardInterrupt) as exc:  # Ctrl-C in a callback: as in a tool
                run.drop_unanswered_turn()
                why = "The run was cancelled." if isinstance(exc, asyncio.CancelledError) else _INTERRUPTED
                result = conclude(self, run, Stop(StopReason.CANCELLED, note=why))
            except HandedOver as exc:  # paused between turns: the run goes on from its checkpoint elsewhere
                taken, result = exc, paused(run, exc)
            except TakenOver as exc:  # no end of the run: it goes on in the worker that holds it now
                taken, note = exc, f"{said(exc)}. The run goes on there; this segment ended here."
                result = conclude(self, run, Stop(StopReason.CANCELLED, note=note))
            except (Exception, SystemExit) as exc:  # a bug, a failing store, a callback's exit: never a raise
                note, kind = f"{type(exc).__name__}: {await _said_uncut(exc)}", type(exc).__name__
                if (clock := run.stop_clock()) is not None:  # the agent's clock failed mid-run
                    note, kind = f"The agent's clock failed mid-run: {clock}", "clock_failed"
                result = conclude(self, run, Stop(StopReason.ERROR, note=note, error_type=kind))
        if run.pending is not None:  # the segment returns when all it handed the checkpointer is durable
            await settle(run)
        if taken is not None:
            obs.run_taken_over(result)
        else:
            obs.run_ended(result)
        return result

    def _observe(self, run: RunState, snap: Snapshot | None, extended: bool = False) -> RunObserver:
        if isinstance(self.hooks, NoHooks):  # nothing observes the run: no RunInfo to make (see `guard`)
            return RunObserver()
        link = SegmentLink(snap.trace_id, snap.span_id) if snap and snap.trace_id and snap.span_id else None
        info = RunInfo(
            run_id=run.ctx.run_id,
            agent=self.name,
            task_type=run.ctx.task_type,
            model=self.model.name,
            provider=self.model.provider,
            task=run.ctx.task,
            segment=run.segment,
            continues=link,
            started_at=self.clock.time(),
            limits=run.budget.ceilings(),
            tools=self._tool_names,
            spent=run.usage.copy(),
            resumed_from=_resumed_from(snap),
            resumed_stopped_at=snap.stopped_at if snap is not None else None,
            extended=extended,
        )
        obs = guard(self.hooks, info)
        run.trace_id, run.span_id = obs.trace_id, obs.span_id
        if obs.trace_id is None:
            obs.ids_later(functools.partial(_trace_into, run))
        return obs

    def _record_wait(self, run: RunState, obs: RunObserver, s: Suspension, now: float, outcome: str) -> None:
        pending = s.pending.name if s.pending else None
        wait = HumanWait(s.suspended_at, now, outcome, s.question, pending, s.deadline)
        run.usage.waiting_seconds += wait.seconds
        obs.human_waited(wait)

    def _check_runnable(self, snap: Snapshot, s: Suspension) -> None:
        """Refuse an approval of a call this agent has no tool to run (a deployment that dropped or
        renamed it), before anything runs: the run stays waiting, for an agent that has the tool or
        a denial."""
        if s.pending is not None and self.tool_named(s.pending.name) is None:
            raise SnapshotError(
                f"run {snap.run_id} waits for approval of {s.pending.name!r}, but agent {self.name!r} has "
                f"no tool {s.pending.name!r} to run: approve it with an agent that has it, or deny it; "
                "nothing was run"
            )

    def _check_clock(self) -> None:
        """A `ConfigError` before a segment begins on a clock that does not read well (it raises, or
        gives no finite number of seconds), rather than a TypeError out of the run."""
        check_clock(self.clock, f"agent {self.name!r}: ")

    def _check_snapshot(self, snap: Snapshot) -> None:
        if not isinstance(snap, Snapshot):
            hint = "Snapshot.from_json(text)" if isinstance(snap, str | bytes) else "result.snapshot"
            given = "None" if snap is None else type(snap).__name__
            raise SnapshotError(
                f"resume takes the Snapshot of a run that can go on, not {given}: pass {hint} "
                "(a run that ended for good has none)"
            )
        if snap.agent != self.name:
            raise SnapshotError(
                f"snapshot of run {snap.run_id} belongs to agent {snap.agent!r}, not {self.name!r}"
            )
        if snap.kind is SnapshotKind.FINISHED:
            raise SnapshotError(
                f"run {snap.run_id} ended as {snap.reason}; only need_help, cancelled and limit "
                "(with more budget) resume"
            )


def _priced_as(models: Sequence[Model]) -> dict[str, str]:
    """The models priced by another id than their name (an adapter's `priced_as`), name -> id."""
    found = ((m.name, getattr(m, "priced_as", None)) for m in models)
    return {name: as_id for name, as_id in found if isinstance(as_id, str) and as_id != name}


def new_run_id() -> str:
    """A random run id: the hex of a version-4 UUID, as `uuid.uuid4().hex` writes it, without
    building the `UUID` (a few microseconds a run)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return raw.hex()


def _trace_into(run: RunState, trace_id: str, span_id: str | None) -> None:
    """Where the run's result and checkpoints find the span its observer began late."""
    run.trace_id, run.span_id = trace_id, span_id


def _resumed_from(snap: Snapshot | None) -> str | None:
    """The reason the resumed segment ended with; None for a checkpoint (a crashed segment never ended)."""
    if snap is None or snap.kind is SnapshotKind.CHECKPOINT:
        return None
    return str(snap.reason)


def as_reply(reply: HumanReply | str | None, approved: bool | None) -> HumanReply | None:
    """A typed reply from the older `answer`/`approved` pair (typed replies pass through)."""
    text = reply.text if isinstance(reply, Answer) else reply.reason if isinstance(reply, Denial) else reply
    typed = isinstance(reply, Answer | Denial)  # Answer(None) raised AttributeError from deep inside
    if not isinstance(text, str | None | Approval) or (typed and text is None):
        raise ConfigError(
            f"a reply's text must be a string: pass Answer('...'), Approval() or Denial('why'), "
            f"not {type(text).__name__}"
        )
    if isinstance(reply, Answer | Approval | Denial):
        if approved is not None and not isinstance(reply, Approval if approved else Denial):  # which?
            raise ConfigError(
                f"resume got {type(reply).__name__}(...) and approved={approved}, which say different "
                "things; pass one of them: Approval() or Denial('why') (or approved=True/False)"
            )
        return reply
    if approved is True:
        return Approval()
    if approved is False:
        return Denial(reply or "")
    return Answer(reply) if reply is not None else None


def check_reply(s: Suspension, reply: HumanReply | None) -> None:
    """Refuse a reply that does not fit what the run waits for; the message says what does."""
    if problem := reply_problem(reply, s.pending.name if s.pending else None, s.question):
        how = "Approval() or Denial('why') (or approved=True/False)" if s.pending else "Answer('...')"
        raise SnapshotError(f"the run {problem} (pass {how})")


def refuse_unasked(snap: Snapshot, reply: HumanReply | None) -> None:
    """Refuse a reply to a run that waits for none: it would be dropped unread, and the person
    who gave it told nothing."""
    if reply is not None:
        raise SnapshotError(
            f"run {snap.run_id} waits for no answer or approval (its snapshot is {snap.kind.value}, "
            f"with no question open): resume it without {type(reply).__name__}(...); nothing was run"
        )


def check_pending(snap: Snapshot, s: Suspension) -> None:
    """Refuse to approve a pending call that is not the call the run would run: one of the last
    reply's unanswered calls, with the same tool and arguments (an edited snapshot could show a
    person one call and run another)."""
    p = s.pending
    if p is None:
        return
    call = next((c for c in Journal(snap.journal).open_calls() if c.id == p.tool_use_id), None)
    if call is None or (call.name, call.arguments) != (p.name, p.arguments):
        held = "no such call" if call is None else _call_text(call.name, call.arguments)
        raise SnapshotError(
            f"run {snap.run_id} waits for approval of {_call_text(p.name, p.arguments)}, but its "
            f"journal holds {held} to run: the snapshot was edited; nothing was run"
        )


def _call_text(name: str, arguments: dict[str, Any]) -> str:
    return f"{name}({json.dumps(arguments, sort_keys=True)})"


def _check_now(now: object) -> float:
    """`now` as given to resume or expire: a time in seconds since the epoch, as the clock's."""
    if not is_finite_number(now):
        raise ConfigError(f"now must be a finite number of seconds since the epoch (or None), not {now!r}")
    return float(now)


def _sync(coro: Any) -> RunResult:
    if not in_running_loop():
        return asyncio.run(coro)
    coro.close()
    raise ConfigError("run/resume were called inside a running event loop: await arun/aresume instead")


def _check_config(agent: Agent) -> None:
    """A clear `ConfigError` for a field of the wrong kind, when the agent is made (not an
    AttributeError in its first run)."""
    name = agent.name
    for field_name, text in (("name", agent.name), ("task_type", agent.task_type)):
        if not is_text(text):
            raise ConfigError(f"agent {name!r}: {field_name} must be a non-empty string, not {text!r}")
    model = agent.model
    if not (callable(getattr(model, "complete", None)) and isinstance(getattr(model, "name", None), str)):
        raise ConfigError(
            f"agent {name!r}: model must be a model adapter with a name and an async complete() (say "
            f"AnthropicModel({DEFAULT_MODEL!r}) or ScriptedModel([...])), not {type(model).__name__}"
        )
    _need_list(agent, "tools", Tool, "tools made with @tool")
    _need_list(agent, "verifiers", None, "callables that take the RunContext and return a list of failures")
    _need_list(agent, "checks", None, "callables that take the RunContext and return a verdict or None")
    for field_name, kind in (
        ("budget", Budget), ("help", HelpPolicy), ("retry", RetryPolicy),
        ("prices", PriceTable), ("history", HistoryPolicy),
    ):  # fmt: skip
        if not isinstance(value := getattr(agent, field_name), kind):
            wrong = type(value).__name__
            raise ConfigError(f"agent {name!r}: {field_name} must be a {kind.__name__}, not {wrong}")
    check_hooks(agent.hooks, f"agent {name!r}: ")
    _check_parts(agent)
    if not callable(agent.progress):
        hint = (
            " (pass the class, or a lambda that makes one)"
            if isinstance(agent.progress, ProgressDetector)
            else ""
        )
        raise ConfigError(
            f"agent {name!r}: progress must be a function that makes a fresh ProgressDetector for each run, "
            f"say lambda: ProgressDetector(max_repeats=5){hint}; not {type(agent.progress).__name__}"
        )
    _check_detector(agent)
    if not isinstance(agent.finish_last, bool):
        raise ConfigError(f"agent {name!r}: finish_last must be True or False, not {agent.finish_last!r:.60}")
    if not callable(agent.summarize):
        raise ConfigError(
            f"agent {name!r}: summarize must be a function of (ctx, spent, reason, limit) that returns "
            f"text, not {type(agent.summarize).__name__}"
        )
    if not (is_whole(agent.max_tokens) and agent.max_tokens > 0):
        raise ConfigError(f"agent {name!r}: max_tokens must be a positive int, not {agent.max_tokens!r}")
    _check_max_output(agent)


_DETECTOR_METHODS = ("observe", "end_turn", "heard", "stuck", "stuck_on")


def _check_detector(agent: Agent) -> None:
    """The `progress` factory makes a detector: one made now (a detector is small and holds nothing
    yet) has the methods the loop calls, else every run would end `error` at its first turn."""
    try:
        made = agent.progress()
    except Exception as exc:
        raise ConfigError(
            f"agent {agent.name!r}: progress() raised {type(exc).__name__}: {said(exc)}; it must make a "
            "fresh ProgressDetector for each run"
        ) from exc
    if missing := [m for m in _DETECTOR_METHODS if not callable(getattr(made, m, None))]:
        raise ConfigError(
            f"agent {agent.name!r}: progress() made {type(made).__name__} {made!r:.60}, which has no "
            f"{', '.join(missing)}: it must make a fresh ProgressDetector for each run, say "
            "lambda: ProgressDetector(max_repeats=5)"
        )


def _check_max_output(agent: Agent) -> None:
    """The agent's `max_tokens` is no more than its model writes, nor than the model that summarizes
    older turns does when it takes the agent's: refused now, not at the first call of a run."""
    models = [(agent.model, "its model")]
    summary = agent.history.summarize
    if isinstance(summary, ModelSummary) and summary.model is not None and summary.max_tokens is None:
        models.append((summary.model, "its summary model"))
    for model, whose in models:
        if (problem := max_tokens_problem(model, agent.max_tokens)) is not None:
            raise ConfigError(f"agent {agent.name!r} ({whose}): {problem}")


def _check_server_tool_names(agent: Agent, names: Sequence[str]) -> None:
    """No tool of the agent takes the name of a tool its model adds to every request (an Anthropic
    server tool: the model's `server_tool_names`): the API refuses a request whose tool names repeat,
    which failed the run at its first call."""
    taken = getattr(agent.model, "server_tool_names", None)
    if clash := sorted(set(names) & taken) if isinstance(taken, frozenset) else []:
        raise ConfigError(
            f"agent {agent.name!r}: its tools {clash} take the names of its model's server tools, and the "
            "API refuses a request whose tool names repeat: rename them (@tool(name=...)), or leave those "
            "server tools out of the model's server_tools="
        )


def _check_parts(agent: Agent) -> None:
    """The agent's instructions, its optional functions, clock and audit are of the kind they must be
    (each was first used mid-run: a TypeError or AttributeError there, not what to fix)."""
    name = agent.name
    if not isinstance(agent.instructions, str):
        raise ConfigError(
            f"agent {name!r}: instructions must be text, not {type(agent.instructions).__name__}"
        )
    for field_name, takes in (("checkpoint", "a Checkpoint"), ("fingerprint", "the RunContext")):
        if (given := getattr(agent, field_name)) is not None and not callable(given):
            raise ConfigError(
                f"agent {name!r}: {field_name} must be a function that takes {takes} (or None), "
                f"not {type(given).__name__}"
            )
    if not all(callable(getattr(agent.clock, m, None)) for m in ("time", "monotonic")):
        raise ConfigError(
            f"agent {name!r}: clock must have time() and monotonic() (say SystemClock()), "
            f"not {type(agent.clock).__name__}"
        )
    if agent.audit is not None and not isinstance(agent.audit, SuccessAudit):
        raise ConfigError(
            f"agent {name!r}: audit must be a SuccessAudit or None, not {type(agent.audit).__name__}"
        )


def _need_list(agent: Agent, field_name: str, kind: type | None, what: str) -> None:
    """`agent.<field_name>` is a sequence of `kind` (of callables when `kind` is None)."""
    given = getattr(agent, field_name)
    if not isinstance(given, Sequence) or isinstance(given, str | bytes):
        raise ConfigError(
            f"agent {agent.name!r}: {field_name} must be a list of {what}, not {type(given).__name__}"
            + (": put it in a list" if callable(given) or isinstance(given, kind or ()) else "")
        )
    for item in given:
        if not (isinstance(item, kind) if kind is not None else callable(item)):
            hint = " (decorate the function with @tool)" if kind is Tool and callable(item) else ""
            shown = f"{item!r} is a {type(item).__name__}{hint}"
            raise ConfigError(f"agent {agent.name!r}: {field_name} must be {what}; {shown}")
