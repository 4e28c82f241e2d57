"""A span file that cannot be written (its folder missing, a full disk) is said once, in one line that
names the file and why, as any failed delivery is: each batch logged a warning of its own, and the one
line named `JsonLinesExporter` with "no reason given"."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from agent import Agent
from agent.models import ScriptedModel, finish
from telemetry import Telemetry
from telemetry import names as n


def test_an_unwritable_span_file_is_said_once_naming_the_file_and_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    path = tmp_path / "gone" / "traces.jsonl"
    path.parent.mkdir()
    telemetry = Telemetry.from_env({n.ENV_TRACES_FILE: str(path)}, registry=CollectorRegistry())
    path.parent.rmdir()  # after the start (a missing directory then is refused: test_telemetry47_hostile)
    caplog.set_level(logging.WARNING)
    for _ in range(3):
        Agent("filed", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks).run("go")
        telemetry.force_flush()
    telemetry.shutdown()
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1, lines
    assert str(path) in lines[0] and "No such file or directory" in lines[0]
    failures = telemetry.registry.get_sample_value(
        "agent_telemetry_export_failures_total", {"signal": n.SIGNAL_TRACES}
    )
    assert failures == 3
