"""red40b: Ctrl-C stops `endstate demo` (exit 130, as for any command). Before, it cancelled the one run
playing and the demo went on: with the next scenario, or, when that run was to be approved next, with exit 2
and "waits for no answer or approval ... resume it without Approval(...)"."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_service_support import wait_for

pytestmark = pytest.mark.slow


def children(pid: int) -> list[int]:
    """The processes `pid` started that are running (a tool's command)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_ctrl_c_inside_a_run_stops_the_demo_with_exit_130(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "agent.cli", "demo", "ci/approved-push", "--repeat", "5"]
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the scenario's world (a repository) is made there
    demo = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    try:
        wait_for(lambda: children(demo.pid), what="the run inside its tool call (a command it runs)")
        demo.send_signal(signal.SIGINT)
        out, err = demo.communicate(timeout=120)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    assert demo.returncode == 130, err
    assert "endstate:" not in err, err  # no error of a run played on after the Ctrl-C
    assert "stop reasons reached" not in out and "ci/approved-push" not in out  # it stopped at once
