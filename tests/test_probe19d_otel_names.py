"""A bad OTLP protocol is refused naming the variable that holds it: with a good
OTEL_EXPORTER_OTLP_PROTOCOL and a bad OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, the error named the good one."""

from __future__ import annotations

import os

import pytest
from prometheus_client import CollectorRegistry

from agent.errors import ConfigError
from telemetry import Telemetry


@pytest.fixture(autouse=True)
def no_otel(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL='http/json'",
        ),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL='http/json'"),
    ],
)
def test_a_bad_protocol_is_named_by_the_variable_that_holds_it(
    env: dict[str, str], named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as raised:
        Telemetry.from_env(dict(os.environ), registry=CollectorRegistry())
    assert str(raised.value).startswith(named)
    assert "'http/protobuf' or 'grpc'" in str(raised.value)
