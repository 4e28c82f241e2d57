"""An OTLP export timeout written in milliseconds, as the OpenTelemetry specification reads it, is said.

The specification (and the Go, Java and JavaScript SDKs) read `OTEL_EXPORTER_OTLP_TIMEOUT` in
milliseconds, its default 10000; the Python exporters read seconds (their default 10). A deployment's
shared `OTEL_EXPORTER_OTLP_TIMEOUT=10000` was taken without a word as 10,000 s: one export to a
collector that stopped answering then held the export thread for 2.8 hours, every span meanwhile
dropped. The value still goes to the SDK as it is (the run is never stopped by it); a warning names
the variable, what the SDK reads it as, and the value that means what was most likely meant.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest
from otlp_receiver import closed_port
from prometheus_client import CollectorRegistry

from telemetry import Telemetry


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in list(os.environ):
        if name.startswith(("OTEL_", "ENDSTATE_TRACES")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    yield monkeypatch


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    telemetry = Telemetry.from_env(registry=CollectorRegistry())
    telemetry.shutdown(timeout_s=0.5)
    lines = (r.getMessage() for r in caplog.records if r.name == "endstate.telemetry")
    return [line for line in lines if "TIMEOUT" in line]


@pytest.mark.parametrize(
    ("variable", "value", "meant"),
    [
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "10000", "10"),
        ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "30000", "30"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500", "2.5"),
    ],
)
def test_a_timeout_in_milliseconds_is_said_with_what_the_sdk_reads_and_the_value_meant(
    clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, variable: str, value: str, meant: str
) -> None:
    clean_env.setenv(variable, value)
    with caplog.at_level(logging.WARNING, logger="endstate.telemetry"):
        lines = said(caplog)
    assert len(lines) == 1, lines
    assert f"{variable}={value!r}" in lines[0]
    assert "seconds" in lines[0] and "milliseconds" in lines[0]
    assert f"{variable}={meant}" in lines[0]  # the fix, in the unit the SDK reads


@pytest.mark.parametrize("value", ["10", "120", "999"])
def test_a_timeout_in_seconds_is_taken_without_a_word(
    clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str
) -> None:
    clean_env.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", value)
    with caplog.at_level(logging.WARNING, logger="endstate.telemetry"):
        assert said(caplog) == []
