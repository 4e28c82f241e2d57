"""The shared core: report a run that Endstate did not drive to Endstate's hooks.

`Recorder` turns what a foreign loop did (turns, model calls, tool calls, its
end) into the same `RunObserver` calls as Endstate's own loop, so the spans
and metrics that `telemetry/` makes from them are the same. Each integration
feeds one from the framework's own callbacks; home-grown loops use
`observe_run` (in `_homegrown.py`), a context manager over the same recorder.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import re
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agent._aio import in_running_loop
from agent._valid import is_count, is_finite_from_zero, is_text
from agent.budget import Spent
from agent.clock import CancelSignal
from agent.context import RunContext
from agent.errors import ConfigError, EndstateError
from agent.hooks import HumanWait, NoHooks, RunHooks, RunInfo, RunObserver, SegmentLink, check_hooks, guard
from agent.journal import Answered, Suspended, Task
from agent.models.base import CALL_MODEL, ModelReply, ModelRequest, StopKind, ToolCall
from agent.policies import MAX_WAIT_SECONDS
from agent.result import LimitKind, PendingAction, RunResult, StopCause, StopReason, Suspension
from agent.snapshot import Snapshot, SnapshotKind
from agent.stops import MESSAGES_API_STOPS, TurnSignal
from agent.summary import foreign_summary
from agent.text import json_ready
from agent.tools import ToolOutcome, run_cancelled, said
from agent.usage import Usage
from agent.verify import Verifier, VerifierError, checked_in_thread

DEFAULT_TASK_TYPE = "default"  # the integrations' task type when none is given
DEFAULT_HELP_SECONDS = 24 * 3600.0  # how long a foreign approval waits, unless told
# Endstate's own options of every integration's run (each adds its few); the rest go to the framework
OPTIONS = ("hooks", "task_type", "verifiers", "run_id", "agent_name", "resumed", "help_seconds")


@dataclass
class Recorder:
    """One foreign run segment as Endstate's hooks see it, and the `RunResult` it ends with.

    Every turn holds at most one model call and the tool calls that follow
    it; a model call with no open turn opens one. `finish` ends the open
    turn and the run, exactly once: later calls return the first result.
    """

    info: RunInfo
    verifiers: Sequence[Verifier] = ()
    observer: RunObserver = field(default_factory=RunObserver)
    watched: bool = True  # False without hooks: the calls' shapes are not even built
    turns: int = 0
    usage: Usage = field(default_factory=Usage)  # the run's; its cost None once a call had no price
    last_text: str = ""
    last_stop_reason: str = ""  # the model API's stop reason of the last reply, in its words
    last_stop: StopKind | None = None  # why the last reply ended, in no provider's words (None: none yet)
    result: RunResult | None = None
    explicit_turns: bool = False  # the caller opens turns itself; model calls never do
    help_seconds: float | None = None  # how long a pending approval waits (None: DEFAULT_HELP_SECONDS)
    waiting_seconds: float = 0.0  # the run's human waits so far
    active_before: float = 0.0  # active seconds of the run's earlier segments
    _turn_open: bool = False
    _turn_asked: bool = False  # the open turn has had its model call
    _turn_tools: bool = False  # the open (or held) turn has had a tool call
    _attempt: int = 0  # the open turn's model calls since its last reply: failed ones, then the one open
    _held: str | None = None  # a turn `hold_turn` closed and no step has ended yet: _GOING or _STOPPING
    _model_open: bool = False
    _asked: str = ""  # the model the open call asked for, when not the run's
    _output: list[dict[str, Any]] | None = None  # the content of the reply last recorded (`reply_went_on`)
    _calls: dict[str, ToolCall] = field(default_factory=dict)  # started tool calls, by id
    _started: float = field(default_factory=time.perf_counter)
    _seen: Usage = field(default_factory=Usage)  # the calls of this segment and of its nested runs
    _parent: Recorder | None = None  # the observed run this one runs inside (an agent as a tool)

    @classmethod
    def start(
        cls,
        hooks: RunHooks | None,
        *,
        agent: str,
        task_type: str,
        model: str = "",
        provider: str = "",
        task: str = "",
        tools: Sequence[str] | None = (),
        limits: Mapping[str, float] | None = None,
        verifiers: Sequence[Verifier] | Verifier | None = None,
        run_id: str | None = None,
        resumed: RunResult | None = None,
        help_seconds: float | None = None,
        wait: HumanWait | None = None,
        go_on: bool = True,
    ) -> Recorder:
        """Begin a segment: `run_started` on the hooks (guarded: a failing hook never fails the run).

        `resumed` is the `need_help` result this segment continues: same run
        id, the next segment (linked to the suspended one when `resumed.snapshot`
        says where that was recorded), the run's totals, and the person's wait
        recorded (`wait`, or answered now). `go_on=False` for a segment that only
        ends the run (an expired wait): no turn is reopened.
        """
        if resumed is not None:
            agent, task_type = _as_resumed(resumed, task_type)
        _check_options(hooks, task_type, run_id, help_seconds)
        if not is_text(agent):
            raise ConfigError(
                f"the run's agent name must be a non-empty string (a metric label), not {agent!r}: "
                "name it with agent_name= (observe_run: agent=)"
            )
        snap = resumed.snapshot if resumed is not None else None
        info = RunInfo(
            run_id=resumed.run_id if resumed else run_id or uuid.uuid4().hex,
            segment=(snap.segment + 1 if snap is not None else 2) if resumed else 1,
            continues=SegmentLink(snap.trace_id, snap.span_id)
            if snap and snap.trace_id and snap.span_id
            else None,
            agent=agent,
            task_type=task_type,
            model=model or "unknown",
            provider=provider or "unknown",
            task=task,
            started_at=time.time(),
            limits=dict(limits or {}),
            tools=_tool_list(tools),
            spent=_spent(resumed),
            resumed_from=str(resumed.reason) if resumed else None,
            resumed_stopped_at=_stopped_at(resumed),
        )
        watched = hooks is not None and not isinstance(hooks, NoHooks)
        recorder = cls(info, _verifier_list(verifiers), guard(hooks or NoHooks(), info), watched)
        recorder.help_seconds = help_seconds
        if resumed is not None:
            recorder._go_on_from(resumed, wait)
            if go_on:
                recorder.continue_turn()
        return recorder

    def _go_on_from(self, resumed: RunResult, wait: HumanWait | None) -> None:
        """The run's totals go on from where the suspended segment left them; the wait ends."""
        self.turns, self.usage = resumed.turns, resumed.usage
        self.active_before, self.waiting_seconds = resumed.active_seconds, resumed.waiting_seconds
        if wait is None:
            wait = _wait_of(resumed)
        if wait is not None:
            self.waiting_seconds += wait.seconds
            self.observer.human_waited(wait)

    # -- turns, model calls and tool calls ----------------------------------

    def begin_turn(self) -> int:
        """Start the next turn (ending the open one); returns its index, from 1."""
        if self._turn_open:
            self.end_turn()
        self._release_turn()
        self.turns += 1
        self._turn_open, self._turn_asked, self._turn_tools, self._attempt = True, False, False, 0
        if self.watched:  # nobody watching: the observer is a no-op, not even called
            self.observer.turn_started(self.turns)
        if (stop := _STOP_ASKED.get()) is not None:
            stop.check()
        return self.turns

    def continue_turn(self) -> None:
        """Reopen the turn a suspension split (same index, marked continued): the approved call runs in it."""
        if self.turns >= 1:
            self._turn_open = self._turn_asked = True
            self.observer.turn_started(self.turns, True)

    def end_turn(self, signal: TurnSignal | StopReason = TurnSignal.TOOL_USE) -> None:
        if self._turn_open:
            self._turn_open = False
            if self.watched:
                self.observer.turn_ended(self.turns, signal)

    def hold_turn(self, stopping: bool = False) -> None:
        """Close the caller's turn (a home-grown loop's `with run.turn()`), its end told once the loop's
        next step shows what came of it, so its signal is the one Endstate's own loop gives the same
        turn: the stop reason when the run stops now (a final answer's `success`, a refusal's
        `gave_up`), else what the turn did (`tool_use`, or `no_tool_call` when it called no tool).
        `stopping`: an exception left the turn, so the stop it ends in is the turn's."""
        if self._turn_open:
            self._turn_open = False
            self._held = _STOPPING if stopping else _GOING

    def _going_on(self) -> TurnSignal:
        """The signal of the open turn if the run goes on after it (Endstate's loop's `TurnSignal`)."""
        asked_tools = self._turn_asked and self.last_stop == StopKind.TOOL_USE
        return TurnSignal.TOOL_USE if self._turn_tools or asked_tools else TurnSignal.NO_TOOL_CALL

    def _release_turn(self, stop: StopReason | None = None) -> None:
        """End the held turn (see `hold_turn`): with `stop` when the run stops now, unless the turn is
        one Endstate's loop ends before the stop (a budget or a cancellation checked between turns)."""
        held, self._held = self._held, None
        if held is None or not self.watched:
            return
        ends = stop if stop is not None and (held == _STOPPING or stop not in _BETWEEN_TURNS) else None
        self.observer.turn_ended(self.turns, ends or self._going_on())

    def model_started(
        self,
        max_tokens: int = 0,
        attempt: int = 1,
        model: str = "",
        messages: Callable[[], list[dict[str, Any]]] | None = None,
    ) -> None:
        """A model call begins; it opens the next turn unless the open one has had none yet, or its
        last call failed with no tool run since (a retry, a fallback model: the turn's next attempt,
        as Endstate's loop retries a call). Once the segment has ended (a framework still running
        after a stop), calls are not recorded.
        `model`: the model this call asks for, when the framework says (an agent handed off to on
        another model than the run's): its span and series are that model's. `messages`: the
        history the framework sends with this call, in the Messages API's layout, read only when
        content is captured (its captured input, as a native call's)."""
        if self.result is not None:
            return
        retry = self._attempt > 0 and not (self._turn_tools or self._model_open)  # its last call failed
        if not self._turn_open or (self._turn_asked and not self.explicit_turns and not retry):
            self.begin_turn()
        self._model_open = self._turn_asked = True
        self._attempt += 1
        if self.watched:  # a foreign request's content is the framework's: one shape serves them all
            self._asked = self._other_model(model) if model else ""
            request: ModelRequest
            if messages is not None:
                request = ForeignRequest("", (), [], max_tokens, self._asked, read=messages)
            elif self.turns == 1 and self.info.segment == 1 and self.info.task:  # the run's first call
                request = ModelRequest("", (Task(self.info.task),), [], max_tokens, self._asked)
            elif max_tokens == 0 and not self._asked:
                request = _NO_REQUEST
            else:
                request = ModelRequest("", (), [], max_tokens, self._asked)
            self.observer.model_started(request, max(attempt, self._attempt))

    def model_ended(
        self,
        usage: Usage,
        *,
        text: str = "",
        stop_reason: str = "end_turn",
        model: str = "",
        response_id: str = "",
        error: BaseException | None = None,
        stop: StopKind | None = None,
        call_model: str = "",
        calls: Iterable[tuple[str, str, Any]] = (),
        request_id: str = "",
    ) -> None:
        """A model call ended: its usage counts towards the run (a reply the framework did not
        price, `cost_usd=None`, makes the run's cost unknown), its text is the last seen. `stop` is
        why it ended (`StopKind`), given by a framework whose `stop_reason` is not in the Messages
        API's words; else it is read from `stop_reason` in those words. `call_model` is the model
        that served this call, where only its reply tells it (a graph's nodes, a fallback): unless
        it is the run's model or the one the call asked for (dated or not), the call's span,
        duration and tokens are that model's, as a call started with its `model` has them. `calls`
        are the tool calls the reply asks for (id, name, arguments): its captured output shows them;
        `request_id` the provider's id of the HTTP request behind the reply (its chat span shows it)."""
        if self.result is not None:
            return
        self._model_open = False
        if error is not None and _caller_stopped(error):  # cut off, as Endstate's loop marks it
            error = _Cut()
        if error is None or isinstance(error, _Cut | asyncio.CancelledError):
            self._attempt = 0  # a reply, or a call cut off: the next call is the next turn's
        # else the call failed: the next call with no tool run between tries it again
        usage = counted(usage)
        self.usage += usage
        outer: Recorder | None = self
        while outer is not None:  # the runs it is nested in see it too: none counts it as unseen
            outer._seen += usage
            outer = outer._parent
        if text:
            self.last_text = text
        kind = stop or MESSAGES_API_STOPS[stop_reason]
        if error is None:
            self.last_stop_reason, self.last_stop = stop_reason, kind
        if not self.watched:
            return
        reply = None
        asked, self._asked = self._asked, ""
        self._output = None
        if error is None:
            content = [{"type": "text", "text": text}] if text else []
            content += _call_blocks(calls)
            self._output = content
            told = ""  # the model that served it, when not the one the call was shown as so far
            if call_model and not same_model(call_model, asked or self.info.model):
                told = self._other_model(call_model) or self.info.model
            reply = ModelReply(
                content,
                usage.input_tokens,
                usage.output_tokens,
                stop_reason,
                model or told or asked,  # the span says which model it was
                response_id,
                cache_read_input_tokens=usage.cache_read_tokens,
                cache_creation_input_tokens=usage.cache_write_tokens,
                stop=kind,
                extra={CALL_MODEL: told} if told else {},
                request_id=request_id,
            )
        self.observer.model_ended(reply, error)

    def reply_went_on(self, calls: Iterable[tuple[str, str, Any]]) -> None:
        """More tool calls (id, name, arguments) of the reply last recorded, which a framework that
        sends a reply block by block recorded at its first call (its tools may run at once): its
        captured output shows them too (its span's content is read when the span is made)."""
        if self._output is not None and self.result is None:
            self._output += _call_blocks(calls)

    def _other_model(self, model: str) -> str:
        """`model` when it is not the run's own model (dated or not), else ""."""
        return "" if same_model(model, self.info.model) else model

    def tool_started(self, call_id: str, name: str, arguments: Mapping[str, Any] | None = None) -> None:
        self._turn_tools = True
        if self.watched and self.result is None:
            call = self._calls[call_id] = ToolCall(call_id, name, dict(arguments or {}))
            self.observer.tool_started(call)

    def tool_ended(
        self,
        call_id: str,
        name: str,
        text: str = "",
        error_type: str | None = None,
        arguments: Mapping[str, Any] | None = None,
    ) -> None:
        if not self.watched or self.result is not None:
            return
        call = self._calls.pop(call_id, None)
        if call is None or call.name != name:  # started in an earlier segment, or by another name
            call = ToolCall(call_id, name, dict(arguments or {}))
        outcome = ToolOutcome(text, is_error=error_type is not None, error_type=error_type)
        self.observer.tool_ended(call, outcome)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Around the framework's run: a run observed inside it (an agent as a tool, run through
        an integration) is nested in this one, and tells it each call it saw."""
        self._parent = _ACTIVE.get()
        token = _ACTIVE.set(self)
        try:
            yield
        finally:
            _ACTIVE.reset(token)

    def count_unseen(self, now: Usage, before: Usage | None = None, seen: Usage | None = None) -> None:
        """`now`: the framework's own usage of the run, `before` what it was as this segment began.
        What it grew by beyond the calls observed runs saw of it (`seen`; None: this run and its nested
        runs) (an agent run inside a tool unobserved, its calls added to the run's usage by the
        framework) counts in the run's totals, unpriced; no span or model metric is made for calls
        nobody saw."""
        tokens, prior = _four(counted(now)), _four(counted(before or Usage()))
        saw = _four(self._seen if seen is None else counted(seen))
        inp, out, read, write = (max(0, a - b - c) for a, b, c in zip(tokens, prior, saw, strict=True))
        if inp or out:
            self.usage += Usage(inp, out, read, write, cost_usd=None)

    # -- the end ---------------------------------------------------------------

    def succeed(self, output: Any, *, text: str | None = None, raw: Any = None) -> RunResult:
        """A final output: checked by the verifiers, when there are any.

        A failed check cannot go back to a framework that has already
        finished, so the run still ends `success`, with `verified=false`, the
        failures in the result, and a verify rejection counted: a false
        success, shown, not hidden. A verifier that raises ends it `error`
        (interrupted by `KeyboardInterrupt`: `cancelled`), as Endstate's own runs.
        """
        shown = text if text is not None else _text_of(output)
        if not self.verifiers:
            return self.finish(StopReason.SUCCESS, output=shown, raw=raw)
        ctx = RunContext(self.info.run_id, self.info.agent, self.info.task, self.info.task_type, note=shown)
        ctx.state["output"] = output
        try:
            failures = [f for v in self.verifiers for f in _checked_within(v, ctx)]
        except KeyboardInterrupt:  # as Endstate's own runs end it
            return self.finish(
                StopReason.CANCELLED, note="A verifier was interrupted (KeyboardInterrupt).", raw=raw
            )
        except (
            BaseException
        ) as exc:  # an Exception, or a SystemExit: the verifier failed, not the run's check
            note = f"A verifier raised {type(exc).__name__}: {said(exc)}"
            return self.finish(StopReason.ERROR, note=note, error_type="verifier_error", raw=raw)
        self.observer.verified(failures)
        return self.finish(
            StopReason.SUCCESS, output=shown, verified=not failures, failures=tuple(failures), raw=raw
        )

    def suspend(
        self, question: str, pending: PendingAction | None, *, raw: Any, wait_seconds: float | None = None
    ) -> RunResult:
        """A pending approval or question: `need_help`, with the framework's state kept in `raw`.
        A NaN or infinity in the pending call's arguments (no JSON holds one, some SDKs read one) is
        kept as null, as every JSON the run is shown in has it: the result, the store, the service."""
        if pending is not None:
            pending = PendingAction(pending.tool_use_id, pending.name, json_ready(pending.arguments))
        now = time.time()
        wait_seconds = self.help_seconds if wait_seconds is None else wait_seconds
        deadline = now + (DEFAULT_HELP_SECONDS if wait_seconds is None else wait_seconds)
        suspension = Suspension(question, deadline, now, pending)
        return self.finish(StopReason.NEED_HELP, note=question, suspension=suspension, raw=raw)

    def fail(self, error: BaseException, *, raw: Any = None) -> RunResult:
        """Any exception that is no expected stop: `error`, with its type; a cancellation: `cancelled`
        (a generator the caller closed half-read, `GeneratorExit`, is one too). A `CancelledError`
        while nobody cancels the task (a tool's own, a library's cancelled future, let out by the
        framework) is an error, as it is a tool's failure in Endstate's own loop (`run_cancelled`). One
        the framework's clean-up raised as the run's coroutine was closed outside any task (`_closing`)
        is that close: `cancelled`."""
        if isinstance(error, KeyboardInterrupt | GeneratorExit) or (
            isinstance(error, asyncio.CancelledError) and run_cancelled()
        ):
            return self.finish(StopReason.CANCELLED, note="The caller cancelled the run.", raw=raw)
        if _closing(error):
            note = f"The run was closed before it ended (its clean-up then raised {type(error).__name__})."
            return self.finish(StopReason.CANCELLED, note=note, raw=raw)
        self.call_failed(error)
        note = f"{type(error).__name__}: {said(error)}"
        return self.finish(StopReason.ERROR, note=note, error_type=type(error).__name__, raw=raw)

    def call_failed(self, error: BaseException) -> None:
        """The open model call, if one is open, failed with `error` (the run stops on it)."""
        if self._model_open:
            self.model_ended(Usage(), error=error)

    def finish(
        self,
        reason: StopReason,
        *,
        limit: LimitKind | None = None,
        cause: StopCause | None = None,
        output: str = "",
        note: str = "",
        verified: bool = False,
        failures: tuple[str, ...] = (),
        error_type: str | None = None,
        suspension: Suspension | None = None,
        raw: Any = None,
    ) -> RunResult:
        """End the open turn and the segment; the first call wins."""
        if self.result is not None:
            return self.result
        self._close_open_calls()
        self.end_turn(reason)
        self._release_turn(reason)
        limit = limit if reason is StopReason.LIMIT else None
        u, active = self.usage, self.active_before + time.perf_counter() - self._started
        summary = foreign_summary(reason, limit, self.turns, u.tokens, u.cost_usd, self.last_text)
        self.result = RunResult(
            run_id=self.info.run_id,
            agent=self.info.agent,
            task_type=self.info.task_type,
            reason=reason,
            limit=limit,
            output=output,
            note=note,
            summary=summary,
            verified=verified,
            turns=self.turns,
            usage=self.usage,
            active_seconds=active,
            waiting_seconds=self.waiting_seconds,
            verifier_failures=failures,
            last_text=self.last_text,
            error_type=error_type if reason is StopReason.ERROR else None,
            trace_id=self.observer.trace_id,
            suspension=suspension,
            snapshot=self._suspended(suspension, active) if reason is StopReason.NEED_HELP else None,
            cause=cause if reason is StopReason.GAVE_UP else None,
            raw=raw,
        )
        self.observer.run_ended(self.result)
        return self.result

    def _suspended(self, suspension: Suspension | None, active: float) -> Snapshot | None:
        """What a run resumed from this `need_help` result goes on from, as Endstate's own runs do:
        the segment's number (the next counts on from it) and span (the next links to it). The
        framework's own state stays in `raw`; a store keeps a fuller snapshot (`_durable`)."""
        if suspension is None:
            return None
        spent = Spent(turns=self.turns, active_seconds=active, waiting_seconds=self.waiting_seconds)
        spent.add(self.usage)
        return Snapshot(
            run_id=self.info.run_id,
            agent=self.info.agent,
            task_type=self.info.task_type,
            kind=SnapshotKind.SUSPENDED,
            segment=self.info.segment,
            journal=[Suspended(suspension)],
            usage=spent,
            trace_id=self.observer.trace_id,
            span_id=self.observer.span_id,
        )

    def _close_open_calls(self) -> None:
        """A model call the framework never finished (a limit raised inside it, a cancellation) ends as
        interrupted, as Endstate's own loop ends it."""
        if self._model_open:
            self._model_open = False
            self.observer.model_ended(None, _Cut())


class UnreadableState(ConfigError):
    """A saved state given to an integration's `resume` that its framework (or Endstate) cannot read."""


@contextlib.contextmanager
def reading_state(entry: str, expected: str) -> Iterator[None]:
    """Around reading a saved state in `entry` (say `openai_agents.resume`), before any run begins:
    what cannot be read (not JSON, another shape, the agent changed since) is an `UnreadableState`
    naming what was wrong and what to pass (`expected`), never the parser's own exception."""
    try:
        yield
    except EndstateError:
        raise
    except Exception as exc:
        why = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        raise UnreadableState(
            f"{entry}() cannot read the state it was given ({why[:300]}): pass {expected}"
        ) from exc


class Reading:
    """A stream's items, from `items` (an async generator that ends the run as the stream ends),
    with the run ended at once when the caller drops the stream unfinished: a caller that breaks out
    of `async for` reads its `result` on the next line, not once the event loop gets round to closing
    the generator (`abandoned`, called then, ends the run `cancelled`; closing `items` later finds
    it ended). Iterate it, or `aclose()` it."""

    def __init__(self, items: AsyncGenerator[Any], abandoned: Callable[[], None]) -> None:
        self._items, self._abandoned, self._done = items, abandoned, False

    def __aiter__(self) -> Reading:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._items.__anext__()
        except BaseException:  # its end, or the run's own stop raised on: no longer the caller's to drop
            self._done = True
            raise

    async def aclose(self) -> None:
        self._done = True
        await self._items.aclose()

    def __del__(self) -> None:
        if not self._done:
            self._abandoned()


SAVED_RUN = "endstate"  # the key of a saved state (`state_of`) that holds the suspended segment


def saved_with_run(result: RunResult, state: Mapping[str, Any]) -> str:
    """A framework's saved state (a JSON object) as JSON, with the suspended segment itself (run id,
    segment, span, totals, question: `result.snapshot`), so a resume from the JSON alone goes on as
    the same run, as a resume from the `RunResult` does."""
    if result.snapshot is not None:
        state = {**state, SAVED_RUN: json.loads(result.snapshot.to_json())}
    return json.dumps(state, default=str)


def run_of_saved(state: Any, kwargs: dict[str, Any]) -> Any:
    """`state` without the suspended segment `saved_with_run` put in it (JSON text stays JSON text);
    that segment becomes `kwargs["resumed"]`, unless the caller gave one."""
    saved = state
    if isinstance(state, str | bytes):
        try:
            saved = json.loads(state)
        except ValueError:
            return state  # the framework's own parser says what is wrong
    if not isinstance(saved, Mapping) or SAVED_RUN not in saved:
        return state
    rest = {k: v for k, v in saved.items() if k != SAVED_RUN}
    if kwargs.get("resumed") is None:
        kwargs["resumed"] = resumed_run(Snapshot.from_json(json.dumps(saved[SAVED_RUN])))
    return json.dumps(rest) if isinstance(state, str | bytes) else rest


def answered_late(kwargs: Mapping[str, Any], provider: str) -> RunResult | None:
    """A person's answer to the run `kwargs["resumed"]` after its wait's deadline: the run ends
    `help_timeout` (the framework not run), as a late answer to Endstate's own run does; None when
    the answer is in time, or the store already took it (its journal holds it)."""
    agent = kwargs.get("agent_name")
    late = ended_late(kwargs.get("hooks"), kwargs.get("resumed"), agent, kwargs.get("task_type"), provider)
    return late.result if late is not None else None


def ended_late(
    hooks: RunHooks | None, resumed: Any, agent: str | None, task_type: str | None, provider: str
) -> Recorder | None:
    """The segment that ends the run `resumed` as `help_timeout` when it is answered after its
    wait's deadline (its wait recorded `expired`); None when in time or the store took the answer."""
    if not isinstance(resumed, RunResult) or (s := resumed.suspension) is None or time.time() < s.deadline:
        return None
    journal = resumed.snapshot.journal if resumed.snapshot is not None else []
    if journal and isinstance(journal[-1], Answered):
        return None
    recorder = Recorder.start(
        hooks,
        agent=agent or resumed.agent,
        task_type=task_type if task_type is not None else resumed.task_type,
        provider=provider,
        resumed=resumed,
        wait=_wait(s, time.time(), "expired"),
        go_on=False,
    )
    recorder.finish(StopReason.HELP_TIMEOUT, note=f"Nobody answered {s.question!r} before the deadline.")
    return recorder


def resumed_run(snapshot: Snapshot) -> RunResult:
    """The suspended segment a snapshot holds, as a resumed segment's recorder takes it: the run's
    id, totals and wait, and the span the next segment links to."""
    spent = snapshot.usage
    return RunResult(
        run_id=snapshot.run_id,
        agent=snapshot.agent,
        task_type=snapshot.task_type,
        reason=StopReason.NEED_HELP,
        turns=spent.turns,
        usage=spent.usage,
        active_seconds=spent.active_seconds,
        waiting_seconds=spent.waiting_seconds,
        trace_id=snapshot.trace_id,
        suspension=snapshot.suspension,
        snapshot=snapshot,
    )


_GOING, _STOPPING = "going", "stopping"  # a held turn left as usual; one an exception left (see `hold_turn`)
_BETWEEN_TURNS = (StopReason.LIMIT, StopReason.CANCELLED)  # Endstate's loop checks these before a turn


def in_turns(blocks: Iterable[tuple[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """Messages-API messages from (role, blocks) pairs: one message per run of a role's blocks (a
    reply's text and its tool calls, the tool results that answer it), pairs with no block left out."""
    shown: list[dict[str, Any]] = []
    for role, content in blocks:
        if not content:
            continue
        if shown and shown[-1]["role"] == role:
            shown[-1]["content"].extend(content)
        else:
            shown.append({"role": role, "content": list(content)})
    return shown


@dataclass(frozen=True)
class ForeignRequest(ModelRequest):
    """A foreign call's request whose history the framework keeps: read only when it is shown."""

    read: Callable[[], list[dict[str, Any]]] = list

    @functools.cached_property
    def messages(self) -> list[dict[str, Any]]:  # type: ignore[override]
        try:
            return self.read()
        except Exception:  # a history that cannot be read: no input shown, the run goes on
            return []


_NO_REQUEST = ModelRequest("", (), [], 0)  # frozen: shared by every foreign model call
_ACTIVE: ContextVar[Recorder | None] = ContextVar("endstate_foreign_run", default=None)


def _call_blocks(calls: Iterable[tuple[str, str, Any]]) -> list[dict[str, Any]]:
    """Tool calls (id, name, arguments) as a reply's `tool_use` blocks."""
    return [{"type": "tool_use", "id": i, "name": name, "input": args} for i, name, args in calls]


def same_model(a: str, b: str) -> bool:
    """Whether two model ids name one model: equal, or one is the other with its date
    (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`)."""
    return a == b or bool(_DATED.fullmatch(a.removeprefix(b)) or _DATED.fullmatch(b.removeprefix(a)))


_DATED = re.compile(r"-\d{8}|-\d{4}-\d{2}-\d{2}")  # the date a model id may end with


def counted(usage: Usage) -> Usage:
    """`usage` as a framework reported it, each count that is no whole number >= 0 (a provider's
    negative count, a float) as 0 and a cost that is no finite amount >= 0 as unknown, as the
    Anthropic adapter reads the API's usage: a count never goes down or off the scale."""
    inp, out, read, write = (c if is_count(c) else 0 for c in _four(usage))
    cost = usage.cost_usd if is_finite_from_zero(usage.cost_usd) else None
    if (inp, out, read, write) == _four(usage) and cost == usage.cost_usd:
        return usage
    return Usage(inp, out, read, write, cost)


def _four(usage: Usage) -> tuple[int, int, int, int]:
    return (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)


class _Cut(Exception):
    """A model call that the framework cut off when the run stopped."""

    error_type = "interrupted"


def _closing(error: BaseException) -> bool:
    """Whether `error` was raised as the run's coroutine was closed outside any task (the garbage
    collector closing the run of an event loop closed under it, as an exit out of `asyncio.run`
    leaves an OpenAI Agents SDK run): the framework's clean-up failing then (a context variable reset
    outside its context) while it handled the close's `GeneratorExit` is the close, not the run's
    failure. Raised in a task, such an exception is the run's own failure."""
    if in_running_loop() and asyncio.current_task() is not None:
        return False
    seen: set[int] = set()
    at: BaseException | None = error
    while at is not None and id(at) not in seen:
        if isinstance(at, GeneratorExit):
            return True
        seen.add(id(at))
        at = at.__context__
    return False


def _caller_stopped(error: BaseException) -> bool:
    """Whether `error` is the caller stopping the run (a cancellation, Ctrl-C, a stream closed), not a
    call's own failure: a `CancelledError` raised while nobody cancels the task is the latter."""
    if isinstance(error, KeyboardInterrupt | GeneratorExit):
        return True
    return isinstance(error, asyncio.CancelledError) and run_cancelled()


def need(given: Any, fits: bool, entry: str, what: str) -> None:
    """A clear `ConfigError` when `entry` (say `pydantic_ai.run`) is not given `what` first."""
    if not fits:
        raise ConfigError(f"{entry}() takes {what} first, not {type(given).__name__}: pass the one you built")


def check_keywords(
    entry: str, call: Callable[..., Any], given: Iterable[str], own: Iterable[str], filled: Iterable[str] = ()
) -> None:
    """A clear `ConfigError` for a keyword that neither `entry`'s own options (`own`) nor the
    framework's `call` (which the rest go to; `filled`: the ones `entry` fills itself) take, before
    the run starts: a typo (`max_turn=3`) is no run ended as `error` and counted in the error rate.
    A `call` taking `**kwargs` takes any."""
    taken = _keywords(call)
    if taken is None:
        return
    taken = taken - set(filled)
    if unknown := [name for name in given if name not in taken]:
        theirs, got = getattr(call, "__qualname__", "the framework"), ", ".join(map(repr, unknown))
        ours = f"Endstate's options are {', '.join(own)}; " if own else ""
        which = f"neither Endstate nor {theirs} takes" if own else f"{theirs} does not take"
        raise ConfigError(
            f"{entry} got {got}, which {which}: {ours}{theirs} takes {', '.join(sorted(taken))}"
        )


@functools.lru_cache(maxsize=64)  # a framework's few entry points: their signatures read once
def _keywords(call: Callable[..., Any]) -> frozenset[str] | None:
    """The keywords `call` takes (None: any, it has `**kwargs`)."""
    params = inspect.signature(call).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return frozenset(p.name for p in params if p.kind in named and p.name not in ("self", "cls"))


def _as_resumed(resumed: RunResult, task_type: Any) -> tuple[str, str]:
    """A resumed segment's agent and task type: the run's, whatever the framework's agent is named
    (a segment under other labels counted the run in neither's shares: started and waiting under
    one, stopped under another, its pending approval never taken off the first). A task type given
    that is not the run's (the integrations' default aside) is a clear `ConfigError`."""
    if task_type not in (None, DEFAULT_TASK_TYPE, resumed.task_type):
        raise ConfigError(
            f"run {resumed.run_id} goes on as the run it is, of task type {resumed.task_type!r}, not "
            f"{task_type!r}: leave task_type= out of the resume (or pass task_type={resumed.task_type!r})"
        )
    return resumed.agent, resumed.task_type


def _spent(resumed: RunResult | None) -> Spent | None:
    if resumed is None:
        return None
    spent = Spent(turns=resumed.turns)
    spent.add(resumed.usage)
    return spent


def _stopped_at(resumed: RunResult | None) -> float | None:
    """When the segment `resumed` ended stopped: its suspension's time, else as its snapshot says."""
    if resumed is None:
        return None
    if resumed.suspension is not None:
        return resumed.suspension.suspended_at if resumed.suspension.suspended_at > 0 else None
    return resumed.snapshot.stopped_at if resumed.snapshot is not None else None


def _wait_of(resumed: RunResult) -> HumanWait | None:
    """The wait that ends as the run resumes: as its journal's last answer says (answered then, by
    a person or by the help policy at the deadline), else answered now."""
    journal = resumed.snapshot.journal if resumed.snapshot is not None else []
    answered = journal[-1] if journal and isinstance(journal[-1], Answered) else None
    asked = journal[-2] if answered and len(journal) > 1 and isinstance(journal[-2], Suspended) else None
    if answered is not None and asked is not None:
        outcome = "answered" if answered.by == "person" else "expired"
        return _wait(asked.suspension, answered.at, outcome)
    return _wait(resumed.suspension, time.time()) if resumed.suspension is not None else None


def _wait(s: Suspension, ended: float, outcome: str = "answered") -> HumanWait:
    """The person's wait that ended at `ended`, with the answer that resumes the run."""
    pending = s.pending.name if s.pending else None
    return HumanWait(s.suspended_at, ended, outcome, s.question, pending, s.deadline)


_STOP_ASKED: ContextVar[StopAsked | None] = ContextVar("endstate_foreign_stop_asked", default=None)


class StopAsked:
    """A cancel signal over one foreign segment (a runner's shutdown): asked as each turn begins, and
    once set it cancels the segment's task there, as Endstate's own loop stops at its next turn (the
    framework then ends the run `cancelled`). A signal that is not set, or whose answer is no True,
    leaves the run going."""

    def __init__(self, signal: CancelSignal, task: asyncio.Task[Any]) -> None:
        self.signal, self.task, self.asked = signal, task, False

    def check(self) -> None:
        if self.asked:
            return
        try:
            self.asked = self.signal.is_set() is True
        except Exception:  # a signal that cannot answer stops nothing; the grace still cuts the run
            return
        if not self.asked:
            return
        loop = self.task.get_loop()
        if in_running_loop() and asyncio.get_running_loop() is loop:
            self.task.cancel()
        else:  # told from a thread of the framework's: the loop cancels it
            loop.call_soon_threadsafe(self.task.cancel)


@contextlib.asynccontextmanager
async def stopping_at_turns(cancel: CancelSignal | None) -> AsyncIterator[None]:
    """Around a foreign segment run on this task: `cancel`, once set, stops it as its next turn begins.
    The cancel request was this one's own, not the caller's: once the segment has ended it is taken
    back (delivered or not), so the code after it (the runner recording the run) runs as before."""
    task = asyncio.current_task()
    if cancel is None or task is None:
        yield
        return
    stop = StopAsked(cancel, task)
    token = _STOP_ASKED.set(stop)
    try:
        yield
    finally:
        _STOP_ASKED.reset(token)
    if stop.asked:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0)  # a request the segment ended before meeting is met here
        task.uncancel()


def _checked_within(verifier: Verifier, ctx: RunContext) -> list[str]:
    """A verifier's failures, within its own timeout (a hung check is a failure, not a held run)."""
    return checked_in_thread(verifier, functools.partial(_checked_now, verifier, ctx))


def _checked_now(verifier: Verifier, ctx: RunContext) -> Any:
    """A verifier's return value; an `async def` one cannot be awaited when a foreign run ends."""
    value = verifier(ctx)
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise VerifierError("an async verifier cannot check another framework's run: make it a plain def")
    return value


def _check_options(
    hooks: Any, task_type: Any, run_id: Any, help_seconds: Any = None, agent_name: Any = None
) -> None:
    """A clear `ConfigError` for Endstate's own options of the wrong kind, before the framework runs."""
    if hooks is not None:
        check_hooks(hooks)
    if not is_text(task_type):
        raise ConfigError(f"task_type must be a non-empty string (a metric label), not {task_type!r}")
    if agent_name not in (None, "") and not is_text(agent_name):  # None or '': the framework's own name
        raise ConfigError(
            f"agent_name must be a non-empty string (a metric label), not {agent_name!r} "
            "(None or '': the framework agent's own name)"
        )
    if run_id is not None and not (isinstance(run_id, str) and run_id):
        raise ConfigError(f"run_id must be a non-empty string (or None for a new id), not {run_id!r}")
    if help_seconds is not None and not (
        is_finite_from_zero(help_seconds) and help_seconds <= MAX_WAIT_SECONDS
    ):
        raise ConfigError(
            f"help_seconds must be a finite number >= 0 (seconds), at most {MAX_WAIT_SECONDS:.0f} (100 "
            f"years), not {help_seconds!r}: how long a pending approval waits (None: a day)"
        )


def _tool_list(tools: Sequence[str] | None) -> tuple[str, ...]:
    """The tool names the run's calls are labelled by (the rest are "other"): a list of names."""
    if tools is None:
        return ()
    if isinstance(tools, str) or not isinstance(tools, Iterable):
        shown = f"[{tools!r}]" if isinstance(tools, str) else "['search', ...]"
        raise ConfigError(f"tools is a list of tool names (say tools={shown}), not {type(tools).__name__}")
    listed = tuple(tools)
    if wrong := [t for t in listed if not isinstance(t, str)]:  # a framework's own names are strings
        raise ConfigError(f"tools are the names of the run's tools, strings, not {wrong[0]!r}")
    return listed


def _verifier_list(verifiers: Sequence[Verifier] | Verifier | None) -> tuple[Verifier, ...]:
    """One verifier or a list of them; each must be callable on the run's context."""
    if verifiers is None:
        return ()
    listed = (verifiers,) if callable(verifiers) else verifiers
    if not isinstance(listed, Sequence) or isinstance(listed, str | bytes):
        raise ConfigError(f"verifiers must be a verifier or a list of them, not {type(verifiers).__name__}")
    for v in listed:
        if not callable(v):
            kind = type(v).__name__
            raise ConfigError(f"verifiers must be functions of the run's context, not {kind}: {v!r}")
    return tuple(listed)


def _text_of(output: Any) -> str:
    """A final output as text: strings as they are, models and dicts as JSON-ish repr."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    dump = getattr(output, "model_dump_json", None)
    if callable(dump):
        with contextlib.suppress(Exception):
            return str(dump())
    return repr(output)
