"""Spans sent over OTLP/gRPC, the real exporter to a real gRPC server, arrive whole: each run span
with `stop.reason` (and `stop.limit`), one turn span per turn holding its `chat` and `execute_tool`
spans, and the resource the OTEL_* variables name. The HTTP path had such a test; gRPC, which the
README offers beside it (`OTEL_EXPORTER_OTLP_PROTOCOL=grpc`), had only tests of refusals."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from load_bounds import FLUSH_S
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.trace import SpanKind, StatusCode
from otlp_receiver import attributes
from prometheus_client import CollectorRegistry

from agent import Agent, Budget, StopReason, tool
from agent.models import ScriptedModel, call, finish
from telemetry import Telemetry
from telemetry import names as n


class Collector(trace_service_pb2_grpc.TraceServiceServicer):
    """Keeps every span exported to it, with its resource's attributes."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: list[tuple[dict[str, Any], Any]] = []

    def Export(self, request: Any, context: Any) -> Any:
        with self.lock:
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    self.spans += [(resource, span) for span in scope_spans.spans]
        return trace_service_pb2.ExportTraceServiceResponse()


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[Collector]:
    """A gRPC collector on a free loopback port, and the OTEL_* variables (only these) that send to it."""
    kept = Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(kept, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    for name, value in {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_SERVICE_NAME": "grpc-probe",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=audit,team=agents",
    }.items():
        monkeypatch.setenv(name, value)
    try:
        yield kept
    finally:
        server.stop(grace=None).wait(FLUSH_S)


@tool
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def test_runs_exported_over_grpc_arrive_with_their_stops_turns_and_resource(collector: Collector) -> None:
    telemetry = Telemetry.from_env(dict(os.environ), registry=CollectorRegistry())
    done = ScriptedModel([[call("look", path="a")], [call("look", path="b")], [finish("done", "read")]])
    looping = ScriptedModel([[call("look", path=f"p{i}")] for i in range(5)])
    results = [
        Agent("reader", done, tools=[look], hooks=telemetry.hooks).run("read a and b"),
        Agent("looper", looping, tools=[look], budget=Budget(max_turns=2), hooks=telemetry.hooks).run("go"),
    ]
    assert [r.reason for r in results] == [StopReason.SUCCESS, StopReason.LIMIT]
    assert telemetry.force_flush(FLUSH_S)
    telemetry.shutdown(FLUSH_S)

    spans = [span for _, span in collector.spans]
    assert {resource["service.name"] for resource, _ in collector.spans} == {"grpc-probe"}
    assert all(r["deployment.environment"] == "audit" and r["team"] == "agents" for r, _ in collector.spans)
    runs = {span.name: span for span in spans if span.name.startswith(n.SPAN_INVOKE_AGENT)}
    assert set(runs) == {"invoke_agent reader", "invoke_agent looper"}
    for (name, turns, reason, limit), result in zip(
        [("reader", 3, "success", None), ("looper", 2, "limit", "turns")], results, strict=True
    ):
        run = runs[f"invoke_agent {name}"]
        said = attributes(run.attributes)
        assert (said[n.STOP_REASON], said.get(n.STOP_LIMIT), said[n.AGENT_TURNS]) == (reason, limit, turns)
        assert said[n.GEN_AI_CONVERSATION_ID] == result.run_id and run.trace_id.hex() == result.trace_id
        assert run.status.code != StatusCode.ERROR.value  # a limit is an outcome, not an error
        turn_spans = [s for s in spans if s.parent_span_id == run.span_id and s.name == n.SPAN_TURN]
        assert sorted(attributes(s.attributes)[n.AGENT_TURN_INDEX] for s in turn_spans) == list(
            range(1, turns + 1)
        )
        for turn in turn_spans:
            below = [s for s in spans if s.parent_span_id == turn.span_id]
            chats = [s for s in below if s.name == "chat scripted"]
            assert len(chats) == 1 and chats[0].kind == SpanKind.CLIENT.value + 1  # OTLP kinds count from 1
            assert attributes(chats[0].attributes)[n.GEN_AI_USAGE_INPUT_TOKENS] > 0
    tools = [s for s in spans if s.name == "execute_tool look"]
    assert len(tools) == 4 and all(attributes(s.attributes)[n.GEN_AI_TOOL_NAME] == "look" for s in tools)
