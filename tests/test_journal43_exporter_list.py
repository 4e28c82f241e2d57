"""`OTEL_TRACES_EXPORTER` read as the OpenTelemetry SDK reads it: one exporter or a comma-separated list
(`otlp,console`), each span sent to every one; a list that cannot work is refused naming the variable."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from otlp_receiver import OtlpReceiver
from prometheus_client import CollectorRegistry

from agent import Agent
from agent.errors import ConfigError
from agent.models import ScriptedModel, finish
from telemetry import Telemetry
from telemetry.setup import _log_exporter_from_env


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in list(os.environ):
        if name.startswith(("OTEL_", "ENDSTATE_TRACES")):
            monkeypatch.delenv(name)
    yield monkeypatch


def run_once(telemetry: Telemetry) -> str:
    result = Agent("lister", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks).run("go")
    assert telemetry.shutdown(timeout_s=10)
    assert result.trace_id is not None
    return result.trace_id


@pytest.mark.parametrize("listed", ["otlp,console", " console , OTLP ", "otlp,console,otlp"])
def test_each_exporter_listed_gets_every_span(
    listed: str, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with OtlpReceiver() as receiver:
        env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        env.setenv("OTEL_TRACES_EXPORTER", listed)
        telemetry = Telemetry.from_env(registry=CollectorRegistry())
        trace_id = run_once(telemetry)
        received = [span.name for _, span in receiver.spans()]
    assert received.count("invoke_agent lister") == 1  # once, however often it is listed
    err = capsys.readouterr().err
    assert err.count('"name": "invoke_agent lister"') == 1 and f'"trace_id": "0x{trace_id}"' in err
    exports = telemetry.registry.get_sample_value("agent_telemetry_exports_total", {"signal": "traces"})
    failures = telemetry.registry.get_sample_value(
        "agent_telemetry_export_failures_total", {"signal": "traces"}
    )
    assert exports and not failures


@pytest.mark.parametrize(
    ("listed", "says"),
    [
        ("none,console", r"OTEL_TRACES_EXPORTER='none,console' lists 'none' with other exporters"),
        ("otlp,zipkin", r"OTEL_TRACES_EXPORTER='otlp,zipkin': 'zipkin' is not supported"),
        (",", r"OTEL_TRACES_EXPORTER=',' names no exporter"),
    ],
)
def test_a_list_that_cannot_work_is_refused_naming_the_variable(
    listed: str, says: str, env: pytest.MonkeyPatch
) -> None:
    env.setenv("OTEL_TRACES_EXPORTER", listed)
    with pytest.raises(ConfigError, match=says):
        Telemetry.from_env(registry=CollectorRegistry())


@pytest.mark.parametrize("listed", ["otlp,console", "console, otlp"])
def test_content_events_go_over_otlp_when_the_logs_exporters_listed_include_it(listed: str) -> None:
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}  # nothing is sent
    exporter = _log_exporter_from_env({"OTEL_LOGS_EXPORTER": listed, **endpoint})
    assert exporter is not None and type(exporter).__name__ == "OTLPLogExporter"
    exporter.shutdown()
    assert _log_exporter_from_env({"OTEL_LOGS_EXPORTER": "console", **endpoint}) is None  # as before


@pytest.mark.parametrize(
    "given",
    [
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        {"OTEL_TRACES_SAMPLER": "always_off", "ENDSTATE_TRACES_FILE": os.devnull},
        {"OTEL_SERVICE_NAME": "billing", "ENDSTATE_TRACES_FILE": os.devnull},
    ],
)
def test_a_mapping_that_gives_the_sdk_variables_the_process_does_not_have_is_refused(
    given: dict[str, str], env: pytest.MonkeyPatch
) -> None:
    """The SDK reads its own variables (the exporter's endpoint, the sampler, the resource) from the
    process environment only: given in a mapping alone they were ignored, and spans went to
    localhost:4318 while the failure line named the mapping's endpoint."""
    (name,) = (k for k in given if k.startswith("OTEL_"))
    with pytest.raises(ConfigError, match=rf"{name}=.* the process environment .* os\.environ"):
        Telemetry.from_env(given, registry=CollectorRegistry())
    env.setenv(name, given[name])  # where the SDK reads it: taken
    Telemetry.from_env(given, registry=CollectorRegistry()).shutdown()


def test_a_mapping_of_endstates_own_settings_is_taken_as_it_is(env: pytest.MonkeyPatch) -> None:
    own = {"OTEL_TRACES_EXPORTER": "none", "OTEL_BSP_MAX_QUEUE_SIZE": "64", "OTEL_SDK_DISABLED": "false"}
    Telemetry.from_env(own, registry=CollectorRegistry()).shutdown()
