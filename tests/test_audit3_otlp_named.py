"""`OTEL_TRACES_EXPORTER=otlp` set without an endpoint asks for OTLP to the standard default
(http://localhost:4318 over HTTP, localhost:4317 over gRPC: a collector beside the process, as a
sidecar or an agent runs). It recorded nothing at all, silently: the CLI took the variable as
naming a place (so it wrote no offline file either) and the setup as naming none. Unset, the
library still records nothing, and the CLI still writes its offline file."""

from __future__ import annotations

import os

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import ConsoleSpanExporter
from prometheus_client import CollectorRegistry
from test_telemetry_export import Setenv, setenv  # noqa: F401  OTEL_* set where the SDK reads them

from telemetry import Telemetry
from telemetry.export import FanOutExporter, JsonLinesExporter
from telemetry.setup import exporter_from_env, with_offline_default


def test_otlp_named_without_an_endpoint_sends_to_the_default_one(setenv: Setenv) -> None:  # noqa: F811
    http = exporter_from_env(with_offline_default(setenv({"OTEL_TRACES_EXPORTER": "otlp"}), "t.jsonl"))
    assert isinstance(http, HttpExporter) and http._endpoint == "http://localhost:4318/v1/traces"
    http.shutdown()
    grpc = exporter_from_env(setenv({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}))
    assert isinstance(grpc, GrpcExporter)
    grpc.shutdown()


def test_otlp_listed_beside_console_is_not_dropped(setenv: Setenv) -> None:  # noqa: F811
    both = exporter_from_env(setenv({"OTEL_TRACES_EXPORTER": "otlp,console"}))
    assert isinstance(both, FanOutExporter)
    assert [type(e) for e in both.exporters] == [HttpExporter, ConsoleSpanExporter]
    both.shutdown()


def test_nothing_named_still_records_nothing_and_the_cli_still_writes_its_file(setenv: Setenv) -> None:  # noqa: F811
    telemetry = Telemetry.from_env(setenv({}), registry=CollectorRegistry())
    assert telemetry.spans is None
    offline = exporter_from_env(with_offline_default(setenv({}), os.devnull))
    assert isinstance(offline, JsonLinesExporter)
    offline.shutdown()
