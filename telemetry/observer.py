"""One observer per run segment for spans and metrics together, guarded in itself.

`TelemetryHooks` is what `Telemetry.from_env` hands an `Agent`. Its observer
calls the metrics part first (the alerts read it), in a `try`, then the span
part, which guards itself: the loop pays for one call, not for a fan-out of
wrappers, and a failure in either part is logged, never raised, and spares the
other part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.hooks import HumanWait, RunInfo, RunObserver, SegmentLink, guard, hook_failed
from telemetry.metrics import MetricsHooks
from telemetry.tracing import TracingHooks

if TYPE_CHECKING:
    from agent.models.base import ModelReply, ModelRequest, ToolCall
    from agent.result import RunResult
    from agent.tools import ToolOutcome

_NOTHING = RunObserver()  # the span part when no spans are recorded


class TelemetryHooks:
    """`RunHooks` that record each segment in metrics and, when tracing is on, in spans."""

    def __init__(self, metrics: MetricsHooks, tracing: TracingHooks | None = None) -> None:
        self.metrics = metrics
        self.tracing = tracing

    def run_started(self, info: RunInfo) -> RunObserver:
        try:
            metrics = self.metrics.run_started(info)
        except BaseException:
            hook_failed("run_started (metrics)")
            metrics = _NOTHING
        spans = guard(self.tracing, info) if self.tracing is not None else _NOTHING  # guarded, as it is
        return _RunTelemetry(metrics, spans)

    @property
    def plans_spans(self) -> bool:
        """Whether a segment's span takes its `RunInfo.planned` ids (no spans: nothing to plan)."""
        return self.tracing is None or self.tracing.plans_spans

    def planned_ids(self, info: RunInfo) -> SegmentLink | None:
        """The ids the segment's observer will report, known before it is made (see `TracingHooks`)."""
        return self.tracing.planned_ids(info) if self.tracing is not None else None


class _RunTelemetry(RunObserver):
    """Metrics, then spans, for every hook of one segment; never raises, and one part failing
    spares the other (a chat span still ends with its reply when the metrics raised). The span
    part guards itself (`guarded`), so it is called as it is; the turn hooks, which only spans
    take, are its own methods, handed to the loop with no call in between."""

    guarded = True

    def __init__(self, metrics: RunObserver, spans: RunObserver) -> None:
        self._metrics, self._spans = metrics, spans
        self.trace_id, self.span_id = spans.trace_id, spans.span_id
        self.turn_started = spans.turn_started  # type: ignore[method-assign]  # metrics count no turn
        self.turn_ended = spans.turn_ended  # type: ignore[method-assign]

    def model_started(self, request: ModelRequest, attempt: int) -> None:
        try:
            self._metrics.model_started(request, attempt)
        except BaseException:
            hook_failed("model_started (metrics)")
        self._spans.model_started(request, attempt)

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None:
        try:
            self._metrics.model_ended(reply, error)
        except BaseException:
            hook_failed("model_ended (metrics)")
        self._spans.model_ended(reply, error)

    def tool_started(self, call: ToolCall) -> None:
        try:
            self._metrics.tool_started(call)
        except BaseException:
            hook_failed("tool_started (metrics)")
        self._spans.tool_started(call)

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        try:
            self._metrics.tool_ended(call, outcome)
        except BaseException:
            hook_failed("tool_ended (metrics)")
        self._spans.tool_ended(call, outcome)

    def verified(self, failures: list[str]) -> None:
        try:
            self._metrics.verified(failures)
        except BaseException:
            hook_failed("verified (metrics)")
        self._spans.verified(failures)

    def human_waited(self, wait: HumanWait) -> None:
        try:
            self._metrics.human_waited(wait)
        except BaseException:
            hook_failed("human_waited (metrics)")
        self._spans.human_waited(wait)

    def run_ended(self, result: RunResult) -> None:
        try:
            self._metrics.run_ended(result)
        except BaseException:
            hook_failed("run_ended (metrics)")
        self._spans.run_ended(result)

    def run_taken_over(self, result: RunResult) -> None:
        try:
            self._metrics.run_taken_over(result)
        except BaseException:
            hook_failed("run_taken_over (metrics)")
        self._spans.run_ended(result)  # the segment's span ends, `cancelled`: no error
