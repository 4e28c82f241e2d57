"""tele42: resource and header variables the OTLP exporters cannot use are refused at setup, naming
the variable (and never a header's value), instead of telemetry that quietly goes out without them.

Before, OTEL_SERVICE_NAME written in Latin-1 (`billing-agenté` from a Windows-1252 `.env`) reached
Python as a lone surrogate: the OTLP encoder left `service.name` out of every span of the process, so
its traces landed under an unknown service in Tempo, and the log had one error line per batch. A
header the exporters cannot read (`api-key: KEY`, a quote, an `é` not URL-encoded) was dropped with
one warning, and every export then went out without it (an Authorization header: every export
refused by the collector).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from load_bounds import FLUSH_S
from otlp_receiver import OtlpReceiver
from prometheus_client import CollectorRegistry
from test_telemetry_export import Setenv, run_some, setenv  # noqa: F401 (the fixture)

from agent.errors import ConfigError
from telemetry import Telemetry

LATIN_1 = "billing-agent\udce9"  # b"billing-agent\xe9" read from the environment by Python
SECRET = "sk-live-0123456789"


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        pytest.param("OTEL_SERVICE_NAME", LATIN_1, id="service-name"),
        pytest.param(
            "OTEL_RESOURCE_ATTRIBUTES", f"deployment.environment=prod,team={LATIN_1}", id="attributes"
        ),
    ],
)
def test_resource_text_that_is_not_utf8_is_refused_naming_the_variable(
    variable: str,
    value: str,
    setenv: Setenv,  # noqa: F811
) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", variable: value}
    with pytest.raises(ConfigError, match=rf"^{variable}=.*not UTF-8.*Set it in UTF-8"):
        Telemetry.from_env(setenv(env), registry=CollectorRegistry())


def test_the_cli_says_so_in_one_line_and_exits_2() -> None:
    env = {k: v for k, v in os.environb.items() if not k.startswith(b"OTEL_")}
    env |= {b"OTEL_SERVICE_NAME": b"billing-agent\xe9", b"ENDSTATE_TRACES_FILE": os.devnull.encode()}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "demo", "csv/clean"], env=env, capture_output=True, timeout=120
    )
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    assert done.returncode == 2, lines
    assert len(lines) == 1 and lines[0].startswith("endstate: OTEL_SERVICE_NAME=") and "not UTF-8" in lines[0]


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        pytest.param(f"api-key: {SECRET}", "entry 1 has no '='", id="colon"),
        pytest.param(
            f"x-team=ops,authorization=Bearer {SECRET}\udce9",
            "the value of header 'authorization'",
            id="latin-1",
        ),
        pytest.param(f'authorization="Bearer {SECRET}"', "the value of header 'authorization'", id="quotes"),
        pytest.param(
            f"x-team=café,authorization=Bearer {SECRET}", "the value of header 'x-team'", id="not-encoded"
        ),
        pytest.param(f"x team=ops,authorization=Bearer {SECRET}", "the name of entry 1", id="blank-in-name"),
    ],
)
@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"])
def test_a_header_the_exporter_would_drop_is_refused_without_showing_values(
    variable: str,
    headers: str,
    says: str,
    setenv: Setenv,  # noqa: F811
) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", variable: headers}
    with pytest.raises(ConfigError, match=rf"^{variable}: ") as refused:
        Telemetry.from_env(setenv(env), registry=CollectorRegistry())
    assert says in str(refused.value) and "name=value" in str(refused.value)
    assert SECRET not in str(refused.value)


def test_headers_the_exporter_reads_are_taken_and_sent(setenv: Setenv) -> None:  # noqa: F811
    """Blanks in a value (liberal, as the exporters read them) and URL-encoded text are fine."""
    with OtlpReceiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": f" authorization = Bearer {SECRET} , x-team=caf%C3%A9,,",
            "OTEL_SERVICE_NAME": "billing-agenté",
        }
        telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
        run_some(telemetry.hooks, runs=1)
        assert telemetry.force_flush(FLUSH_S)
        telemetry.shutdown()
    assert receiver.headers and receiver.headers[0]["authorization"] == f"Bearer {SECRET}"
    assert receiver.headers[0]["x-team"] == "café"  # unquoted by the exporter, sent as Latin-1
    assert {resource["service.name"] for resource, _ in receiver.spans()} == {"billing-agenté"}
