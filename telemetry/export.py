"""Span exporters that never raise: failures are counted, and a JSON-lines file for offline use."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from telemetry.names import SIGNAL_TRACES

log = logging.getLogger("endstate.telemetry")


class CountingExporter(SpanExporter):
    """Wraps an exporter: every export is counted as an attempt, and a failed or
    raising one as a failure too, never raised."""

    def __init__(
        self,
        inner: SpanExporter,
        on_failure: Callable[[str], None],
        on_attempt: Callable[[str], None] | None = None,
    ) -> None:
        self.inner = inner
        self._on_failure = on_failure
        self._on_attempt = on_attempt

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._on_attempt is not None:
            self._on_attempt(SIGNAL_TRACES)
        try:
            result = self.inner.export(spans)
        except Exception:
            log.warning("span export raised; %d spans dropped", len(spans), exc_info=True)
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self._on_failure(SIGNAL_TRACES)
        return result

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception:
            log.warning("span exporter shutdown raised", exc_info=True)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        try:
            return self.inner.force_flush(timeout_millis)
        except Exception:
            log.warning("span exporter flush raised", exc_info=True)
            return False


class JsonLinesExporter(SpanExporter):
    """Appends each span as one JSON line: traces without a collector."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(span.to_json(indent=None) + "\n" for span in spans)
        try:
            with self._lock, self.path.open("a", encoding="utf-8") as f:
                f.write(lines)
        except OSError:
            log.warning("cannot append spans to %s", self.path, exc_info=True)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None
