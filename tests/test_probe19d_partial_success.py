"""A collector that answers an export 200 with `partial_success` (OTLP: some spans, or content
events, rejected) lost them: they are counted as dropped and the export as a failure, as DESIGN.md
asks ("failures counted"). The SDK's OTLP/HTTP exporters read no answer and called it a success:
nothing was counted."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from load_bounds import FLUSH_S
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)
from prometheus_client import CollectorRegistry

from agent import Agent, StopReason
from agent.models import ScriptedModel, finish
from telemetry import Telemetry
from telemetry import names as n


def collector(rejected: int) -> Callable[[], Iterator[str]]:
    """A collector answering every export 200, with `rejected` spans (or events) rejected (0: a plain
    success)."""
    why = "span too old"
    spans = ExportTraceServiceResponse(
        partial_success=ExportTracePartialSuccess(rejected_spans=rejected, error_message=why)
        if rejected
        else None
    ).SerializeToString()
    events = ExportLogsServiceResponse(
        partial_success=ExportLogsPartialSuccess(rejected_log_records=rejected, error_message=why)
        if rejected
        else None
    ).SerializeToString()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            answer = events if self.path.endswith("/v1/logs") else spans
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            return None

    def serve() -> Iterator[str]:
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()

    return serve


@pytest.fixture
def otel_env(monkeypatch: pytest.MonkeyPatch) -> Callable[..., dict[str, str]]:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)

    def at(endpoint: str, **more: str) -> dict[str, str]:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY",
        }
        for name, value in {**env, **more}.items():
            monkeypatch.setenv(name, value)
        return dict(os.environ)

    return at


def export_one_run(environ: dict[str, str]) -> Telemetry:
    telemetry = Telemetry.from_env(environ, registry=CollectorRegistry())
    result = Agent("shipper", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks).run("go")
    assert result.reason is StopReason.SUCCESS
    assert telemetry.force_flush(FLUSH_S)
    telemetry.shutdown()
    return telemetry


def sample(telemetry: Telemetry, name: str, **labels: str) -> float:
    return telemetry.registry.get_sample_value(name, labels) or 0.0


def test_spans_a_collector_rejects_are_counted_as_dropped_and_the_export_as_failed(
    otel_env: Callable[..., dict[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    for endpoint in collector(rejected=2)():
        telemetry = export_one_run(otel_env(endpoint))
    assert "could not be delivered" in caplog.text and "rejected 2 spans: span too old" in caplog.text
    dropped = sample(telemetry, "agent_telemetry_spans_dropped_total", reason=n.DROP_EXPORT_FAILED)
    assert dropped == 2
    assert sample(telemetry, "agent_telemetry_export_failures_total", signal=n.SIGNAL_TRACES) >= 1
    events = sample(telemetry, "agent_telemetry_events_dropped_total", reason=n.DROP_EXPORT_FAILED)
    assert events == 1  # the run's one event: no more are lost than were sent, whatever the answer says
    assert sample(telemetry, "agent_telemetry_export_failures_total", signal=n.SIGNAL_LOGS) >= 1


def test_a_plain_success_counts_nothing_lost(otel_env: Callable[..., dict[str, str]]) -> None:
    for endpoint in collector(rejected=0)():
        telemetry = export_one_run(otel_env(endpoint))
    for signal in (n.SIGNAL_TRACES, n.SIGNAL_LOGS):
        assert sample(telemetry, "agent_telemetry_exports_total", signal=signal) >= 1
        assert sample(telemetry, "agent_telemetry_export_failures_total", signal=signal) == 0
    for reason in (n.DROP_EXPORT_FAILED, n.DROP_QUEUE_FULL, n.DROP_SHUTDOWN):
        assert sample(telemetry, "agent_telemetry_spans_dropped_total", reason=reason) == 0
        assert sample(telemetry, "agent_telemetry_events_dropped_total", reason=reason) == 0


def test_spans_a_grpc_collector_rejects_are_counted_too(otel_env: Callable[..., dict[str, str]]) -> None:
    """The OTLP/gRPC exporter drops the collector's answer as the HTTP one does: read from its stub."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    class Rejecting(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: object, context: object) -> ExportTraceServiceResponse:
            partial = ExportTracePartialSuccess(rejected_spans=2, error_message="span too old")
            return ExportTraceServiceResponse(partial_success=partial)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Rejecting(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        grpc_only = {  # content events go over HTTP only: none here
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "NO_CONTENT",
        }
        environ = otel_env(f"http://127.0.0.1:{port}", **grpc_only)
        telemetry = export_one_run(environ)
    finally:
        server.stop(grace=None)
    dropped = sample(telemetry, "agent_telemetry_spans_dropped_total", reason=n.DROP_EXPORT_FAILED)
    assert dropped == 2
    assert sample(telemetry, "agent_telemetry_export_failures_total", signal=n.SIGNAL_TRACES) >= 1
