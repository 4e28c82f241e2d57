"""Content events (EVENT_ONLY) go where the logs endpoint says: with only
OTEL_EXPORTER_OTLP_LOGS_ENDPOINT set (spans to the offline file) they were refused as having "no OTLP
endpoint", and with only a traces endpoint they went to the SDK's default, localhost:4318, not the
collector. When no events can be sent, the warning says why (OTEL_LOGS_EXPORTER=none was reported as a
missing endpoint)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from telemetry import Telemetry
from telemetry import names as n

EVENTS = {n.ENV_CAPTURE_CONTENT: "EVENT_ONLY", n.ENV_SEMCONV_STABILITY_OPT_IN: n.OPT_IN_GEN_AI_LATEST}


@pytest.fixture
def setenv(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("OTEL_") or name == n.ENV_TRACES_FILE:
            monkeypatch.delenv(name)
    return monkeypatch


def telemetry_with(setenv: pytest.MonkeyPatch, env: dict[str, str]) -> Telemetry:
    for name, value in {**EVENTS, **env}.items():
        setenv.setenv(name, value)
    return Telemetry.from_env(dict(os.environ), registry=CollectorRegistry())


def test_a_logs_endpoint_alone_takes_the_events(setenv: pytest.MonkeyPatch, tmp_path: Path) -> None:
    logs = "http://127.0.0.1:4318/v1/logs"
    env = {"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": logs, n.ENV_TRACES_FILE: str(tmp_path / "t.jsonl")}
    telemetry = telemetry_with(setenv, env)
    try:
        assert telemetry.logger_provider is not None
    finally:
        telemetry.shutdown(timeout_s=0.5)


def test_a_traces_endpoint_alone_sends_no_events_to_localhost(
    setenv: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry = telemetry_with(setenv, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
    try:
        assert telemetry.logger_provider is None
        assert "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT" in caplog.text
    finally:
        telemetry.shutdown(timeout_s=0.5)


@pytest.mark.parametrize("kind", ["none", "console"])
def test_a_logs_exporter_that_is_not_otlp_is_named_as_the_reason(
    kind: str, setenv: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_LOGS_EXPORTER": kind}
    telemetry = telemetry_with(setenv, env)
    try:
        assert telemetry.logger_provider is None
        assert f"OTEL_LOGS_EXPORTER={kind!r}" in caplog.text
        assert "no OTLP endpoint" not in caplog.text
    finally:
        telemetry.shutdown(timeout_s=0.5)


def test_events_beside_grpc_spans_are_told_how_to_go_over_http(setenv: pytest.MonkeyPatch) -> None:
    """With spans on gRPC, the fix offered was OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, which moves
    the spans too (to a gRPC port); the logs' own protocol and endpoint are what events need."""
    from agent.errors import ConfigError

    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    with pytest.raises(ConfigError) as raised:
        telemetry_with(setenv, env)
    said = str(raised.value)
    assert (
        "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL=http/protobuf" in said
        and "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT" in said
    )
    setenv.setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/protobuf")
    setenv.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://127.0.0.1:4318/v1/logs")
    telemetry = Telemetry.from_env(dict(os.environ), registry=CollectorRegistry())
    try:
        assert telemetry.logger_provider is not None  # spans on gRPC, events over HTTP
    finally:
        telemetry.shutdown(timeout_s=0.5)
