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

OTLP/HTTP says a success's body MUST be that answer (empty for a full success).
A body that says it is Protobuf and cannot be read may hide rejected spans: the
export's every span is counted lost, as OpenTelemetry's Go exporter fails such an
export. OTLP's JSON form of the answer is read as well. A body of any other type
(a proxy's page, a web app's) is no OTLP answer: the 200 is OTLP's acceptance,
so nothing is counted lost, but it is said once, as the endpoint may be no collector.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

# (the answer's message, its count of rejected items, what they are, the exporter's module: its
# logger, whose lines `telemetry.setup` holds back, saying the latest once)
_Kind = tuple[Any, str, str, str]
_SPANS: _Kind = (ExportTraceServiceResponse, "rejected_spans", "spans", "trace_exporter")
_EVENTS: _Kind = (ExportLogsServiceResponse, "rejected_log_records", "events", "_log_exporter")
_PROTOBUF = ("application/x-protobuf", "application/protobuf")
_JSON = "application/json"
log = logging.getLogger("endstate.telemetry")


class Rejections:
    """Rejected spans (`events=True`: content events) noted from the collector's answers, per
    exporting thread, until taken."""

    def __init__(self, events: bool = False) -> None:
        self._local = threading.local()
        self._answer, self._field, self._what, exporter = _EVENTS if events else _SPANS
        self._log = logging.getLogger(f"opentelemetry.exporter.otlp.proto.http.{exporter}")
        self._said_not_otlp = False

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
        """Note what a success's answer says was rejected, or that it could not be read; never raises."""
        with contextlib.suppress(Exception):
            if 200 <= response.status_code < 300 and response.content:  # empty: a full success
                self._read(response.content, _media_type(response.headers.get("content-type")))

    def _read(self, body: bytes, media_type: str) -> None:
        try:
            answer = self._decoded(body, media_type)
        except Exception:
            self._unreadable(len(body), media_type)
            return
        self.on_answer(answer)

    def _decoded(self, body: bytes, media_type: str) -> Any:
        """The answer `body` holds: OTLP's JSON form when its type says JSON, else Protobuf."""
        if media_type == _JSON:
            return json_format.Parse(body, self._answer(), ignore_unknown_fields=True)
        return self._answer.FromString(body)

    def _unreadable(self, size: int, media_type: str) -> None:
        """An answer that is none: the export's every item lost when it said it was Protobuf."""
        if media_type in _PROTOBUF:
            self._local.unreadable = True
            name = self._answer.DESCRIPTOR.name
            self._log.warning("the collector's answer is no %s (%d bytes): %s lost", name, size, self._what)
        elif not self._said_not_otlp:
            self._said_not_otlp = True
            log.warning(
                "the OTLP endpoint answered an export 200 with %d bytes (%s) that are no OTLP answer: is it "
                "an OpenTelemetry collector? Its %s are counted as delivered",
                size,
                media_type or "no content type",
                self._what,
            )

    def on_answer(self, answer: Any) -> None:
        """Note what an answer (an `Export...ServiceResponse`) says was rejected."""
        rejected = int(getattr(answer.partial_success, self._field))
        if rejected > 0:
            self._local.count = getattr(self._local, "count", 0) + rejected
            said = " ".join(answer.partial_success.error_message.split())[:200] or "no reason given"
            self._log.warning("the collector rejected %d %s: %s", rejected, self._what, said)

    def take(self, exported: int) -> int:
        """How many of the `exported` items of this thread's last export its answers said were lost:
        those rejected (no more than were sent), or all when an answer could not be read."""
        count, unreadable = getattr(self._local, "count", 0), getattr(self._local, "unreadable", False)
        self._local.count, self._local.unreadable = 0, False
        return exported if unreadable else min(int(count), exported)


def _media_type(content_type: str | None) -> str:
    """`application/json` of `Application/JSON; charset=utf-8`; "" for none."""
    return (content_type or "").split(";", 1)[0].strip().lower()


class _Watched:
    """A gRPC stub whose `Export` answers are read by `Rejections` before they are handed back."""

    def __init__(self, stub: Any, rejections: Rejections) -> None:
        self._stub, self._rejections = stub, rejections

    def Export(self, *args: Any, **kwargs: Any) -> Any:  # the stub's own name
        answer = self._stub.Export(*args, **kwargs)
        with contextlib.suppress(Exception):  # an answer without partial_success: nothing to read
            self._rejections.on_answer(answer)
        return answer
