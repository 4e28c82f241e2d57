"""red40: --namespace and --task-queue without --temporal are refused, not dropped unread."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _endstate(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "ENDSTATE_TEMPORAL"} | env
    environ["ENDSTATE_WORLDS"] = str(tmp_path / "worlds")
    argv = [sys.executable, "-m", "agent.cli", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=environ, cwd=tmp_path)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["start", "csv-cleaner", "Clean it", "--scenario", "csv/clean", "--namespace", "prod"],
            "--namespace needs",
        ),
        (["runs", "--task-queue", "agents"], "--task-queue needs"),
        (
            ["answer", "r1", "yes", "--namespace", "a", "--task-queue", "b"],
            "--namespace and --task-queue need",
        ),
        (["serve", "--task-queue", "agents"], "--task-queue needs"),
    ],
)
def test_a_temporal_option_without_temporal_is_refused(tmp_path: Path, args: list[str], says: str) -> None:
    """Before: `endstate start AGENT TASK --namespace prod --task-queue agents` with --temporal forgotten
    ran the agent here on a local SQLite store, the Temporal options unread."""
    done = _endstate(tmp_path, *args)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert (
        f"{says} --temporal HOST:PORT (or $ENDSTATE_TEMPORAL)" in done.stderr
        and "nothing was done" in done.stderr
    )
    assert not (tmp_path / ".endstate").exists()


def test_with_temporal_from_the_environment_they_are_used(tmp_path: Path) -> None:
    done = _endstate(tmp_path, "runs", "--namespace", "prod", ENDSTATE_TEMPORAL="127.0.0.1:1")
    assert done.returncode == 2 and "cannot reach Temporal at '127.0.0.1:1' (namespace 'prod')" in done.stderr
    done = _endstate(tmp_path, "runs", ENDSTATE_TEMPORAL="127.0.0.1:1")
    assert done.returncode == 2 and "(namespace 'default')" in done.stderr
