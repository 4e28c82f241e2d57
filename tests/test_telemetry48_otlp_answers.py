"""What an OTLP/HTTP collector's 200 answer says about the spans it took (the telemetry48 review).

OTLP/HTTP: a success is a 200 whose body is the Protobuf `Export...ServiceResponse` (empty for a
full success; `partial_success` naming what was rejected). The SDK's exporters read no body. A
body that says it is Protobuf and cannot be read may hide rejected spans: that export failed, as
OpenTelemetry's Go exporter has it. A body of another type is no OTLP answer: said, not counted lost.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from load_bounds import FLUSH_S
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from prometheus_client import CollectorRegistry

from agent import Agent, StopReason
from agent.models import ScriptedModel, finish
from telemetry import Telemetry
from telemetry import names as n

PROTOBUF = "application/x-protobuf"
Answer = tuple[str, bytes]  # its content type, its body
Export = Callable[[Callable[[str], Answer]], tuple[Telemetry, Counter[str]]]


def received(body: bytes, path: str) -> int:
    """How many spans (or content events) an export carried."""
    if path.endswith("/v1/logs"):
        logs = ExportLogsServiceRequest.FromString(body)
        return sum(len(s.log_records) for r in logs.resource_logs for s in r.scope_logs)
    traces = ExportTraceServiceRequest.FromString(body)
    return sum(len(s.spans) for r in traces.resource_spans for s in r.scope_spans)


def serve(answer: Callable[[str], Answer], took: Counter[str]) -> ThreadingHTTPServer:
    """A collector answering each export 200 with `answer(path)`, counting in `took` what it got."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            took[self.path.rsplit("/", 1)[-1]] += received(
                self.rfile.read(int(self.headers["content-length"])), self.path
            )
            kind, body = answer(self.path)
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def export_to(monkeypatch: pytest.MonkeyPatch) -> Iterator[Export]:
    """Runs one agent with its spans and content events sent to a collector answering as asked:
    its telemetry, and how many spans and events the collector got."""
    servers: list[ThreadingHTTPServer] = []

    def run(answer: Callable[[str], Answer]) -> tuple[Telemetry, Counter[str]]:
        took: Counter[str] = Counter()
        servers.append(server := serve(answer, took))
        for name in [name for name in os.environ if name.startswith("OTEL_")]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
        telemetry = Telemetry.from_env(dict(os.environ), registry=CollectorRegistry())
        result = Agent("shipper", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks).run("go")
        assert result.reason is StopReason.SUCCESS
        assert telemetry.force_flush(FLUSH_S)
        telemetry.shutdown()
        return telemetry, took

    yield run
    for server in servers:
        server.shutdown()
        server.server_close()


def lost(telemetry: Telemetry, signal: str) -> tuple[float, float]:
    """The spans (events) counted dropped as export_failed, and the failed exports, of `signal`."""
    what = "spans" if signal == n.SIGNAL_TRACES else "events"
    dropped = f"agent_telemetry_{what}_dropped_total"
    registry = telemetry.registry
    return (
        registry.get_sample_value(dropped, {"reason": n.DROP_EXPORT_FAILED}) or 0.0,
        registry.get_sample_value("agent_telemetry_export_failures_total", {"signal": signal}) or 0.0,
    )


def test_an_answer_said_to_be_protobuf_that_is_none_loses_the_exports_spans(
    export_to: Export, caplog: pytest.LogCaptureFixture
) -> None:
    """It was counted as delivered: a partial success it may have held went unread."""
    telemetry, took = export_to(lambda path: (PROTOBUF, b"<html>not an OTLP answer</html>"))
    assert took["traces"] > 0 and took["logs"] > 0
    assert lost(telemetry, n.SIGNAL_TRACES) == (took["traces"], 1)
    assert lost(telemetry, n.SIGNAL_LOGS) == (took["logs"], 1)
    assert "is no ExportTraceServiceResponse" in caplog.text


def test_an_answer_of_another_type_is_said_to_be_no_otlp_answer(
    export_to: Export, caplog: pytest.LogCaptureFixture
) -> None:
    """A 200 that is not OTLP's (a proxy's or a web app's page) was taken without a word: the
    endpoint may be no collector. The 200 is OTLP's acceptance, so nothing is counted lost."""
    telemetry, took = export_to(lambda path: ("text/html; charset=utf-8", b"<html>Welcome</html>"))
    assert took["traces"] > 0
    assert lost(telemetry, n.SIGNAL_TRACES) == (0, 0)
    assert "20 bytes (text/html) that are no OTLP answer: is it" in caplog.text


def test_a_partial_success_answered_in_json_is_read(
    export_to: Export,
) -> None:
    """OTLP's JSON encoding of the same answer: its rejected spans went uncounted."""
    rejected = {"traces": b'{"partialSuccess": {"rejectedSpans": "1", "errorMessage": "too old"}}'}
    telemetry, took = export_to(lambda path: ("application/json", rejected.get(path[4:], b"{}")))
    assert took["traces"] > 1
    assert lost(telemetry, n.SIGNAL_TRACES) == (1, 1)
    assert lost(telemetry, n.SIGNAL_LOGS) == (0, 0)


def test_no_more_spans_are_counted_rejected_than_the_export_sent(
    export_to: Export,
) -> None:
    """A collector saying it rejected more spans than it was sent had them all counted."""
    many = ExportTracePartialSuccess(rejected_spans=1000, error_message="quota")
    answer = ExportTraceServiceResponse(partial_success=many).SerializeToString()
    telemetry, took = export_to(lambda path: (PROTOBUF, answer if path.endswith("traces") else b""))
    assert 0 < took["traces"] < 1000
    assert lost(telemetry, n.SIGNAL_TRACES) == (took["traces"], 1)
