"""The hooks the loop calls so that telemetry can watch it from outside.

The loop never touches spans or metrics: it calls a `RunObserver`, which
`telemetry/` implements. Every call is guarded, so a failing observer is
logged and the run goes on (telemetry never fails a run).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
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


@dataclass(frozen=True)
class HumanWait:
    """A wait for a person that ended: answered, or its deadline passed."""

    suspended_at: float
    ended_at: float
    outcome: str  # "answered" or "expired"
    question: str = ""
    pending_tool: str | None = None

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


class _Fanout(RunObserver):
    def __init__(self, observers: list[RunObserver]) -> None:
        self._observers = observers
        ids = [o for o in observers if o.trace_id]
        self.trace_id = ids[0].trace_id if ids else None
        self.span_id = ids[0].span_id if ids else None

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_") or name in ("trace_id", "span_id"):
            return object.__getattribute__(self, name)
        observers = object.__getattribute__(self, "_observers")

        def fanout(*args: Any) -> None:
            for observer in observers:
                getattr(observer, name)(*args)

        return fanout


class _Guarded(RunObserver):
    """Forwards every call and swallows (logs) what the observer raises."""

    def __init__(self, inner: RunObserver) -> None:
        self._inner = inner
        self.trace_id = inner.trace_id
        self.span_id = inner.span_id

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_") or name in ("trace_id", "span_id"):
            return object.__getattribute__(self, name)
        method = getattr(object.__getattribute__(self, "_inner"), name)

        def guarded(*args: Any) -> None:
            try:
                method(*args)
            except Exception:
                log.warning("telemetry hook %s failed; the run goes on", name, exc_info=True)

        return guarded


def guard(hooks: RunHooks, info: RunInfo) -> RunObserver:
    """An observer from `hooks` whose failures never reach the loop."""
    try:
        return _Guarded(hooks.run_started(info))
    except Exception:
        log.warning("telemetry hook run_started failed; the run goes on", exc_info=True)
        return RunObserver()
