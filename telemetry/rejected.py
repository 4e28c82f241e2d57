"""Spans (or content events) a collector took but rejected: an OTLP partial success.

A collector or backend may answer an export 200 with `partial_success`
(`rejected_spans` or `rejected_log_records`, and `error_message`): those are
lost although the export succeeded, and the SDK's OTLP/HTTP exporters read no
response body, so they report success. `Rejections` reads the body of each
answer the exporter's `requests` session gets (a response hook, run in the
exporting thread; for the OTLP/gRPC span exporter, each answer its stub
returns), and `CountingExporter` (`CountingLogExporter`) takes the
count after each export: they are counted as dropped (`export_failed`) and the
export as a failure.
"""

from __future__ import annotations

import contextlib
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

    def watch_grpc(self, exporter: Any) -> bool:
        """Read the answers of an OTLP/gRPC exporter's stub (which it drops): False when this SDK's
        exporter is not built as expected (a stub class in `_stub`, its instance in `_client`,
        remade on reconnection), and its answers go unread."""
        stub, channel = getattr(exporter, "_stub", None), getattr(exporter, "_channel", None)
        if not callable(stub) or channel is None or getattr(exporter, "_client", None) is None:
            return False

        def watched(chan: Any) -> _Watched:
            return _Watched(stub(chan), self)

        exporter._stub = watched
        exporter._client = watched(channel)
        self._log = logging.getLogger("opentelemetry.exporter.otlp.proto.grpc.exporter")
        return True

    def on_response(self, response: Any, *args: Any, **kwargs: Any) -> None:
        """Note what a 200 answer says was rejected; never raises."""
        try:
            if response.status_code != 200 or not response.content:
                return
            self.on_answer(self._answer.FromString(response.content))
        except Exception:  # not a protobuf answer: nothing to read
            return

    def on_answer(self, answer: Any) -> None:
        """Note what an answer (an `Export...ServiceResponse`) says was rejected."""
        rejected = int(getattr(answer.partial_success, self._field))
        if rejected > 0:
            self._local.count = getattr(self._local, "count", 0) + rejected
            said = " ".join(answer.partial_success.error_message.split())[:200] or "no reason given"
            self._log.warning("the collector rejected %d %s: %s", rejected, self._what, said)

    def take(self) -> int:
        """How many were noted as rejected in this thread since the last call."""
        count = getattr(self._local, "count", 0)
        self._local.count = 0
        return int(count)


class _Watched:
    """A gRPC stub whose `Export` answers are read by `Rejections` before they are handed back."""

    def __init__(self, stub: Any, rejections: Rejections) -> None:
        self._stub, self._rejections = stub, rejections

    def Export(self, *args: Any, **kwargs: Any) -> Any:  # the stub's own name
        answer = self._stub.Export(*args, **kwargs)
        with contextlib.suppress(Exception):  # an answer without partial_success: nothing to read
            self._rejections.on_answer(answer)
        return answer
