"""tele42: OTLP endpoints as the exporters read them.

Before, an endpoint or service name with a blank or a line end around it (a `.env` file with
Windows line ends leaves a `\\r`) passed Endstate's checks, which trimmed it, while the SDK used it
as it was: with OTEL_EXPORTER_OTLP_ENDPOINT every export failed ("Host '...\\r' contains invalid
character"), with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT spans were posted to `/v1/traces%0D`, and the
one line about failed deliveries named the trimmed endpoint, which looked right. A gRPC endpoint
that is no address ('not a url') was taken and failed at every export; and a gRPC collector that
could not be reached was named with `/v1/traces` added, a path the gRPC exporter never uses.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from otlp_receiver import closed_port
from prometheus_client import CollectorRegistry
from test_telemetry_delivery import CLOSE_SCRIPT
from test_telemetry_export import Setenv, setenv  # noqa: F401 (the fixture)

from agent.errors import ConfigError
from telemetry import Telemetry


@pytest.mark.parametrize("around", [" ", "\r", "\n", "\t"], ids=["blank", "cr", "lf", "tab"])
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/v1/traces"),
        ("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://collector:4318/v1/logs"),
        ("OTEL_SERVICE_NAME", "billing-agent"),
    ],
)
def test_a_value_with_a_blank_or_line_end_around_it_is_refused_naming_the_fix(
    variable: str,
    value: str,
    around: str,
    setenv: Setenv,  # noqa: F811
) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", variable: value + around}
    with pytest.raises(ConfigError, match=rf"^{variable}=.* has blanks or a line end around it") as refused:
        Telemetry.from_env(setenv(env), registry=CollectorRegistry())
    assert str(refused.value).endswith(f"set it to {value!r}")


@pytest.mark.parametrize("endpoint", ["not a url", "ftp://collector:4317", "http://:4317"])
def test_a_grpc_endpoint_that_is_no_address_is_refused(endpoint: str, setenv: Setenv) -> None:  # noqa: F811
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    with pytest.raises(ConfigError, match=r"^OTEL_EXPORTER_OTLP_ENDPOINT=.* must be an address such as"):
        Telemetry.from_env(setenv(env), registry=CollectorRegistry())


@pytest.mark.parametrize(
    "endpoint",
    ["http://collector:4317", "collector:4317", "https://collector:4317/", "unix:///run/otel.sock"],
)
def test_grpc_endpoints_the_exporter_dials_are_taken(endpoint: str, setenv: Setenv) -> None:  # noqa: F811
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
    assert telemetry.delivery is not None and telemetry.delivery.destination.startswith(endpoint)
    said = telemetry.delivery.destination.removeprefix(endpoint)  # no scheme: dialled over TLS, said so
    assert said == ("" if "://" in endpoint else TLS_UNASKED)
    telemetry.shutdown(timeout_s=0.5)


TLS_UNASKED = (
    " (over TLS: the endpoint names no scheme; a collector without TLS takes http://HOST:PORT "
    "or OTEL_EXPORTER_OTLP_INSECURE=true)"
)


@pytest.mark.parametrize(
    ("insecure", "said"), [("true", ""), ("false", TLS_UNASKED), (None, TLS_UNASKED)], ids=str
)
def test_a_grpc_endpoint_with_no_scheme_is_said_to_be_dialled_over_tls_unless_told_insecure(
    insecure: str | None,
    said: str,
    setenv: Setenv,  # noqa: F811
) -> None:
    """The SDK dials `127.0.0.1:4317` over TLS unless OTEL_EXPORTER_OTLP_INSECURE=true: against a
    collector without TLS every export failed with "failed to connect to all addresses", and the one
    line said only that (audit3). It now says the exporter speaks TLS there, and how to ask for none."""
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    env |= {} if insecure is None else {"OTEL_EXPORTER_OTLP_INSECURE": insecure}
    telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
    assert telemetry.delivery is not None and telemetry.delivery.destination == "127.0.0.1:4317" + said
    telemetry.shutdown(timeout_s=0.5)


def test_an_unreachable_grpc_collector_is_named_as_given() -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CLOSE_SCRIPT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"telemetry could not be delivered to {endpoint}: " in lines[0]
