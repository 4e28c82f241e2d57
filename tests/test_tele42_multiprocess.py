"""tele42: prometheus_client's multiprocess mode, which a host app run by gunicorn turns on with
PROMETHEUS_MULTIPROC_DIR, as Endstate's metrics meet it.

Before, a directory that was not there gave a FileNotFoundError traceback (exit 1) at setup; one that
was there silently lost every exemplar, so the active-time histogram's trace links were gone with no
word why. Now the first is a one-line error naming the variable (exit 2), the second a warning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def demo(multiproc_dir: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and k != "PROMETHEUS_MULTIPROC_DIR"
    }
    env |= {"PROMETHEUS_MULTIPROC_DIR": multiproc_dir, "ENDSTATE_TRACES_FILE": os.devnull}
    command = [sys.executable, "-m", "agent.cli", "demo", "csv/clean"]
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_multiprocess_directory_that_is_not_there_is_named_in_one_line(tmp_path: Path) -> None:
    done = demo(str(tmp_path / "gone"), tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("endstate: PROMETHEUS_MULTIPROC_DIR="), done.stderr
    assert "is no directory" in lines[0] and "unset the variable" in lines[0]


def test_multiprocess_mode_says_that_exemplars_are_lost_and_runs_go_on(tmp_path: Path) -> None:
    (tmp_path / "mp").mkdir()
    done = demo(str(tmp_path / "mp"), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "csv/clean" in done.stdout and "success" in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "keeps no exemplars" in lines[0], done.stderr
    assert "agent_run_active_seconds" in lines[0]
