"""docs45: a bad OTLP protocol is refused at start with no endpoint set too, as README "Telemetry"
promises of every bad `OTEL_*` value ("refuse to start ... exit 2, before any run is made").

Before, `OTEL_EXPORTER_OTLP_PROTOCOL=thrift endstate demo` played its runs and exited 0: the
protocol was read only once an endpoint was set, so the bad value waited in the environment (while a
bad header or compression beside it was refused at once) and failed the day an endpoint was added.
"""

from __future__ import annotations

import os
import subprocess
import sys

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
    "variable",
    ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"],
)
def test_a_bad_protocol_with_no_endpoint_is_refused_naming_it(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "http/json")
    with pytest.raises(
        ConfigError, match=rf"^{variable}='http/json' is not supported: use 'http/protobuf' or 'grpc'"
    ):
        Telemetry.from_env(registry=CollectorRegistry())


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf", " grpc "])
def test_a_good_protocol_with_no_endpoint_sets_up(protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    Telemetry.from_env(registry=CollectorRegistry()).shutdown()


def test_the_demo_refuses_it_in_one_line_and_exits_2(tmp_path: os.PathLike[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"OTEL_EXPORTER_OTLP_PROTOCOL": "thrift", "ENDSTATE_TRACES_FILE": os.devnull}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "demo", "csv/clean"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, lines
    assert lines == [
        "endstate: OTEL_EXPORTER_OTLP_PROTOCOL='thrift' is not supported: use 'http/protobuf' or 'grpc'"
    ]
    assert "csv/clean" not in done.stdout


@pytest.mark.parametrize("listed", ["bogus", "otlp,zipkin"])
def test_a_logs_exporter_no_one_takes_is_refused_naming_it(
    listed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, OTEL_LOGS_EXPORTER=bogus was taken as no exporter: content events went nowhere, unsaid,
    though OTEL_TRACES_EXPORTER=bogus beside it was refused."""
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", listed)
    with pytest.raises(
        ConfigError, match=r"^OTEL_LOGS_EXPORTER=.*is not supported: use 'otlp', 'console' or 'none'"
    ):
        Telemetry.from_env(registry=CollectorRegistry())


def test_a_logs_exporter_no_one_takes_is_refused_in_a_mapping_too(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"^OTEL_LOGS_EXPORTER='bogus'"):
        Telemetry.from_env({"OTEL_LOGS_EXPORTER": "bogus"}, registry=CollectorRegistry())


@pytest.mark.parametrize("listed", ["otlp", "console", "none", "otlp, console", ""])
def test_a_logs_exporter_it_takes_sets_up(listed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", listed)
    Telemetry.from_env(registry=CollectorRegistry()).shutdown()
