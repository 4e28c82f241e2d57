"""A durable segment's end, told to its observers once the runner knows whether it was the run's.

A segment's observers (its telemetry) count a stop and end its span at `run_ended`, which the loop
calls as the segment returns. For a runner's own hooks (its telemetry; an agent's own hooks are told
as before) that is too early: the store may then refuse the segment's record because another worker
took the run over (its lease ran out while this worker stalled, or could not reach the store). When
the segment's last entries never landed (they go with the record, or their checkpoint was refused),
that worker goes on from the checkpoint before and ends the run itself, so this segment's end is
none of the run's, and counting it would count the run twice. `HeldEnds` keeps each observer's end
until the runner says which it was (`release`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent.hooks import RunHooks, RunInfo, RunObserver, guard

if TYPE_CHECKING:
    from agent.result import RunResult


class HeldEnds:
    """`hooks` whose observers' ends (`run_ended`, `run_taken_over`) wait for `release`."""

    def __init__(self, hooks: RunHooks) -> None:
        self.hooks = hooks
        # by run id (runs of one agent may run at once): observer, taken over, result
        self._ends: dict[str, list[tuple[RunObserver, bool, RunResult]]] = {}

    def run_started(self, info: RunInfo) -> RunObserver:
        return _Held(guard(self.hooks, info), self._ends)

    def release(self, run_id: str, taken_over: bool = False) -> None:
        """Tell each observer held for `run_id` how its segment ended: `run_taken_over` when another
        worker holds the run and goes on from before this segment's end (`taken_over`), or the loop
        said so; else `run_ended`. Other runs' ends stay held for their own release."""
        for observer, taken, result in self._ends.pop(run_id, []):
            if taken or taken_over:
                observer.run_taken_over(result)
            else:
                observer.run_ended(result)


def held_ends(hooks: Any) -> HeldEnds | None:
    """The `HeldEnds` among an agent's hooks (beside the agent's own in a `CompositeHooks`, or under
    the `StartedBefore` a runner adds), or None."""
    if isinstance(hooks, HeldEnds):
        return hooks
    inner = getattr(hooks, "hooks", None)
    for each in inner if isinstance(inner, tuple | list) else [inner] if inner is not None else []:
        if (found := held_ends(each)) is not None:
            return found
    return None


class _Held(RunObserver):
    """An observer (guarded already) whose end is kept for `HeldEnds.release`; the rest goes through."""

    guarded = True

    def __init__(
        self, inner: RunObserver, ends: dict[str, list[tuple[RunObserver, bool, RunResult]]]
    ) -> None:
        self._inner, self._ends = inner, ends
        self.trace_id, self.span_id = inner.trace_id, inner.span_id
        # the rest is the inner observer's own methods, handed to the loop with no call in between
        self.turn_started = inner.turn_started  # type: ignore[method-assign]
        self.turn_ended = inner.turn_ended  # type: ignore[method-assign]
        self.model_started = inner.model_started  # type: ignore[method-assign]
        self.model_ended = inner.model_ended  # type: ignore[method-assign]
        self.tool_started = inner.tool_started  # type: ignore[method-assign]
        self.tool_ended = inner.tool_ended  # type: ignore[method-assign]
        self.verified = inner.verified  # type: ignore[method-assign]
        self.human_waited = inner.human_waited  # type: ignore[method-assign]

    def ids_later(self, tell: Callable[[str, str | None], None]) -> None:
        def told(trace_id: str, span_id: str | None) -> None:
            self.trace_id, self.span_id = trace_id, span_id
            tell(trace_id, span_id)

        self._inner.ids_later(told)

    def run_ended(self, result: RunResult) -> None:
        self._ends.setdefault(result.run_id, []).append((self._inner, False, result))

    def run_taken_over(self, result: RunResult) -> None:
        self._ends.setdefault(result.run_id, []).append((self._inner, True, result))
