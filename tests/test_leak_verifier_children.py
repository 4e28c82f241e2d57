"""leak: a command verifier that overran its timeout (or the run's time budget) leaves no process
of its command running.

Before: only the command's own process was killed. What it had started (a `make test`'s pytest, a
shell's `sleep`, a test suite's server) ran on, one more for every run whose check hung, for as long
as it liked: in a service that lives for weeks, processes, memory and ports grew with such runs.
Now the command runs in a process group of its own, and the whole group is killed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agent import Agent, Budget, StopReason, command
from agent.models.scripted import ScriptedModel, finish

RUNS = 3


def _alive(pid: int) -> bool:
    """The process runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _left_running(pids: list[int], settle: float = 5.0) -> list[int]:
    """The pids still running once the kill had `settle` seconds to land."""
    deadline = time.monotonic() + settle
    while (alive := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _agent(pids: Path, timeout: float, budget: Budget) -> Agent:
    """Its check starts a child that outlives it (as `make` starts a test run), then waits."""
    check = command("sh", "-c", f"sleep 60 & echo $! >> {pids}; wait", timeout=timeout)
    model = ScriptedModel([[finish("done", "x")], [finish("give_up", "the check hangs")]])
    return Agent("checked", model, verifiers=[check], budget=budget)


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_check_past_its_timeout_leaves_none_of_its_processes_running(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    try:
        for _ in range(RUNS):
            result = _agent(pids, 0.5, Budget(max_turns=5, max_seconds=60)).run("check it")
            assert result.reason is StopReason.GAVE_UP
            assert "did not finish within 0.5 s" in result.verifier_failures[0]
        assert len(_pids(pids)) == RUNS  # each check started its child
        assert _left_running(_pids(pids)) == []
    finally:
        _kill(_pids(pids))


def test_a_check_cut_by_the_time_budget_leaves_none_of_its_processes_running(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    try:
        for _ in range(RUNS):
            result = _agent(pids, 300, Budget(max_turns=5, max_seconds=1.0)).run("check it")
            assert result.reason is StopReason.LIMIT
        assert len(_pids(pids)) == RUNS
        assert _left_running(_pids(pids)) == []
    finally:
        _kill(_pids(pids))


EXITS_MID_CHECK = """
import sys, threading, time
from pathlib import Path
from agent.verify import run_as_group
folder = Path(sys.argv[1])
script = f"sleep 60 & echo $! > {folder / 'child.pid'}; wait"
threading.Thread(target=run_as_group, args=(["sh", "-c", script], None, 100.0), daemon=True).start()
while not (folder / "child.pid").exists():
    time.sleep(0.01)
sys.exit(0)  # the end of a script, Ctrl-C or SIGTERM handled: the process exits mid-check
"""


def test_a_process_that_exits_mid_check_leaves_none_of_the_checks_processes_running(tmp_path: Path) -> None:
    # Was: in a session of its own, the check's command no longer got a terminal's Ctrl-C, and a
    # harness that exited while it ran left it, and all it started, running on as orphans.
    done = subprocess.run([sys.executable, "-c", EXITS_MID_CHECK, str(tmp_path)], timeout=60)
    assert done.returncode == 0
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not _alive(child)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
