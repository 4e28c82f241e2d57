"""red40b: a command that drives a run's segment exits 3 when the segment ends cancelled (SIGTERM, Ctrl-C),
so a script tells a run to resume from one that ended; 0 once the segment ends or waits for a person."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_runner_agents import counted, counter_state, env_with_tests
from test_service_support import wait_for

from agent.cli.runs import CANCELLED_EXIT

pytestmark = pytest.mark.slow


def _spawn(tmp_path: Path, *argv: str) -> subprocess.Popen[str]:
    store = str(tmp_path / "runs.db")
    command = [sys.executable, "-m", "agent.cli", *argv, "--catalog", "test_runner_agents:catalog"]
    return subprocess.Popen(
        [*command, "--store", store, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_with_tests(),
    )  # fmt: skip


def _cut_short(proc: subprocess.Popen[str], flag: Path, sig: signal.Signals) -> tuple[int, dict[str, Any]]:
    """Signal the command while its run is held inside a turn, then let the turn end: its exit code and
    the segment's result."""
    proc.send_signal(sig)
    flag.unlink()
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    return proc.returncode, json.loads(out)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_start_or_resume_cut_short_by_a_signal_exits_3_and_one_that_ends_exits_0(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """Before: `endstate start` exited 0 after SIGTERM (or Ctrl-C) cancelled its run, as after a success."""
    folder, flag = tmp_path / "run", tmp_path / "run" / "slow.flag"
    state = counter_state(folder, "slow", hold_at=2)
    flag.touch()  # the second turn ends only once the signal was sent
    start = _spawn(tmp_path, "start", "counter", "count slowly", "--state", json.dumps(state))
    wait_for(lambda: len(counted(folder)) >= 2, what="two counts")
    code, result = _cut_short(start, flag, sig)
    assert (code, result["reason"]) == (CANCELLED_EXIT, "cancelled") == (3, "cancelled")

    flag.touch()  # resumed, the run is held at its next slow call
    resume = _spawn(tmp_path, "resume", result["run_id"])
    before = len(counted(folder))
    wait_for(lambda: len(counted(folder)) > before, what="a count after the resume")
    code, again = _cut_short(resume, flag, sig)
    assert (code, again["reason"]) == (3, "cancelled")

    done = _spawn(tmp_path, "resume", result["run_id"])
    out, err = done.communicate(timeout=120)
    assert (done.returncode, json.loads(out)["reason"]) == (0, "success"), err
    assert counted(folder) == list(range(1, 9))
