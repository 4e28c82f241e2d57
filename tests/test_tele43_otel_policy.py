"""tele43: what a bad `OTEL_*` value does, one rule for every command and setting.

Commands that run agents (and so export) refuse to start, exit 2, naming the variable and its fix,
before any run is made or touched; commands that export nothing (`runs`, `pending`, `limits`,
`review`, `prune`) do not read the settings and are never stopped by them. A setting the SDK would
ignore, or that fails every export, is refused the same way as one it cannot parse."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from test_telemetry_export import TO_FILE, Setenv, setenv  # noqa: F401 (the fixture)

from agent.durable.store import open_store
from agent.errors import ConfigError
from telemetry import Telemetry

OTLP = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
GRPC = OTLP | {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
BAD = [  # (settings, what the error says)
    (TO_FILE | {"OTEL_TRACES_SAMPLER": "bogus"}, r"OTEL_TRACES_SAMPLER='bogus' is not a sampler"),
    # the HTTP exporter logged "Unsupported compression type" and sent uncompressed
    (
        OTLP | {"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"},
        r"OTEL_EXPORTER_OTLP_COMPRESSION=.zstd. is not a compression the exporter takes over http",
    ),
    # the gRPC exporter raised InvalidCompressionValueException: a traceback
    (
        GRPC | {"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "br"},
        r"_TRACES_COMPRESSION=.br. is not a compression the exporter takes over grpc: use gzip",
    ),
    # the SDK dropped the entry with a log line: every span went out without it
    (TO_FILE | {"OTEL_RESOURCE_ATTRIBUTES": "team=ml,prod"}, r"entry 2 \('prod'\) is not key=value"),
    (TO_FILE | {"OTEL_RESOURCE_ATTRIBUTES": "=ml"}, r"entry 1 \('=ml'\) is not key=value"),
    # every export failed, said only as "timeout, max retries or shutdown"
    (OTLP | {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/no/ca.pem"}, r"CERTIFICATE='/no/ca.pem' cannot be read"),
    # the gRPC exporter takes gzip only: "none" was the same traceback
    (
        GRPC | {"OTEL_EXPORTER_OTLP_COMPRESSION": "none"},
        r"COMPRESSION='none' is not a compression .* grpc: use gzip",
    ),
    (
        GRPC | {"OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY": "/no/key.pem"},
        r"LOGS_CLIENT_KEY='/no/key.pem' cannot be",
    ),
]


@pytest.mark.parametrize(("env", "says"), BAD)
def test_a_setting_the_sdk_would_ignore_or_fail_on_is_refused_naming_it(
    env: dict[str, str],
    says: str,
    setenv: Setenv,  # noqa: F811
) -> None:
    with pytest.raises(ConfigError, match=says):
        Telemetry.from_env(setenv(env), registry=CollectorRegistry())


@pytest.mark.parametrize(
    "env",
    [
        OTLP | {"OTEL_EXPORTER_OTLP_COMPRESSION": " GZIP "},
        OTLP | {"OTEL_EXPORTER_OTLP_COMPRESSION": "deflate", "OTEL_EXPORTER_OTLP_LOGS_COMPRESSION": "none"},
        GRPC | {"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip"},
        TO_FILE | {"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod, team=m%3Dl"},
    ],
)
def test_good_settings_are_taken(env: dict[str, str], setenv: Setenv) -> None:  # noqa: F811
    Telemetry.from_env(setenv(env), registry=CollectorRegistry()).shutdown()


def endstate(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ENDSTATE_"))}
    argv = [sys.executable, "-m", "agent.cli", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=clean | env, timeout=120)


EXPORTS_NOTHING = [["runs"], ["pending"], ["review"], ["prune", "--older-than", "30d"]]
RUNS_AGENTS = [
    ["demo", "--json"],
    ["start", "csv-cleaner", "Clean the orders"],
    ["answer", "some-run", "yes"],
]


@pytest.mark.parametrize(("env", "says"), [BAD[0], BAD[2], BAD[3], BAD[5]])
def test_one_rule_for_every_command(env: dict[str, str], says: str, tmp_path: Path) -> None:
    """No traceback anywhere; commands that export nothing work; commands that run agents refuse,
    exit 2, before any run is made."""
    open_store("sqlite:///.endstate/runs.db".replace(".endstate", str(tmp_path / ".endstate")))
    for args in EXPORTS_NOTHING:
        done = endstate(args, env, tmp_path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)
    for args in RUNS_AGENTS:
        done = endstate(args, env, tmp_path)
        assert done.returncode == 2, (args, done.returncode, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and done.stderr.startswith("endstate: "), (args, done.stderr)
        assert re.search(says, done.stderr), (args, done.stderr)
    assert "no runs in" in endstate(["runs"], {}, tmp_path).stdout  # `start` made none
