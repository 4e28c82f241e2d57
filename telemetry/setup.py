"""Telemetry from the standard `OTEL_*` environment variables.

`Telemetry.from_env()` builds the tracer provider, the span export and the
Prometheus registry, and hands back the hooks an `Agent` takes. Nothing is set
globally. Where spans go:

- `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as is) or `OTEL_EXPORTER_OTLP_ENDPOINT`
  (plus `/v1/traces`): OTLP over HTTP/protobuf. `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`
  needs `opentelemetry-exporter-otlp-proto-grpc`; without it setup says so.
- no endpoint, `ENDSTATE_TRACES_FILE` set: one JSON line per span in that file
  (`endstate demo` sets `.endstate/traces.jsonl` when nothing else is named).
- `OTEL_TRACES_EXPORTER=console`: each span as JSON on standard error (standard
  output stays the program's own, such as `endstate demo --json`).
- none of these (or `OTEL_TRACES_EXPORTER=none`, or `OTEL_SDK_DISABLED=true`): no
  spans at all, so no cost; metrics still work and results carry no trace id.

Message content is recorded when `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
is `true`, or `SPAN_ONLY` or `SPAN_AND_EVENT` (the values of the newer GenAI
instrumentations; Endstate records content on spans only).

Export never blocks or breaks a run: spans queue in a bounded batch processor
(full queue: spans dropped, and not counted), each export has a short timeout,
every export of a batch counts in `agent_telemetry_exports_total{signal="traces"}`
and a failed one in `agent_telemetry_export_failures_total{signal="traces"}`, and
`force_flush`/`shutdown` return within their timeout even when the collector
never answers.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from opentelemetry import trace
from opentelemetry.environment_variables import OTEL_TRACES_EXPORTER
from opentelemetry.sdk import environment_variables as ev
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.sdk.version import __version__ as sdk_version
from opentelemetry.semconv.attributes import service_attributes, telemetry_attributes
from prometheus_client import CollectorRegistry

from agent.errors import ConfigError
from agent.hooks import CompositeHooks
from telemetry import names as n
from telemetry.export import CountingExporter, JsonLinesExporter
from telemetry.metrics import MetricsHooks, PendingSource
from telemetry.redact import Redactor
from telemetry.tracing import TracingHooks

log = logging.getLogger("endstate.telemetry")

DEFAULT_SERVICE_NAME = "endstate"
EXPORT_TIMEOUT_S = 5.0  # per export request, unless OTEL_EXPORTER_OTLP_TIMEOUT (ms) says otherwise
CLOSE_TIMEOUT_S = 3.0  # force_flush and shutdown never take longer than this by default
MAX_QUEUE_SIZE = 2048
MAX_EXPORT_BATCH_SIZE = 512
SCHEDULE_DELAY_MS = 1000

_CAPTURE_ON = frozenset({"true", "span_only", "span_and_event"})  # values that record content on spans
_SAMPLERS: dict[str, Callable[[float], Sampler]] = {
    "always_on": lambda _: ALWAYS_ON,
    "always_off": lambda _: ALWAYS_OFF,
    "parentbased_always_on": lambda _: DEFAULT_ON,
    "parentbased_always_off": lambda _: DEFAULT_OFF,
    "traceidratio": TraceIdRatioBased,
    "parentbased_traceidratio": ParentBasedTraceIdRatio,
}


@dataclass
class Telemetry:
    """The hooks to give an `Agent`, and what they write to."""

    hooks: CompositeHooks
    registry: CollectorRegistry
    tracer_provider: trace.TracerProvider
    metrics: MetricsHooks
    tracing: TracingHooks | None = None
    _closed: bool = field(default=False, init=False, repr=False)

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] = os.environ,
        registry: CollectorRegistry | None = None,
        span_exporter: SpanExporter | None = None,
        pending: PendingSource | None = None,
    ) -> Telemetry:
        """Telemetry as the `OTEL_*` variables say; `span_exporter` replaces the one they name."""
        metrics = MetricsHooks(registry, pending)
        exporter = (
            None if _flag(environ, ev.OTEL_SDK_DISABLED) else span_exporter or exporter_from_env(environ)
        )
        if exporter is None:
            return cls(CompositeHooks((metrics,)), metrics.registry, trace.NoOpTracerProvider(), metrics)
        provider = TracerProvider(
            resource=resource_from_env(environ), sampler=sampler_from_env(environ), shutdown_on_exit=False
        )
        counting = CountingExporter(exporter, metrics.record_export_failure, metrics.record_export_attempt)
        provider.add_span_processor(_batch(counting))
        capture = environ.get(n.ENV_CAPTURE_CONTENT, "").strip().lower() in _CAPTURE_ON
        tracing = TracingHooks(provider, capture_content=capture, redact=Redactor.from_env(environ))
        telemetry = cls(CompositeHooks((tracing, metrics)), metrics.registry, provider, metrics, tracing)
        atexit.register(_close_at_exit, weakref.ref(telemetry))
        return telemetry

    def force_flush(self, timeout_s: float = CLOSE_TIMEOUT_S) -> bool:
        """Export the queued spans; False when that did not finish within `timeout_s`."""
        flush = getattr(self.tracer_provider, "force_flush", None)
        return flush is None or _within(timeout_s, lambda: flush(int(timeout_s * 1000)))

    def shutdown(self, timeout_s: float = CLOSE_TIMEOUT_S) -> bool:
        """Flush and close the span export, giving up after `timeout_s`. Safe to call twice."""
        close = getattr(self.tracer_provider, "shutdown", None)
        if self._closed or close is None:
            return True
        self._closed = True
        return _within(timeout_s, close)


def with_offline_default(environ: Mapping[str, str], traces_file: str) -> dict[str, str]:
    """`environ`, plus a span file when it names no place for spans at all.

    The command line uses this so that an offline run still leaves its traces
    somewhere (the library itself records no spans unless told where).
    """
    named = (
        _traces_endpoint(environ)
        or environ.get(OTEL_TRACES_EXPORTER, "").strip()
        or environ.get(n.ENV_TRACES_FILE, "").strip()
    )
    return dict(environ) if named else {**environ, n.ENV_TRACES_FILE: traces_file}


def exporter_from_env(environ: Mapping[str, str]) -> SpanExporter | None:
    """The span exporter the variables name, or None for no export."""
    kind = environ.get(OTEL_TRACES_EXPORTER, "otlp").strip().lower()
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter(out=sys.stderr)
    if kind != "otlp":
        raise ConfigError(f"OTEL_TRACES_EXPORTER={kind!r} is not supported: use 'otlp', 'console' or 'none'")
    endpoint = _traces_endpoint(environ)
    if endpoint is None:
        path = environ.get(n.ENV_TRACES_FILE, "").strip()
        return JsonLinesExporter(path) if path else None
    protocol = (
        _env(environ, ev.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, ev.OTEL_EXPORTER_OTLP_PROTOCOL)
        or "http/protobuf"
    )
    if protocol == "http/protobuf":
        return _http_exporter(environ, endpoint)
    if protocol == "grpc":
        return _grpc_exporter(environ)
    raise ConfigError(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported: use 'http/protobuf' or 'grpc'"
    )


def resource_from_env(environ: Mapping[str, str]) -> Resource:
    """The SDK's own attributes, OTEL_RESOURCE_ATTRIBUTES, and OTEL_SERVICE_NAME over both."""
    attributes: dict[str, str] = {
        telemetry_attributes.TELEMETRY_SDK_LANGUAGE: "python",
        telemetry_attributes.TELEMETRY_SDK_NAME: "opentelemetry",
        telemetry_attributes.TELEMETRY_SDK_VERSION: sdk_version,
    }
    for item in environ.get(ev.OTEL_RESOURCE_ATTRIBUTES, "").split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            attributes[key.strip()] = unquote(value.strip())
    service = environ.get(ev.OTEL_SERVICE_NAME, "").strip()
    attributes[service_attributes.SERVICE_NAME] = (
        service or attributes.get(service_attributes.SERVICE_NAME) or DEFAULT_SERVICE_NAME
    )
    return Resource(attributes)


def sampler_from_env(environ: Mapping[str, str]) -> Sampler:
    """OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG; parent-based always-on by default."""
    name = environ.get(ev.OTEL_TRACES_SAMPLER, "parentbased_always_on").strip().lower()
    if name not in _SAMPLERS:
        raise ConfigError(f"OTEL_TRACES_SAMPLER={name!r} is unknown: use one of {', '.join(_SAMPLERS)}")
    raw = environ.get(ev.OTEL_TRACES_SAMPLER_ARG, "1.0").strip() or "1.0"
    try:
        ratio = float(raw)
    except ValueError:
        raise ConfigError(f"OTEL_TRACES_SAMPLER_ARG={raw!r} must be a number from 0 to 1") from None
    return _SAMPLERS[name](ratio)


def _http_exporter(environ: Mapping[str, str], endpoint: str) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.util.re import parse_env_headers

    compression = (
        _env(environ, ev.OTEL_EXPORTER_OTLP_TRACES_COMPRESSION, ev.OTEL_EXPORTER_OTLP_COMPRESSION) or "none"
    ).lower()
    if compression not in {c.value for c in Compression}:
        raise ConfigError(f"OTEL_EXPORTER_OTLP_COMPRESSION={compression!r}: use gzip, deflate or none")
    return OTLPSpanExporter(
        endpoint=endpoint,
        headers=dict(
            parse_env_headers(
                _env(environ, ev.OTEL_EXPORTER_OTLP_TRACES_HEADERS, ev.OTEL_EXPORTER_OTLP_HEADERS),
                liberal=True,
            )
        ),
        timeout=_timeout_s(environ),
        compression=Compression(compression),
    )


def _grpc_exporter(environ: Mapping[str, str]) -> SpanExporter:
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found]
            OTLPSpanExporter,
        )
    except ImportError:
        raise ConfigError(
            "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the package opentelemetry-exporter-otlp-proto-grpc, "
            "which is not installed: install it, or set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf "
            "with the collector's HTTP endpoint (port 4318)"
        ) from None
    endpoint = _env(environ, ev.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, ev.OTEL_EXPORTER_OTLP_ENDPOINT)
    exporter: SpanExporter = OTLPSpanExporter(endpoint=endpoint or None, timeout=_timeout_s(environ))
    return exporter


def _traces_endpoint(environ: Mapping[str, str]) -> str | None:
    if endpoint := environ.get(ev.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "").strip():
        return endpoint
    if base := environ.get(ev.OTEL_EXPORTER_OTLP_ENDPOINT, "").strip():
        return base.rstrip("/") + "/v1/traces"
    return None


def _env(environ: Mapping[str, str], traces_name: str, general_name: str) -> str:
    """The traces-only variable, else the one for every signal."""
    return environ.get(traces_name, "").strip() or environ.get(general_name, "").strip()


def _timeout_s(environ: Mapping[str, str]) -> float:
    """The export timeout: the variables give milliseconds, as the specification says."""
    raw = _env(environ, ev.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, ev.OTEL_EXPORTER_OTLP_TIMEOUT)
    try:
        return float(raw) / 1000 if raw else EXPORT_TIMEOUT_S
    except ValueError:
        raise ConfigError(f"OTEL_EXPORTER_OTLP_TIMEOUT={raw!r} must be milliseconds, such as 5000") from None


def _batch(exporter: SpanExporter) -> BatchSpanProcessor:
    return BatchSpanProcessor(
        exporter,
        max_queue_size=MAX_QUEUE_SIZE,
        schedule_delay_millis=SCHEDULE_DELAY_MS,
        max_export_batch_size=MAX_EXPORT_BATCH_SIZE,
    )


def _flag(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").strip().lower() == "true"


def _within(timeout_s: float, work: Callable[[], object]) -> bool:
    """Run `work` in a daemon thread; True if it finished within `timeout_s`.

    The SDK's flush and shutdown can wait far longer than asked (an export in
    flight to a collector that never answers); a daemon thread left behind
    never keeps the process from exiting.
    """
    done = threading.Event()

    def target() -> None:
        try:
            work()
        except Exception:
            log.warning("telemetry flush or shutdown failed", exc_info=True)
        finally:
            done.set()

    threading.Thread(target=target, name="endstate-telemetry-close", daemon=True).start()
    finished = done.wait(timeout_s)
    if not finished:
        log.warning("telemetry flush or shutdown still running after %.1f s; not waiting longer", timeout_s)
    return finished


def _close_at_exit(ref: weakref.ref[Telemetry]) -> None:
    if (telemetry := ref()) is not None:
        telemetry.shutdown()
