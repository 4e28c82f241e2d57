"""A pytest killed while its fixtures hold real servers leaves none of them running.

A `timeout` around pytest, or CI cut at its limit, sends SIGTERM: pytest ran no teardown, and
PostgreSQL, Temporal's dev server and Prometheus went on running (PostgreSQL's postmaster in a
session of its own, out of reach of the process group's signal). SIGTERM now ends the session as
Ctrl-C does (conftest.py); SIGKILL, which nothing in the process can catch, leaves the stopping
to each server's reaper (tests/reaper.py).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import reaper

HERE = Path(__file__).parent
PYTEST = str(Path(sys.executable).parent / "pytest")

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("sig", "workers"),
    [(signal.SIGTERM, 0), (signal.SIGKILL, 0), (signal.SIGTERM, 1)],
    ids=["SIGTERM", "SIGKILL", "SIGTERM-to-the-xdist-controller"],
)
def test_a_killed_test_session_leaves_no_server_running(
    tmp_path: Path, sig: signal.Signals, workers: int
) -> None:
    """The signal goes to pytest alone (with xdist: to the controller, not its worker), the hardest
    case: a signal to the process group reaches the servers started in it (not PostgreSQL)."""
    report, log = tmp_path / "held.json", tmp_path / "session.log"
    session = _start_session(report, log, workers)
    try:
        held = _held(session, report, log)
        session.send_signal(sig)
        code = session.wait(timeout=180)
    finally:
        if session.poll() is None:  # the test failed before its signal: the session's own teardown
            session.send_signal(signal.SIGINT)
            session.wait(timeout=180)
    if sig is signal.SIGTERM:  # interrupted as by Ctrl-C: its teardown ran
        assert code == pytest.ExitCode.INTERRUPTED, log.read_text()[-3000:]
        assert "KeyboardInterrupt" in log.read_text()
    for pid in held["pids"]:
        assert _gone(lambda pid=pid: not _alive(pid)), f"process {pid} still runs after {sig.name}"
    for port in held["ports"]:
        assert _gone(lambda port=port: not _listening(port)), f"port {port} still served after {sig.name}"
    for folder in held["folders"]:
        assert _gone(lambda f=folder: not Path(f).exists()), f"{folder} still there after {sig.name}"


@pytest.mark.parametrize("same", [True, False], ids=["the-process-named", "another-given-its-id"])
def test_a_reaper_signals_the_process_it_was_named_not_a_later_one_with_its_id(same: bool) -> None:
    # Was: the watchdog signalled a bare process id; ids come round again (32,768 here), so a reaper
    # that fires late could stop another test's server that was given the dead one's id.
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        start = reaper.start_time(other.pid) if same else "1"  # "1": a process started at boot's tick
        spec = {"pids": [[other.pid, start]], "run": [], "remove": []}
        argv = [sys.executable, "-c", reaper._WATCH, json.dumps(spec)]
        watchdog = subprocess.Popen(argv, stdin=subprocess.PIPE)
        assert watchdog.stdin is not None
        watchdog.stdin.close()  # the test process "died" without `done`
        assert watchdog.wait(timeout=30) == 0
        assert (other.wait(timeout=15) if same else other.poll()) == (-signal.SIGTERM if same else None)
    finally:
        other.kill()
        other.wait()


def _start_session(report: Path, log: Path, workers: int) -> subprocess.Popen[bytes]:
    """pytest on tests/killed_session.py, with the plugins the suite's own run loads (on `workers`
    xdist workers when > 0)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    env["KILLED_SESSION_REPORT"] = str(report)
    argv = [PYTEST, "-q", "-p", "no:cacheprovider", str(HERE / "killed_session.py")]
    argv += ["-n", str(workers)] if workers else []
    with log.open("wb") as out:
        return subprocess.Popen(argv, cwd=HERE.parent, env=env, stdout=out, stderr=subprocess.STDOUT)


def _held(session: subprocess.Popen[bytes], report: Path, log: Path) -> dict[str, list]:
    """What the session's servers are, once they all serve."""
    deadline = time.monotonic() + 300
    while not report.exists() or not report.read_text():
        if session.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the session never held its servers:\n{log.read_text()[-3000:]}", pytrace=False)
        time.sleep(0.2)
    held = json.loads(report.read_text())
    assert all(_alive(pid) for pid in held["pids"]) and all(_listening(p) for p in held["ports"])
    return held


def _gone(check, within: float = 60.0) -> bool:
    """Whether `check()` comes true (a server's shutdown takes a moment after its signal)."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie nobody reaped, as an orphan's can be here, has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True
