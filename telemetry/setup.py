"""Telemetry from the standard `OTEL_*` environment variables.

`Telemetry.from_env()` hands back the hooks an `Agent` takes. Nothing is set
globally. The OpenTelemetry SDK reads its own variables from the process
environment, as it always does: the OTLP exporter's endpoint, headers,
timeout (seconds, in the Python SDK), compression and certificates; the
resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`); the sampler
(`OTEL_TRACES_SAMPLER`, `_ARG`); span limits (`OTEL_SPAN_*`,
`OTEL_ATTRIBUTE_*`); the batch processor (`OTEL_BSP_*`). What Endstate adds
is only what the SDK does not do:

- where spans go: OTLP when an endpoint is set (`OTEL_EXPORTER_OTLP_PROTOCOL`
  picks HTTP or gRPC; gRPC needs `opentelemetry-exporter-otlp-proto-grpc`) or
  `OTEL_TRACES_EXPORTER` names `otlp` (without an endpoint: the SDK's default,
  localhost:4318, or 4317 over gRPC), else the JSON-lines file
  `ENDSTATE_TRACES_FILE`, else nothing at all (no cost; metrics still work).
  `OTEL_TRACES_EXPORTER=console` writes to standard error, `none` or
  `OTEL_SDK_DISABLED=true` records no spans;
- the service name `endstate` when the environment names none;
- content capture (`telemetry.capture`) and its event path;
- export that loses no span uncounted (`telemetry.export`), failures counted;
- a close bounded at CLOSE_TIMEOUT_S in all, which says once, in one line,
  when telemetry could not be delivered.

`environ` is where Endstate reads its own choices; pass the process
environment or a copy of it with additions (`with_offline_default`), since
the SDK reads the process environment.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import sys
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import SplitResult, urlsplit

from opentelemetry import trace
from opentelemetry.environment_variables import OTEL_LOGS_EXPORTER, OTEL_TRACES_EXPORTER
from opentelemetry.sdk import environment_variables as ev
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter
from opentelemetry.semconv.attributes import service_attributes
from prometheus_client import CollectorRegistry, ProcessCollector, disable_created_metrics
from prometheus_client.exposition import choose_encoder

from agent.errors import ConfigError
from telemetry import names as n
from telemetry._settings import (
    check_booleans,
    check_given_to_the_sdk,
    check_logs_exporter,
    check_sdk_settings,
    int_env,
    timeouts_in_millis,
)
from telemetry.capture import Capture, capture_from_env
from telemetry.export import (
    EVENT_LOG,
    FILE_LOG,
    SPAN_LOG,
    CountedBatchProcessor,
    CountedLogProcessor,
    CountingExporter,
    CountingLogExporter,
    FanOutExporter,
    JsonLinesExporter,
    exporting_for,
)
from telemetry.metrics import MetricsHooks, PendingSource, negotiable
from telemetry.observer import TelemetryHooks
from telemetry.redact import Redactor
from telemetry.rejected import Rejections
from telemetry.tracing import PlannedIds, TracingHooks

log = logging.getLogger("endstate.telemetry")

DEFAULT_SERVICE_NAME = "endstate"
CLOSE_TIMEOUT_S = 2.0  # flush and shutdown together never take longer than this by default
CLOSE_MARGIN_S = 0.05  # of it, kept for counting what was lost and saying so
DEFAULT_MAX_QUEUE_SIZE = 2048  # the SDK's defaults, when OTEL_BSP_* say nothing
DEFAULT_MAX_EXPORT_BATCH_SIZE = 512
REJECTIONS = "endstate_rejections"  # the attribute of an exporter whose answers are read (`Rejections`)
# The exporters log each failed or retried export: held back, and the latest said once, in the line
# about their signal (spans, content events) only
SPAN_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    FILE_LOG.name,  # the offline span file's
    SPAN_LOG.name,  # any span exporter's that raised
)
EVENT_LOGGERS = ("opentelemetry.exporter.otlp.proto.http._log_exporter", EVENT_LOG.name)
# The SDK logs a warning each time an OTEL_* attribute limit cuts a span: said once a process here
LIMIT_LOGGER = "opentelemetry.attributes"
LIMIT_NOTE = "said once a process: the OTEL_* limits cut every span alike"


@dataclass
class Telemetry:
    """The hooks to give an `Agent`, and what they write to."""

    hooks: TelemetryHooks
    registry: CollectorRegistry
    tracer_provider: trace.TracerProvider
    metrics: MetricsHooks
    tracing: TracingHooks | None = None
    spans: CountedBatchProcessor | None = None
    logger_provider: LoggerProvider | None = None  # content events, when a capture mode asks for them
    events: CountedLogProcessor | None = None  # their queue
    delivery: Delivery | None = None
    _closed: bool = field(default=False, init=False, repr=False)

    def exposition(self, accept: str = "") -> tuple[bytes, str]:
        """The /metrics page in the format the `Accept` header asks for (OpenMetrics carries exemplars),
        a header prometheus_client cannot read read as `negotiable` says."""
        encoder, content_type = choose_encoder(negotiable(accept))
        return encoder(self.registry), content_type

    def for_service(self) -> Telemetry:
        """Shape /metrics as a long-running service serves it (call once, at start): with the
        process's own metrics (`process_cpu_seconds_total`, memory, open files) and without the
        `_created` series. The latter is a switch of prometheus_client for the whole process."""
        disable_created_metrics()
        ProcessCollector(registry=self.registry)
        return self

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] = os.environ,
        registry: CollectorRegistry | None = None,
        span_exporter: SpanExporter | None = None,
        pending: PendingSource | None = None,
        log_exporter: LogRecordExporter | None = None,
    ) -> Telemetry:
        """Telemetry as the variables say; `span_exporter`/`log_exporter` replace the ones they name.

        The OpenTelemetry SDK reads its own variables (the exporter's endpoint and headers, the
        sampler, the resource, span limits) from the process environment: an `environ` given here
        adds Endstate's own settings, and one that sets an SDK variable otherwise is refused."""
        check_sdk_settings(os.environ)  # what the SDK reads; `environ` may add Endstate's own
        check_given_to_the_sdk(environ)
        check_logs_exporter(environ)  # Endstate's own reading, from `environ`
        check_booleans(environ)  # OTEL_SDK_DISABLED too
        metrics = MetricsHooks(registry, pending)
        capture = capture_from_env(environ)
        exporter = (
            None if _flag(environ, ev.OTEL_SDK_DISABLED) else span_exporter or exporter_from_env(environ)
        )
        if exporter is None:
            return cls(TelemetryHooks(metrics), metrics.registry, trace.NoOpTracerProvider(), metrics)
        delivery = Delivery(_destination(environ, exporter))
        counting = CountingExporter(
            exporter,
            delivery.failed(metrics.record_export_failure),
            metrics.record_export_attempt,
            mend_first=capture.spans,  # captured content: text from tools and models, any text
            rejections=getattr(exporter, REJECTIONS, None),
            on_rejected=lambda count: metrics.record_spans_dropped(count, n.DROP_EXPORT_FAILED),
            owner=delivery,
        )
        spans = CountedBatchProcessor(counting, metrics.record_spans_dropped, *_queue_sizes(environ))
        provider = TracerProvider(
            resource=resource_from_env(), shutdown_on_exit=False, id_generator=PlannedIds()
        )
        provider.add_span_processor(spans)
        _say_limit_lines_once()
        logs, events = _logger_provider(environ, capture, log_exporter, metrics)
        if _is_otlp(exporter) or (events is not None and log_exporter is None):
            for line in timeouts_in_millis(os.environ):  # what the OTLP exporters read
                log.warning("%s", line)
        tracing = TracingHooks(provider, capture, Redactor.from_env(environ), logs)
        telemetry = cls(
            TelemetryHooks(metrics, tracing),
            metrics.registry,
            provider,
            metrics,
            tracing,
            spans,
            logs,
            events,
            delivery,
        )
        atexit.register(_close_at_exit, weakref.ref(telemetry))
        return telemetry

    def force_flush(self, timeout_s: float = CLOSE_TIMEOUT_S) -> bool:
        """Export what is queued; False when that did not finish within `timeout_s`."""
        return self.spans is None or _within(timeout_s, lambda: self._flush(int(timeout_s * 1000)))

    def shutdown(self, timeout_s: float = CLOSE_TIMEOUT_S) -> bool:
        """Flush and close the export, giving up after `timeout_s` in all. Safe to call twice.

        When spans or events could not be delivered, says so once, in one line.
        """
        if self._closed or self.spans is None:
            return True
        self._closed = True
        finished = _within(max(0.0, timeout_s - CLOSE_MARGIN_S), self._close)
        lost = self.spans.count_unsent()
        lost_events = self.events.count_unsent() if self.events else 0
        full = self.spans.count_full()  # counted, but a command's /metrics dies with it: said too
        if self.delivery is not None and (lost or lost_events or full or not finished):
            sending = self.spans.count_sending() + (self.events.count_sending() if self.events else 0)
            self.delivery.report(lost, None if finished else timeout_s, lost_events, sending, full)
        return finished

    def _flush(self, timeout_ms: int) -> None:
        self.spans and self.spans.force_flush(timeout_ms)
        self.logger_provider and self.logger_provider.force_flush(timeout_ms)

    def _close(self) -> None:
        if isinstance(self.tracer_provider, TracerProvider):
            self.tracer_provider.shutdown()
        if self.logger_provider is not None:
            self.logger_provider.shutdown()


class Delivery:
    """Says once per process, in one line, that telemetry could not be delivered, and why.

    The OTLP exporters log every failed and retried export; their lines are
    held back (each failure is counted in `agent_telemetry_export_failures_total`)
    and the latest reason they gave goes in this one line.
    """

    def __init__(self, destination: str, loggers: tuple[str, ...] = SPAN_LOGGERS) -> None:
        self.destination = _without_password(destination)
        self.said = False
        self._lock = threading.Lock()
        self._loggers = loggers  # whose lines give the reason: the signal's exporters'
        self._held: dict[str, tuple[int, str]] = {}  # logger name: (order, reason), logged in its exports
        self._since = _HOLD_BACK.seen()  # a reason held back before is another telemetry's
        _hold_back_exporter_lines()

    def held(self, logger: str, order: int, reason: str) -> None:
        """A line its exporter logged while exporting for it (`exporting_for`)."""
        with self._lock:
            self._held[logger] = (order, reason)

    @property
    def reason(self) -> str:
        """The latest reason this signal's exporters gave in its exports (else, in no telemetry's
        export, since this one was set up); "" if none."""
        with self._lock:
            own = [self._held[name] for name in self._loggers if name in self._held]
        return max(own)[1] if own else _HOLD_BACK.latest(self._loggers, self._since)

    def failed(self, count: Callable[[str], None]) -> Callable[[str], None]:
        """`count`, and the one line the first time an export fails."""

        def on_failure(signal: str) -> None:
            count(signal)
            self.say(f"export failed ({self.reason or 'no reason given'})")

        return on_failure

    def report(
        self, lost: int, gave_up_after: float | None, lost_events: int = 0, sending: int = 0, full: int = 0
    ) -> None:
        """At close: the spans (and content events) that never left, those in an export the close did
        not see end (`sending`: lost too when the process exits), whether the close gave up waiting,
        and the spans dropped earlier because the export queue was full (`full`)."""
        dropped = (
            f"{full} spans dropped, the export queue full (they ended faster than the collector took "
            f"them; a larger {ev.OTEL_BSP_MAX_QUEUE_SIZE} holds more), counted in "
            f"{n.METRIC_TELEMETRY_SPANS_DROPPED}_total"
        )
        if full and not (lost or lost_events or sending or gave_up_after or self.reason):
            self.say(dropped, failed=False)  # the collector took every export; it was slow
            return
        why = self.reason or (f"no answer within {gave_up_after:.1f} s" if gave_up_after else "export failed")
        events = f" and {lost_events} events" if lost_events else ""
        unsettled = f", {sending} more in an export that had not ended" if sending else ""
        earlier = f"; before that, {dropped}" if full else ""
        self.say(f"{why}; {lost} spans{events} never sent{unsettled}{earlier}")

    def say(self, what: str, failed: bool = True) -> None:
        """The one line, once; `failed`: exports failed, and where they are counted."""
        with self._lock:
            if self.said:
                return
            self.said = True
        counted = f"; failures are counted in {n.METRIC_TELEMETRY_EXPORT_FAILURES}_total" if failed else ""
        log.warning("telemetry could not be delivered to %s: %s%s", self.destination, what, counted)


def _without_password(url: str) -> str:
    """`url` with the password of a `user:password@` masked: the line goes to logs and terminals."""
    try:
        parts = urlsplit(url)
    except ValueError:  # no URL (`http://[::1`): the exporter says so in the same line
        return url
    if parts.password is None:
        return url
    user, _, host = parts.netloc.rpartition("@")
    return parts._replace(netloc=f"{user.split(':', 1)[0]}:***@{host}").geturl()


class _HoldBack(logging.Filter):
    """Keeps the exporters' failure lines off the console; gives each line's reason to the telemetry
    whose export logged it (`exporting_for`), and remembers each logger's latest other reason. The
    exporters log on their own threads: its state is read and written under a lock."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._held = itertools.count(1)  # lines held back so far: orders the reasons
        self._latest: dict[str, tuple[int, str]] = {}  # logger name: (its line's order, its reason)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        reason = " ".join(record.getMessage().split())[:200]
        with self._lock:
            order = next(self._held)
            owner = exporting_for()
            if owner is None:
                self._latest[record.name] = (order, reason)
        if owner is not None:
            owner.held(record.name, order, reason)
        return False

    def seen(self) -> int:
        """The order of the latest line held back (0: none yet)."""
        with self._lock:
            return max((order for order, _ in self._latest.values()), default=0)

    def latest(self, loggers: tuple[str, ...], since: int) -> str:
        """The latest reason of `loggers` logged in no telemetry's export, held back after the line
        `since`; "" if none."""
        with self._lock:
            found = [self._latest[name] for name in loggers if name in self._latest]
        order, reason = max(found, default=(0, ""))
        return reason if order > since else ""


_HOLD_BACK = _HoldBack()


def _hold_back_exporter_lines() -> None:
    for name in SPAN_LOGGERS + EVENT_LOGGERS:
        logger = logging.getLogger(name)
        if _HOLD_BACK not in logger.filters:
            logger.addFilter(_HOLD_BACK)


class _OnceEach(logging.Filter):
    """Lets each warning of a logger through once a process, `LIMIT_NOTE` added; holds back its
    repeats. Keyed by the message's template, so the set stays as small as the logger's sources."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._said: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        with self._lock:
            if (template := str(record.msg)) in self._said:
                return False
            self._said.add(template)
        record.msg, record.args = f"{record.getMessage()} ({LIMIT_NOTE})", ()
        return True


_ONCE_EACH = _OnceEach()


def _say_limit_lines_once() -> None:
    logger = logging.getLogger(LIMIT_LOGGER)
    if _ONCE_EACH not in logger.filters:
        logger.addFilter(_ONCE_EACH)


def with_offline_default(environ: Mapping[str, str], traces_file: str) -> dict[str, str]:
    """`environ`, plus a span file when it names no place for spans at all.

    The command line uses this so that an offline run still leaves its traces
    somewhere (the library itself records no spans unless told where).
    """
    named = (
        _otlp_endpoint(environ)
        or environ.get(OTEL_TRACES_EXPORTER, "").strip()
        or environ.get(n.ENV_TRACES_FILE, "").strip()
    )
    return dict(environ) if named else {**environ, n.ENV_TRACES_FILE: traces_file}


def exporter_from_env(environ: Mapping[str, str]) -> SpanExporter | None:
    """The span exporter the variables name, or None for no export; the SDK configures it.
    `OTEL_TRACES_EXPORTER` may list several, as the SDK reads it (`otlp,console`): each gets every span."""
    made = (_span_exporter(environ, kind) for kind in _traces_exporters(environ))
    found = [exporter for exporter in made if exporter is not None]
    if len(found) < 2:
        return found[0] if found else None
    fan_out = FanOutExporter(found)  # the OTLP exporter's answers are read for rejected spans
    rejections = (getattr(e, REJECTIONS) for e in found if hasattr(e, REJECTIONS))
    setattr(fan_out, REJECTIONS, next(rejections, None))
    return fan_out


def _traces_exporters(environ: Mapping[str, str]) -> list[str]:
    """The exporters `OTEL_TRACES_EXPORTER` lists, each once, in order: `otlp` when it is unset or
    empty; `none` alone for no export. A `ConfigError` names what cannot work."""
    given = environ.get(OTEL_TRACES_EXPORTER, "")
    if not given.strip():
        return ["otlp"]
    kinds = list(dict.fromkeys(k.strip().lower() for k in given.split(",") if k.strip()))
    said = f"{OTEL_TRACES_EXPORTER}={given!r}"
    if not kinds:
        raise ConfigError(f"{said} names no exporter: use 'otlp', 'console' or 'none', or a list of them")
    if "none" in kinds and len(kinds) > 1:
        raise ConfigError(f"{said} lists 'none' with other exporters: set 'none' alone for no export")
    for kind in kinds:
        if kind not in ("otlp", "console", "none"):
            where = f"{OTEL_TRACES_EXPORTER}={kind!r}" if len(kinds) == 1 else f"{said}: {kind!r}"
            raise ConfigError(f"{where} is not supported: use 'otlp', 'console' or 'none'")
    return [] if kinds == ["none"] else kinds


def _span_exporter(environ: Mapping[str, str], kind: str) -> SpanExporter | None:
    """The exporter of one kind (`otlp`, `console`). OTLP without an endpoint: to the SDK's default
    one (localhost) when `OTEL_TRACES_EXPORTER` names it, else the span file, or None for no export."""
    if kind == "console":
        return ConsoleSpanExporter(out=sys.stderr)
    if not _otlp_endpoint(environ) and not environ.get(OTEL_TRACES_EXPORTER, "").strip():
        path = environ.get(n.ENV_TRACES_FILE, "").strip()
        return JsonLinesExporter(_writable_file(path)) if path else None
    protocol = _protocol(environ, ev.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
    if protocol == "grpc":
        _check_grpc_endpoint(environ)
        return _grpc_exporter()
    _check_endpoint(environ)
    return _http_exporter()


def _writable_file(path: str) -> str:
    """`path`, when spans can be appended to it: a directory there, or none to make it in, or one
    this process may not write, was found only at the first export, each span then lost."""
    where = Path(path)
    said = f"{n.ENV_TRACES_FILE}={path!r}"
    if where.is_dir():
        raise ConfigError(f"{said} is a directory: name a file in it, such as {where / 'traces.jsonl'}")
    if not where.parent.is_dir():
        raise ConfigError(f"{said}: the directory {str(where.parent)!r} does not exist; create it first")
    if not os.access(where if where.exists() else where.parent, os.W_OK):
        raise ConfigError(f"{said} cannot be written by this process: name a file it may write")
    return path


def _credential_provider(signal: str) -> bool:
    """Whether the process environment names a credential provider for the OTLP/HTTP exporter of
    `signal` (TRACES, LOGS): the exporter then makes its session from it, and its answers go unread."""
    names = (
        "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER",
        f"OTEL_PYTHON_EXPORTER_OTLP_HTTP_{signal}_CREDENTIAL_PROVIDER",
    )
    return any(os.environ.get(name, "").strip() for name in names)


def _http_exporter() -> SpanExporter:
    """The OTLP/HTTP span exporter, whose answers are read for spans the collector rejected (a
    partial success, which the exporter itself reports as a success), unless a credential provider
    named in the environment gives the exporter a session of its own."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    if _credential_provider("TRACES"):
        return OTLPSpanExporter()
    rejections = Rejections()
    exporter = OTLPSpanExporter(session=rejections.session())
    setattr(exporter, REJECTIONS, rejections)
    return exporter


def _exporter_kind(environ: Mapping[str, str], variable: str) -> str:
    """The exporter `variable` names, `otlp` when it is unset or empty (the OpenTelemetry spec: an
    empty variable is read as an unset one, as `OTEL_TRACES_EXPORTER=${X:-}` in a compose file sets)."""
    return environ.get(variable, "").strip().lower() or "otlp"


def _lists_otlp(environ: Mapping[str, str], variable: str) -> bool:
    """Whether `variable` names OTLP: alone, in a comma-separated list (`otlp,console`), or by default."""
    return "otlp" in (kind.strip() for kind in _exporter_kind(environ, variable).split(","))


def resource_from_env() -> Resource:
    """The SDK's resource from the environment, named `endstate` when the environment names no service."""
    resource = Resource.create()
    name = str(resource.attributes.get(service_attributes.SERVICE_NAME, ""))
    if name.startswith("unknown_service") or not name.strip():  # OTEL_SERVICE_NAME set blank too
        resource = resource.merge(Resource({service_attributes.SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    return resource


def _logger_provider(
    environ: Mapping[str, str], capture: Capture, exporter: LogRecordExporter | None, metrics: MetricsHooks
) -> tuple[LoggerProvider | None, CountedLogProcessor | None]:
    """Where content events go: the given exporter, else OTLP logs beside the spans, else nowhere;
    and their queue.

    Their exports are counted under the signal `logs`, a failure said once, naming where they went,
    and every event dropped before export counted.
    """
    if not capture.events:
        return None, None
    exporter = exporter or _log_exporter_from_env(environ)
    if exporter is None:
        log.warning(
            "%s=%s asks for events, but %s: no events recorded",
            n.ENV_CAPTURE_CONTENT,
            capture.mode,
            _why_no_events(environ),
        )
        return None, None
    metrics.count_exports_of(n.SIGNAL_LOGS)
    delivery = Delivery(_otlp_endpoint(environ, _LOGS) or type(exporter).__name__, EVENT_LOGGERS)
    counting = CountingLogExporter(
        exporter,
        delivery.failed(metrics.record_export_failure),
        metrics.record_export_attempt,
        getattr(exporter, REJECTIONS, None),
        lambda count: metrics.record_events_dropped(count, n.DROP_EXPORT_FAILED),
        owner=delivery,
    )
    events = CountedLogProcessor(counting, metrics.record_events_dropped, *_queue_sizes(environ, _LOG_QUEUE))
    provider = LoggerProvider(resource=resource_from_env(), shutdown_on_exit=False)
    provider.add_log_record_processor(events)
    return provider, events


def _why_no_events(environ: Mapping[str, str]) -> str:
    if not _lists_otlp(environ, OTEL_LOGS_EXPORTER):
        kind = _exporter_kind(environ, OTEL_LOGS_EXPORTER)
        return f"{OTEL_LOGS_EXPORTER}={kind!r} sends them nowhere (content events go only over OTLP)"
    return (
        f"no OTLP endpoint is set to send them to ({ev.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT} or "
        f"{ev.OTEL_EXPORTER_OTLP_ENDPOINT})"
    )


def _log_exporter_from_env(environ: Mapping[str, str]) -> LogRecordExporter | None:
    """The OTLP/HTTP exporter of content events, when the variables give their endpoint (the logs
    endpoint, or the general one: a traces endpoint alone is no place for logs)."""
    if not _lists_otlp(environ, OTEL_LOGS_EXPORTER) or not _otlp_endpoint(environ, _LOGS):
        return None
    if _protocol(environ, ev.OTEL_EXPORTER_OTLP_LOGS_PROTOCOL) == "grpc":
        raise ConfigError(
            "content events over gRPC are not supported: set OTEL_EXPORTER_OTLP_LOGS_PROTOCOL=http/protobuf "
            "and OTEL_EXPORTER_OTLP_LOGS_ENDPOINT to the collector's HTTP logs endpoint, such as "
            "http://collector:4318/v1/logs (spans may stay on gRPC)"
        )
    _check_endpoint(environ, _LOGS)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    if _credential_provider("LOGS"):
        return OTLPLogExporter()
    rejections = Rejections(events=True)
    exporter = OTLPLogExporter(session=rejections.session())
    setattr(exporter, REJECTIONS, rejections)
    return exporter


def _grpc_exporter() -> SpanExporter:
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
    exporter: SpanExporter = OTLPSpanExporter()
    rejections = Rejections()
    if rejections.watch_grpc(exporter):
        setattr(exporter, REJECTIONS, rejections)
    return exporter


def _protocol(environ: Mapping[str, str], signal_variable: str) -> str:
    """The OTLP protocol the signal's variable or the general one names; a bad one is refused naming
    the variable that holds it (the signal's own wins, so the general one may be fine)."""
    variable = next(
        (name for name in (signal_variable, ev.OTEL_EXPORTER_OTLP_PROTOCOL) if environ.get(name, "").strip()),
        None,
    )
    protocol = environ.get(variable, "").strip() if variable else "http/protobuf"
    if protocol not in {"http/protobuf", "grpc"}:
        raise ConfigError(f"{variable}={protocol!r} is not supported: use 'http/protobuf' or 'grpc'")
    return protocol


_TRACES = (ev.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "/v1/traces")
_LOGS = (ev.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, "/v1/logs")


def _otlp_endpoint(environ: Mapping[str, str], signal: tuple[str, str] = _TRACES) -> str:
    """The endpoint the SDK will use for `signal` (traces unless told), or "" when none is set."""
    variable, path = signal
    if endpoint := environ.get(variable, "").strip():
        return endpoint
    base = environ.get(ev.OTEL_EXPORTER_OTLP_ENDPOINT, "").strip()
    return base.rstrip("/") + path if base else ""


def _check_endpoint(environ: Mapping[str, str], signal: tuple[str, str] = _TRACES) -> None:
    """The OTLP/HTTP endpoint of `signal` (traces unless told) that is no http(s) URL (a port that is
    no port among them) is named now, not found at the first export."""
    for name in (signal[0], ev.OTEL_EXPORTER_OTLP_ENDPOINT):
        if given := environ.get(name, "").strip():
            url = _url(given)
            if url is None or url.scheme not in ("http", "https") or not url.hostname or _blank(given):
                raise ConfigError(f"{name}={given!r} must be a URL such as http://collector:4318")
            return


def _url(given: str) -> SplitResult | None:
    """`given` split as a URL, None when it cannot be (`http://[::1`) or its port is no port (1-65535)."""
    try:
        url = urlsplit(given)
        port = url.port
    except ValueError:
        return None
    return None if port == 0 else url


def _blank(given: str) -> bool:
    return any(c.isspace() for c in given)


def _check_grpc_endpoint(environ: Mapping[str, str]) -> None:
    """An OTLP/gRPC endpoint the exporter cannot dial (blanks in it, a scheme other than http, https
    or gRPC's own unix, an http(s) URL without a host) is named now, not found at the first export."""
    given, name = _grpc_endpoint(environ)
    url = _url(given) if "://" in given else urlsplit("")
    web = url is not None and url.scheme in ("http", "https")
    if _blank(given) or (
        "://" in given and not (web and url is not None and url.hostname) and not given.startswith("unix://")
    ):
        raise ConfigError(
            f"{name}={given!r} must be an address such as http://collector:4317 (https:// for TLS)"
        )


def _grpc_endpoint(environ: Mapping[str, str]) -> tuple[str, str]:
    """The endpoint the gRPC span exporter dials as given (no signal path is added), and its variable."""
    for name in (ev.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, ev.OTEL_EXPORTER_OTLP_ENDPOINT):
        if given := environ.get(name, "").strip():
            return given, name
    return "", ev.OTEL_EXPORTER_OTLP_ENDPOINT


def _destination(environ: Mapping[str, str], exporter: SpanExporter) -> str:
    """Where spans go, as the one line about failed deliveries names it: the gRPC exporter's endpoint
    as given (it adds no `/v1/traces`), the HTTP exporter's URL with the path it posts to."""
    if isinstance(exporter, FanOutExporter):
        return ", ".join(_destination(environ, each) for each in exporter.exporters)
    if isinstance(exporter, JsonLinesExporter):
        return str(exporter.path)
    default = str(getattr(exporter, "_endpoint", "") or type(exporter).__name__)  # none set: the SDK's
    if type(exporter).__module__.startswith("opentelemetry.exporter.otlp.proto.grpc"):
        given = _grpc_endpoint(environ)[0]
        return (given or default) + _tls_unasked(exporter, given)
    return _otlp_endpoint(environ) or default


def _is_otlp(exporter: SpanExporter) -> bool:
    """Whether spans go to an OTLP exporter (alone or among those `OTEL_TRACES_EXPORTER` lists)."""
    parts = exporter.exporters if isinstance(exporter, FanOutExporter) else (exporter,)
    return any(type(part).__module__.startswith("opentelemetry.exporter.otlp") for part in parts)


def _tls_unasked(exporter: SpanExporter, endpoint: str) -> str:
    """What the one line adds for a gRPC exporter that speaks TLS though its endpoint asked for none by
    its scheme (`127.0.0.1:4317`: the SDK then dials TLS unless told insecure), to a collector that
    most likely has none: every export failed with "failed to connect", the TLS mismatch unsaid."""
    if getattr(exporter, "_insecure", True) is not False or "://" in endpoint:
        return ""
    return (
        " (over TLS: the endpoint names no scheme; a collector without TLS takes http://HOST:PORT "
        f"or {ev.OTEL_EXPORTER_OTLP_INSECURE}=true)"
    )


_SPAN_QUEUE = (ev.OTEL_BSP_MAX_QUEUE_SIZE, ev.OTEL_BSP_MAX_EXPORT_BATCH_SIZE)
_LOG_QUEUE = (ev.OTEL_BLRP_MAX_QUEUE_SIZE, ev.OTEL_BLRP_MAX_EXPORT_BATCH_SIZE)


def _queue_sizes(environ: Mapping[str, str], names: tuple[str, str] = _SPAN_QUEUE) -> tuple[int, int]:
    """A batch processor's queue and batch sizes (OTEL_BSP_* for spans, OTEL_BLRP_* for events),
    the SDK's defaults without them; a batch never larger than the queue (the default batch
    shrinks to a small queue set alone)."""
    queue_name, batch_name = names
    queue = int_env(environ, queue_name, DEFAULT_MAX_QUEUE_SIZE)
    if not environ.get(batch_name, "").strip():
        return queue, min(queue, DEFAULT_MAX_EXPORT_BATCH_SIZE)
    batch = int_env(environ, batch_name, DEFAULT_MAX_EXPORT_BATCH_SIZE)
    if batch > queue:
        raise ConfigError(
            f"{batch_name}={batch} is larger than {queue_name}={queue}: "
            "a batch is taken from the queue, so set it to the queue size or less"
        )
    return queue, batch


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
    return done.wait(timeout_s)


def _close_at_exit(ref: weakref.ref[Telemetry]) -> None:
    if (telemetry := ref()) is not None:
        telemetry.shutdown()
