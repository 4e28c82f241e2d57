"""newcomer52: README, "Durable runs": "each result line ends with the command that continues the run".
For a run of an agent from `--catalog`, the line said `-> endstate answer ID "your answer"` without the
catalog, and that command, copied, was refused (the seed catalog has no such agent; exit 2). The line
now carries the `--catalog` it was given, as it carries `--store`."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from test_runner_agents import counter_state

from agent.cli.main import main

CATALOG = "test_runner_agents:catalog"


def _hint(said: str) -> list[str]:
    """The words of the command a result line's `->` line gives (the first of `... or ...`)."""
    line = next(line for line in said.splitlines() if line.strip().startswith("->"))
    return shlex.split(line.split("->", 1)[1].split("   or   ")[0])


def test_the_command_a_line_gives_for_a_catalog_run_continues_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ENDSTATE_CATALOG", raising=False)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    store = str(tmp_path / "runs.db")
    state = counter_state(tmp_path / "c", "ask")
    started = ["start", "counter", "count", "--state", json.dumps(state), "--run-id", "r1"]
    assert main([*started, "--store", store, "--catalog", CATALOG]) == 0
    words = _hint(capsys.readouterr().out)
    assert words[:3] == ["endstate", "answer", "r1"] and "--catalog" in words, words
    words[-1] = "2"  # "your answer"
    assert main(words[1:]) == 0, capsys.readouterr().err  # the command as the line gave it
    assert "run r1: success" in capsys.readouterr().out


def test_a_line_without_catalog_names_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENDSTATE_WORLDS", str(tmp_path / "worlds"))
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    store = str(tmp_path / "runs.db")
    started = ["start", "invoice-downloader", "Get it", "--scenario", "invoice/which-one", "--run-id", "r2"]
    assert main([*started, "--store", store]) == 0
    assert _hint(capsys.readouterr().out) == ["endstate", "answer", "r2", "--store", store, "your answer"]
