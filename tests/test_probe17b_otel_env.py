"""`OTEL_*` variables as the OpenTelemetry spec reads them: one set but empty is one not set
(`OTEL_TRACES_EXPORTER=${EXPORTER:-}` in a compose file). It made `Telemetry.from_env` refuse to
start ("'' is not supported"), and turned the content events off (probe17b)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.trace.export import SpanExporter

from agent import Agent, StopReason
from agent.models import ScriptedModel, finish
from telemetry import names as n
from telemetry.setup import Telemetry, _log_exporter_from_env, exporter_from_env

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}  # nothing is sent in these tests


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_traces_exporter_is_the_default_otlp(empty: str) -> None:
    exporter = exporter_from_env({"OTEL_TRACES_EXPORTER": empty, **ENDPOINT})
    assert isinstance(exporter, SpanExporter) and type(exporter).__name__ == "OTLPSpanExporter"
    exporter.shutdown()


def test_an_empty_logs_exporter_is_the_default_otlp() -> None:
    exporter = _log_exporter_from_env({"OTEL_LOGS_EXPORTER": "", **ENDPOINT})
    assert isinstance(exporter, LogRecordExporter) and type(exporter).__name__ == "OTLPLogExporter"
    exporter.shutdown()


def test_a_run_with_an_empty_traces_exporter_writes_its_spans_to_the_offline_file(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    telemetry = Telemetry.from_env({"OTEL_TRACES_EXPORTER": "", n.ENV_TRACES_FILE: str(path)})
    try:
        agent = Agent("probe", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks)
        assert agent.run("t").reason is StopReason.SUCCESS
    finally:
        telemetry.shutdown()
    names = [json.loads(line)["name"] for line in path.read_text().splitlines()]
    assert "invoke_agent probe" in names


def test_none_and_unknown_exporters_are_still_read_as_before() -> None:
    assert exporter_from_env({"OTEL_TRACES_EXPORTER": "none", **ENDPOINT}) is None
    with pytest.raises(Exception, match="OTEL_TRACES_EXPORTER='zipkin' is not supported"):
        exporter_from_env({"OTEL_TRACES_EXPORTER": "zipkin"})
