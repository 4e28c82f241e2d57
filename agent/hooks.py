"""The hooks the loop calls so that telemetry can watch it from outside.

The loop never touches spans or metrics: it calls a `RunObserver`, which
`telemetry/` implements. Every call is guarded, so a failing observer is
logged and the run goes on (telemetry never fails a run), `SystemExit` too. A
`KeyboardInterrupt` from a hook within a turn cancels the run, as one from a
tool does (see `hook_failed`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar, Protocol

from agent._frozen import fast_init
from agent.errors import ConfigError
from agent.tools import loggable

if TYPE_CHECKING:
    from agent.budget import Spent
    from agent.models.base import ModelReply, ModelRequest, ToolCall
    from agent.result import RunResult
    from agent.stops import StopReason, TurnSignal
    from agent.tools import ToolOutcome

log = logging.getLogger("endstate.hooks")


@fast_init
@dataclass(frozen=True)
class SegmentLink:
    """Where the segment that this one continues was recorded."""

    trace_id: str
    span_id: str


@fast_init
@dataclass(frozen=True)
class RunInfo:
    """What a run segment is, given to `RunHooks.run_started`."""

    run_id: str
    agent: str
    task_type: str
    model: str
    provider: str
    task: str
    segment: int = 1
    continues: SegmentLink | None = None
    started_at: float = 0.0
    limits: dict[str, float] = field(default_factory=dict)  # configured ceilings by LimitKind
    tools: tuple[str, ...] = ()  # the agent's tool names: bounded label values
    spent: Spent | None = None  # what earlier segments of the run spent
    resumed_from: str | None = None  # the stop reason of the segment this one resumes: need_help, cancelled
    # when that segment stopped (suspended, for need_help), by the clock of `started_at`; None: not known
    resumed_stopped_at: float | None = None
    extended: bool = False  # a run that stopped at a limit, continued with more budget
    # the segment started earlier, as a Temporal workflow's history says (its worker stopped, or the
    # workflow left that worker's cache): observed again from its first live event, its start (and
    # resume) counted already where it started, so hooks do not count it again
    replayed: bool = False
    # the ids the segment's span takes, planned by a Temporal workflow so that every replay of it knows
    # them without a span of its own; hooks with `plans_spans` honour them (see `_remote.ReplaySafeHooks`)
    planned: SegmentLink | None = None


@fast_init
@dataclass(frozen=True)
class HumanWait:
    """A wait for a person that ended: answered, or its deadline passed."""

    suspended_at: float
    ended_at: float
    outcome: str  # "answered" or "expired"
    question: str = ""
    pending_tool: str | None = None
    deadline: float | None = None  # past it, the run no longer waited for a person but for expiry

    @property
    def seconds(self) -> float:
        """From suspension to the answer or the deadline, whichever came first: an expiry is often
        processed after the deadline (by a periodic sweep, a recovery, a timer), and that lag is no
        time spent waiting for a person (the result's `waiting_seconds`, the span and the metric agree)."""
        ended = self.ended_at if self.deadline is None else min(self.ended_at, self.deadline)
        return max(0.0, ended - self.suspended_at)


class RunObserver:
    """Watches one run segment. Subclass and override what you need.

    `guarded` says that every method catches its own failures; `guard` then
    hands the observer to the loop as it is, with no wrapper to pay for.
    """

    trace_id: str | None = None
    span_id: str | None = None
    guarded: ClassVar[bool] = False

    def ids_later(self, tell: Callable[[str, str | None], None]) -> None:
        """Called when the observer has no `trace_id` yet: one whose span begins after
        `run_started` (a replayed Temporal segment's, at its first live event) calls
        `tell(trace_id, span_id)` then, so the run's result and checkpoints point at it."""

    def turn_started(self, index: int, continued: bool = False) -> None:
        """A turn begins; `continued` when it is a turn a suspension split, finished in this segment."""

    def turn_ended(self, index: int, signal: TurnSignal | StopReason) -> None:
        """A turn ends: `signal` is what it did, or the reason of the stop it ends in. Either is a
        `StrEnum` member, so a hook that takes it as a `str` reads the same word (`tool_use`)."""

    def model_started(self, request: ModelRequest, attempt: int) -> None: ...

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None: ...

    def tool_started(self, call: ToolCall) -> None: ...

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None: ...

    def verified(self, failures: list[str]) -> None: ...

    def human_waited(self, wait: HumanWait) -> None: ...

    def run_ended(self, result: RunResult) -> None: ...

    def run_taken_over(self, result: RunResult) -> None:
        """The segment ended because another worker took the run over (`TakenOver`): `result` is
        this segment's (`cancelled`), but the run goes on there and that worker reports its end, so
        this is no stop of the run. By default, `run_ended`: override it to count no end."""
        self.run_ended(result)


class RunHooks(Protocol):
    """Makes an observer for each run segment."""

    def run_started(self, info: RunInfo) -> RunObserver: ...


class NoHooks:
    """The default: observe nothing."""

    def run_started(self, info: RunInfo) -> RunObserver:
        return RunObserver()


@dataclass
class CompositeHooks:
    """Several hooks at once: each observer guarded alone, so one failing spares the others.

    On Temporal it plans span ids when one of its hooks can take them (`plans_spans`, as Endstate's
    `TelemetryHooks` and `TracingHooks` with `PlannedIds`): each of its hooks is then given
    `RunInfo.planned`, the planning ones make their span with those ids, and the others observe as
    they would without (from each workflow task's first live event, `RunInfo.replayed`)."""

    hooks: Sequence[RunHooks] = field(default_factory=tuple)

    def run_started(self, info: RunInfo) -> RunObserver:
        return _Fanout([guard(h, info) for h in self.hooks])

    @property
    def plans_spans(self) -> bool:
        """Whether one of the hooks makes its segment's span with `RunInfo.planned`'s ids."""
        return any(_plans_spans(h) for h in self.hooks)

    def planned_ids(self, info: RunInfo) -> SegmentLink | None:
        """The ids the segment reports: those of the first planning hooks' span that is recorded."""
        for h in self.hooks:
            if _plans_spans(h):
                try:
                    ids = h.planned_ids(info)  # type: ignore[attr-defined]  # with `plans_spans`
                except BaseException:
                    hook_failed("planned_ids")
                    continue
                if isinstance(ids, SegmentLink):
                    return ids
        return None


def _plans_spans(hooks: RunHooks) -> bool:
    """Hooks that take planned span ids: `plans_spans` true and a `planned_ids` to report them."""
    try:
        return getattr(hooks, "plans_spans", False) is True and callable(getattr(hooks, "planned_ids", None))
    except BaseException:
        hook_failed("plans_spans")
        return False


@dataclass(frozen=True)
class StartedBefore:
    """`hooks` for a first segment that began on a worker that died before its first checkpoint,
    run again from its task by the worker that recovers it: observed as `RunInfo.replayed` from
    when the run began, so the fleet counts its start once (where it began) and its span and
    duration run from then."""

    hooks: RunHooks
    started_at: float

    def run_started(self, info: RunInfo) -> RunObserver:
        return self.hooks.run_started(replace(info, replayed=True, started_at=self.started_at))


def check_hooks(hooks: object, where: str = "") -> None:
    """A clear `ConfigError` for hooks without `run_started` (`where` names whose they are)."""
    if not callable(getattr(hooks, "run_started", None)):
        raise ConfigError(
            f"{where}hooks must have run_started() (say Telemetry.from_env().hooks), "
            f"not {type(hooks).__name__}"
        )


def guard(hooks: RunHooks, info: RunInfo) -> RunObserver:
    """An observer from `hooks` whose failures never reach the loop.

    An observer that guards itself (`guarded = True`, as Endstate's telemetry
    does) is returned as it is; any other is wrapped once.
    """
    if isinstance(hooks, NoHooks):
        return RunObserver()
    try:
        observer = hooks.run_started(info)
    except BaseException:
        hook_failed("run_started")
        return RunObserver()
    if getattr(type(observer), "guarded", False) is True:  # Endstate's own: checked first, the usual
        return observer
    if observer is None or inspect.iscoroutine(observer):
        if inspect.iscoroutine(observer):  # an `async def run_started`: never awaited, so no observer
            observer.close()
            log.warning(
                "telemetry hook run_started is async def: hooks are called, not awaited; make it a def"
            )
        log.warning("telemetry hook run_started returned no observer; the run goes on unobserved by it")
        return RunObserver()
    _warn_async(type(observer))
    return _Guarded(observer)


_OBSERVED = (
    "turn_started",
    "turn_ended",
    "model_started",
    "model_ended",
    "tool_started",
    "tool_ended",
    "verified",
    "human_waited",
    "run_ended",
)
_WARNED: set[type] = set()


def _warn_async(kind: type) -> None:
    """Say once per observer class which of its methods are `async def`: the loop calls hooks without
    awaiting them, so such a method never runs (its coroutine is dropped, with no failure to log)."""
    if kind in _WARNED:
        return
    _WARNED.add(kind)
    if found := [n for n in _OBSERVED if inspect.iscoroutinefunction(getattr(kind, n, None))]:
        log.warning(
            "telemetry hook %s has async methods (%s): hooks are called, not awaited, so they never run; "
            "make them plain defs (hand slow work to a queue or a thread)",
            kind.__name__,
            ", ".join(found),
        )


# the hooks at a segment's edges: the run has not begun its turns, or has its result already
_EDGES = (
    "run_started",
    "human_waited",
    "run_ended",
    "ids_later",
    "planned_ids",
    "plans_spans",
    "trace_id",
    "span_id",
)


def hook_failed(name: str) -> None:
    """Log, once per failure, that an observer's `name` raised: the run goes on. Called in the
    `except BaseException` around a hook's call, it re-raises what is not the hook's own failure
    (see `_own_failure`)."""
    failure = sys.exc_info()[1]
    if not _own_failure(failure, edge=name.startswith(_EDGES)):
        raise  # being handled by our caller
    assert failure is not None  # called in an except block
    log.warning("telemetry hook %s failed; the run goes on", name, exc_info=loggable(failure))


def _own_failure(exc: BaseException | None, edge: bool) -> bool:
    """Whether a hook's exception is its own failure, logged: an `Exception`, a `SystemExit`, a
    `CancelledError` that is not the run's cancel; at a segment's edge (`_EDGES`: the run not begun,
    or its result made, nothing to cancel) any cancel too. Within a turn a `KeyboardInterrupt` goes
    on up and the run ends `cancelled` (resumable), as with a tool's. Any other `BaseException`
    (`GeneratorExit`, a framework's control flow: Temporal's eviction of a workflow, `pytest.fail`)
    goes on up untouched: it was made to pass `except Exception`."""
    if isinstance(exc, Exception | SystemExit):
        return True
    if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
        return edge or (isinstance(exc, asyncio.CancelledError) and not _cancelling())
    return False


def _cancelling() -> bool:
    """Whether the task at work is being cancelled (a `CancelledError` then is the run's, not the hook's)."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop: a foreign framework's sync run
        return False
    return task is not None and task.cancelling() > 0


def _id_of(observer: RunObserver, name: str) -> str | None:
    """The observer's `trace_id` or `span_id` if a string; None if not, or if reading it raises."""
    try:
        value = getattr(observer, name, None)
    except BaseException:
        hook_failed(name)
        return None
    return value if isinstance(value, str) else None


class _Guarded(RunObserver):
    """Forwards every call to an observer that does not guard itself; logs what it raises."""

    guarded = True

    def __init__(self, inner: RunObserver) -> None:
        self._inner = inner
        self.trace_id = _id_of(inner, "trace_id")
        self.span_id = _id_of(inner, "span_id")

    def ids_later(self, tell: Callable[[str, str | None], None]) -> None:
        try:  # an observer need not subclass RunObserver; reading its attribute may raise too
            later = getattr(self._inner, "ids_later", None)
            if callable(later):
                later(tell)
        except BaseException:
            hook_failed("ids_later")

    def turn_started(self, index: int, continued: bool = False) -> None:
        try:
            self._inner.turn_started(index, continued)
        except BaseException:
            hook_failed("turn_started")

    def turn_ended(self, index: int, signal: TurnSignal | StopReason) -> None:
        try:
            self._inner.turn_ended(index, signal)
        except BaseException:
            hook_failed("turn_ended")

    def model_started(self, request: ModelRequest, attempt: int) -> None:
        try:
            self._inner.model_started(request, attempt)
        except BaseException:
            hook_failed("model_started")

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None:
        try:
            self._inner.model_ended(reply, error)
        except BaseException:
            hook_failed("model_ended")

    def tool_started(self, call: ToolCall) -> None:
        try:
            self._inner.tool_started(call)
        except BaseException:
            hook_failed("tool_started")

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        try:
            self._inner.tool_ended(call, outcome)
        except BaseException:
            hook_failed("tool_ended")

    def verified(self, failures: list[str]) -> None:
        try:
            self._inner.verified(failures)
        except BaseException:
            hook_failed("verified")

    def human_waited(self, wait: HumanWait) -> None:
        try:
            self._inner.human_waited(wait)
        except BaseException:
            hook_failed("human_waited")

    def run_ended(self, result: RunResult) -> None:
        try:
            self._inner.run_ended(result)
        except BaseException:
            hook_failed("run_ended")

    def run_taken_over(self, result: RunResult) -> None:
        try:  # an observer need not subclass RunObserver: one without it is told the segment ended
            getattr(self._inner, "run_taken_over", self._inner.run_ended)(result)
        except BaseException:
            hook_failed("run_taken_over")


class _Fanout(RunObserver):
    """Calls every observer in turn; each is already guarded."""

    guarded = True

    def __init__(self, observers: list[RunObserver]) -> None:
        self._observers = tuple(observers)
        traced = [o for o in observers if o.trace_id]
        self.trace_id = traced[0].trace_id if traced else None
        self.span_id = traced[0].span_id if traced else None

    def ids_later(self, tell: Callable[[str, str | None], None]) -> None:
        for o in self._observers:
            o.ids_later(tell)

    def turn_started(self, index: int, continued: bool = False) -> None:
        for o in self._observers:
            o.turn_started(index, continued)

    def turn_ended(self, index: int, signal: TurnSignal | StopReason) -> None:
        for o in self._observers:
            o.turn_ended(index, signal)

    def model_started(self, request: ModelRequest, attempt: int) -> None:
        for o in self._observers:
            o.model_started(request, attempt)

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None:
        for o in self._observers:
            o.model_ended(reply, error)

    def tool_started(self, call: ToolCall) -> None:
        for o in self._observers:
            o.tool_started(call)

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        for o in self._observers:
            o.tool_ended(call, outcome)

    def verified(self, failures: list[str]) -> None:
        for o in self._observers:
            o.verified(failures)

    def human_waited(self, wait: HumanWait) -> None:
        for o in self._observers:
            o.human_waited(wait)

    def run_ended(self, result: RunResult) -> None:
        for o in self._observers:
            o.run_ended(result)

    def run_taken_over(self, result: RunResult) -> None:
        for o in self._observers:
            o.run_taken_over(result)
