"""`limits suggest --window` past what Prometheus takes (about 292 years: 300y, 99999999999999d) was
sent as is, and Prometheus's own parse error came back ('1:61: parse error: duration out of
range'). Like `prune --older-than`, a window is at most 100 years (36500d), said before any
query, for a store and a Prometheus alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("window", ["300y", "99999999999999d", "36501d"])
@pytest.mark.parametrize("source", ["--prometheus=http://127.0.0.1:1", "--store=runs.db"])
def test_a_window_past_100_years_is_refused_before_any_query(
    tmp_path: Path, source: str, window: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "limits", "suggest", source, "--window", window],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = f"endstate: window {window!r}: at most 100 years (36500d), older than any run"
    assert done.stderr.strip() == said


def test_a_window_of_100_years_is_taken(tmp_path: Path) -> None:
    args = ["limits", "suggest", "--prometheus=http://127.0.0.1:1", "--window=100y"]
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "cannot query Prometheus" in done.stderr, done.stderr
