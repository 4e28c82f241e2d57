"""red40: OTEL_* numbers too large for the SDK are refused at setup, naming the variable, instead of
an OverflowError traceback, an export thread that dies, or every export failing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from test_telemetry_export import TO_FILE, Setenv, setenv  # noqa: F401 (the fixture)

from agent import Agent
from agent.errors import ConfigError
from agent.models.scripted import ScriptedModel, finish
from telemetry import Telemetry
from telemetry import names as n

HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({**TO_FILE, "OTEL_BSP_MAX_QUEUE_SIZE": HUGE}, rf"OTEL_BSP_MAX_QUEUE_SIZE='{HUGE}' must be at most"),
        (
            {**TO_FILE, "OTEL_BLRP_MAX_QUEUE_SIZE": HUGE},
            rf"OTEL_BLRP_MAX_QUEUE_SIZE='{HUGE}' must be at most",
        ),
        (
            {**TO_FILE, "OTEL_BSP_SCHEDULE_DELAY": "9999999999999"},
            r"OTEL_BSP_SCHEDULE_DELAY='9999999999999' must be at most 86400000, such as 5000",
        ),
        ({**TO_FILE, "OTEL_BLRP_EXPORT_TIMEOUT": "86400001"}, r"OTEL_BLRP_EXPORT_TIMEOUT='86400001' must be"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "1e10"},
            r"OTEL_EXPORTER_OTLP_TIMEOUT='1e10' must be a number of seconds above 0 and at most 86400",
        ),
    ],
)
def test_settings_past_what_the_sdk_takes_say_what_to_fix(
    env: dict[str, str],
    says: str,
    setenv: Setenv,  # noqa: F811
) -> None:
    with pytest.raises(ConfigError, match=says):
        Telemetry.from_env(setenv(env), registry=CollectorRegistry())


def test_the_largest_settings_taken_still_export(setenv: Setenv, tmp_path: Path) -> None:  # noqa: F811
    """A day's schedule delay and a queue of `sys.maxsize` are taken: the spans go out at shutdown."""
    spans = tmp_path / "spans.jsonl"
    env = {n.ENV_TRACES_FILE: str(spans), "OTEL_BSP_SCHEDULE_DELAY": "86400000"}
    env |= {"OTEL_BSP_MAX_QUEUE_SIZE": str(sys.maxsize), "OTEL_EXPORTER_OTLP_TIMEOUT": "86400"}
    telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
    agent = Agent(name="bounds", model=ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks)
    assert agent.run("go").reason == "success"
    telemetry.shutdown()
    names = [json.loads(line)["name"] for line in spans.read_text().splitlines()]
    assert "invoke_agent bounds" in names


def test_the_demo_says_it_in_one_line(tmp_path: Path) -> None:
    """Before: `OTEL_BSP_MAX_QUEUE_SIZE=99999999999999999999 endstate demo` died in an OverflowError
    traceback (exit 1)."""
    env = {**os.environ, "OTEL_BSP_MAX_QUEUE_SIZE": HUGE, "ENDSTATE_WORLDS": str(tmp_path / "worlds")}
    argv = [sys.executable, "-m", "agent.cli", "demo", "csv/clean"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"OTEL_BSP_MAX_QUEUE_SIZE='{HUGE}' must be at most {sys.maxsize}" in done.stderr
