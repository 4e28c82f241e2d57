"""The hooks the loop calls so that telemetry can watch it from outside.

The loop never touches spans or metrics: it calls a `RunObserver`, which
`telemetry/` implements. Every call is guarded, so a failing observer is
logged and the run goes on (telemetry never fails a run).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agent.budget import Usage
    from agent.models.base import ModelReply, ModelRequest, ToolCall
    from agent.result import RunResult
    from agent.tools import ToolOutcome

log = logging.getLogger("endstate.hooks")


@dataclass(frozen=True)
class SegmentLink:
    """Where the segment that this one continues was recorded."""

    trace_id: str
    span_id: str


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
    spent: Usage | None = None  # what earlier segments of the run spent
    resumed_from: str | None = None  # the stop reason of the segment this one resumes


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
        return max(0.0, self.ended_at - self.suspended_at)


class RunObserver:
    """Watches one run segment. Subclass and override what you need."""

    trace_id: str | None = None
    span_id: str | None = None

    def turn_started(self, index: int) -> None: ...

    def turn_ended(self, index: int, signal: str) -> None: ...

    def model_started(self, request: ModelRequest, attempt: int) -> None: ...

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None: ...

    def tool_started(self, call: ToolCall) -> None: ...

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None: ...

    def verified(self, failures: list[str]) -> None: ...

    def human_waited(self, wait: HumanWait) -> None: ...

    def run_ended(self, result: RunResult) -> None: ...


class RunHooks(Protocol):
    """Makes an observer for each run segment."""

    def run_started(self, info: RunInfo) -> RunObserver: ...


class NoHooks:
    """The default: observe nothing."""

    def run_started(self, info: RunInfo) -> RunObserver:
        return RunObserver()


@dataclass
class CompositeHooks:
    """Several hooks at once, such as tracing and metrics."""

    hooks: Sequence[RunHooks] = field(default_factory=tuple)

    def run_started(self, info: RunInfo) -> RunObserver:
        return _Fanout([guard(h, info) for h in self.hooks])


HOOK_METHODS = (
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


class _Fanout(RunObserver):
    """Calls every observer in turn; each is already guarded."""

    def __init__(self, observers: list[RunObserver]) -> None:
        traced = [o for o in observers if o.trace_id]
        self.trace_id = traced[0].trace_id if traced else None
        self.span_id = traced[0].span_id if traced else None
        for name in HOOK_METHODS:  # bound once, not looked up on every call
            setattr(self, name, _fanout([getattr(o, name) for o in observers]))


class _Guarded(RunObserver):
    """Forwards every call and logs, never raises, what the observer raises."""

    def __init__(self, inner: RunObserver) -> None:
        self.trace_id = inner.trace_id
        self.span_id = inner.span_id
        for name in HOOK_METHODS:
            setattr(self, name, _guarded(name, getattr(inner, name)))


def _fanout(methods: list[Callable[..., None]]) -> Callable[..., None]:
    def call_all(*args: Any) -> None:
        for method in methods:
            method(*args)

    return call_all


def _guarded(name: str, method: Callable[..., None]) -> Callable[..., None]:
    def call(*args: Any) -> None:
        try:
            method(*args)
        except Exception:
            log.warning("telemetry hook %s failed; the run goes on", name, exc_info=True)

    return call


def guard(hooks: RunHooks, info: RunInfo) -> RunObserver:
    """An observer from `hooks` whose failures never reach the loop."""
    if isinstance(hooks, NoHooks):
        return RunObserver()
    try:
        return _Guarded(hooks.run_started(info))
    except Exception:
        log.warning("telemetry hook run_started failed; the run goes on", exc_info=True)
        return RunObserver()
