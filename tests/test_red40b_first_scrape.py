"""red40b: `endstate worker --first-scrape-wait` without --metrics-port is refused: no /metrics is served
for a scrape to read, and the option was dropped unread. $ENDSTATE_FIRST_SCRAPE_WAIT, which `serve`
shares, stays a default the worker uses only with --metrics-port."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _worker(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ENDSTATE_")} | env
    argv = [sys.executable, "-m", "agent.cli", "worker", "--temporal", "127.0.0.1:1", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=environ, cwd=tmp_path)


def test_first_scrape_wait_without_metrics_port_is_refused(tmp_path: Path) -> None:
    """Before: the worker connected to Temporal and polled, the wait dropped unread."""
    done = _worker(tmp_path, "--first-scrape-wait", "30")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    says = "--first-scrape-wait 30 waits for a scrape of /metrics, which the worker serves only with "
    says += "--metrics-port PORT: give it one, or leave the option out"
    assert says in done.stderr and "Temporal" not in done.stderr


def test_the_environment_default_alone_is_left_alone(tmp_path: Path) -> None:
    """$ENDSTATE_FIRST_SCRAPE_WAIT set for `serve` in a shared environment does not stop a worker."""
    done = _worker(tmp_path, ENDSTATE_FIRST_SCRAPE_WAIT="30")
    assert done.returncode == 2 and "cannot reach Temporal at '127.0.0.1:1'" in done.stderr, done.stderr
    assert "first-scrape" not in done.stderr
