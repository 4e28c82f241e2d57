"""OTEL_EXPERIMENTAL_RESOURCE_DETECTORS naming a detector that is not installed is refused at start.

The SDK skipped such a detector with an `error` line and a traceback at the first span, and every span
then went out without the attributes it was asked for (a typo, `proces`, or a package not installed):
a value the SDK would ignore, which README's one rule for bad `OTEL_*` values refuses, naming the
variable and the detectors there are. Detectors that are installed, `*` (all of them) and blanks
around the names are taken as the SDK takes them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from agent.errors import ConfigError
from telemetry import Telemetry

VARIABLE = "OTEL_EXPERIMENTAL_RESOURCE_DETECTORS"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    for name in list(os.environ):
        if name.startswith(("OTEL_", "ENDSTATE_TRACES")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ENDSTATE_TRACES_FILE", str(tmp_path / "traces.jsonl"))
    yield monkeypatch


@pytest.mark.parametrize("given", ["proces", "process,nonexistent", " host , typo "])
def test_a_detector_that_is_not_installed_is_refused_naming_the_variable_and_the_detectors_there_are(
    clean_env: pytest.MonkeyPatch, given: str
) -> None:
    clean_env.setenv(VARIABLE, given)
    with pytest.raises(ConfigError) as refused:
        Telemetry.from_env(registry=CollectorRegistry())
    said = str(refused.value)
    assert said.startswith(f"{VARIABLE}={given!r}")
    assert "process" in said.split(":", 1)[1] and "host" in said.split(":", 1)[1]  # the ones installed


@pytest.mark.parametrize("given", ["process,host", " os , host ", "*", "otel", "service_instance", ""])
def test_installed_detectors_are_taken(clean_env: pytest.MonkeyPatch, given: str) -> None:
    clean_env.setenv(VARIABLE, given)
    telemetry = Telemetry.from_env(registry=CollectorRegistry())
    assert telemetry.spans is not None
    telemetry.shutdown(timeout_s=5)


def test_the_command_line_refuses_it_before_any_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "demo"],
        env={**env, VARIABLE: "proces"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"endstate: {VARIABLE}='proces'"), done.stderr
    assert "Traceback" not in done.stderr
