"""Spans (or content events) a collector took but rejected: an OTLP partial success.

A collector or backend may answer an export 200 with `partial_success`
(`rejected_spans` or `rejected_log_records`, and `error_message`): those are
lost although the export succeeded, and the SDK's OTLP/HTTP exporters read no
response body, so they report success. `Rejections` reads the body of each
answer the exporter's `requests` session gets (a response hook, run in the
exporting thread), and `CountingExporter` (`CountingLogExporter`) takes the
count after each export: they are counted as dropped (`export_failed`) and the
export as a failure.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

# (the answer's message, its count of rejected items, what they are, the exporter's module: its
# logger, whose lines `telemetry.setup` holds back, saying the latest once)
_Kind = tuple[Any, str, str, str]
_SPANS: _Kind = (ExportTraceServiceResponse, "rejected_spans", "spans", "trace_exporter")
_EVENTS: _Kind = (ExportLogsServiceResponse, "rejected_log_records", "events", "_log_exporter")


class Rejections:
    """Rejected spans (`events=True`: content events) noted from the collector's answers, per
    exporting thread, until taken."""

    def __init__(self, events: bool = False) -> None:
        self._local = threading.local()
        self._answer, self._field, self._what, exporter = _EVENTS if events else _SPANS
        self._log = logging.getLogger(f"opentelemetry.exporter.otlp.proto.http.{exporter}")

    def session(self) -> Any:
        """A `requests.Session` whose answers are read for rejections (give it to the exporter)."""
        import requests  # the OTLP/HTTP exporter's own dependency

        session = requests.Session()
        session.hooks["response"].append(self.on_response)
        return session

    def on_response(self, response: Any, *args: Any, **kwargs: Any) -> None:
        """Note the spans a 200 answer says were rejected; never raises."""
        try:
            if response.status_code != 200 or not response.content:
                return
            answer: Any = self._answer.FromString(response.content)
            rejected = int(getattr(answer.partial_success, self._field))
        except Exception:  # not a protobuf answer: nothing to read
            return
        if rejected > 0:
            self._local.count = getattr(self._local, "count", 0) + rejected
            said = " ".join(answer.partial_success.error_message.split())[:200] or "no reason given"
            self._log.warning("the collector rejected %d %s: %s", rejected, self._what, said)

    def take(self) -> int:
        """How many were noted as rejected in this thread since the last call."""
        count = getattr(self._local, "count", 0)
        self._local.count = 0
        return int(count)
