"""`stop.cause` on the run span says what the `stop_cause` label says (DESIGN: gave_up only, who
ended it): the dashboard's "Give-ups by cause" opens the traces of `stop.cause="agent"`, and a
give-up whose result named no cause (a home-grown loop's, a hook caller's) was counted under `agent`
but carried no `stop.cause`, so the link found none of its traces; a cause on another reason was
put on the span, though the label leaves it empty."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from agent import CompositeHooks
from agent.hooks import RunInfo
from agent.result import LimitKind, RunResult, StopCause, StopReason
from telemetry import MetricsHooks, TracingHooks
from telemetry import names as n


@pytest.mark.parametrize(
    ("reason", "cause", "limit", "said"),
    [
        (StopReason.GAVE_UP, None, None, "agent"),
        (StopReason.GAVE_UP, StopCause.GUARDRAIL, None, "guardrail"),
        (StopReason.LIMIT, StopCause.REFUSAL, LimitKind.TURNS, ""),
    ],
)
def test_the_span_names_the_cause_the_label_counts(
    reason: StopReason, cause: StopCause | None, limit: LimitKind | None, said: str
) -> None:
    exporter, provider, registry = InMemorySpanExporter(), TracerProvider(), CollectorRegistry()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks = CompositeHooks((TracingHooks(provider), MetricsHooks(registry)))
    observer = hooks.run_started(RunInfo("r1", "probe", "t", "m", "p", "task"))
    observer.run_ended(RunResult("r1", "probe", "t", reason, cause=cause, limit=limit))
    (span,) = exporter.get_finished_spans()
    labels = {
        "agent": "probe",
        "task_type": "t",
        "stop_reason": str(reason),
        "stop_limit": str(limit) if limit else n.NO_LIMIT,
        "stop_cause": said,
    }
    assert registry.get_sample_value("agent_stops_total", labels) == 1
    assert (span.attributes or {}).get(n.STOP_CAUSE, "") == said
