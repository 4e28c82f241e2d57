"""Endstate's telemetry: the hooks that make every run visible in traces and metrics.

`Telemetry.from_env()` is the one call most programs need; `TelemetryHooks`
joins `MetricsHooks` and `TracingHooks` (the parts, for wiring by hand) in one
observer per run. Names are in `telemetry.names`.
"""

from telemetry import _settings  # noqa: F401  first: it checks the SDK's settings before the SDK is read
from telemetry.metrics import InProcessPending, MetricsHooks, MetricsServer, PendingSource, serve_metrics
from telemetry.observer import TelemetryHooks
from telemetry.redact import Redactor
from telemetry.setup import Telemetry
from telemetry.tracing import TracingHooks

__all__ = [
    "InProcessPending",
    "MetricsHooks",
    "MetricsServer",
    "PendingSource",
    "Redactor",
    "Telemetry",
    "TelemetryHooks",
    "TracingHooks",
    "serve_metrics",
]
