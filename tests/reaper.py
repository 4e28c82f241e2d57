"""Servers the tests start are stopped when the test process dies, however it dies (no tests here).

A fixture's teardown stops its server when pytest ends, or is interrupted (Ctrl-C, and SIGTERM:
conftest.py turns it into the same path). It cannot run when the process is killed outright
(SIGKILL, an xdist worker its controller kills, an out-of-memory kill), and PostgreSQL's
`pg_ctl start` puts the postmaster in a session of its own, out of reach of a signal to the test
run's process group. `Reaper` covers those: a small watchdog process, in a session of its own
(a signal to the group does not stop it), holding the read end of a pipe whose write end only
this process holds. When the test process dies, for any reason, the pipe reaches its end and the
watchdog stops the server: it signals the processes named, runs the commands given (`pg_ctl stop`)
and removes the folders. `Reaper.done()`, once the fixture stopped the server itself, lets it go.
A process is signalled only while its start time is the one it had when named: process ids come
round again (32,768 of them here), and a run of tests starts many processes.

    reaper = Reaper(pids=[proc.pid])
    ...
    stop(proc)
    reaper.done()
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Sequence

# The watchdog: waits for the end of its stdin; "done" there means nothing is left to stop.
_WATCH = r"""
import json, os, shutil, signal, subprocess, sys, time
spec = json.loads(sys.argv[1])
if sys.stdin.read().strip() == "done":
    sys.exit(0)
def started(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
def signal_it(pid, start, sig):
    if started(pid) == start:  # the same process, not a later one given its id
        try:
            os.kill(pid, sig)
        except OSError:
            pass
for pid, start in spec["pids"]:
    signal_it(pid, start, signal.SIGTERM)
for argv in spec["run"]:
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
deadline = time.monotonic() + 10
for pid, start in spec["pids"]:
    while time.monotonic() < deadline and started(pid) == start:
        time.sleep(0.05)
    signal_it(pid, start, signal.SIGKILL)
for path in spec["remove"]:
    shutil.rmtree(path, ignore_errors=True)
"""


class Reaper:
    """Stops what it was told of when this process dies without stopping it (see the module)."""

    def __init__(
        self, pids: Sequence[int] = (), run: Sequence[Sequence[str]] = (), remove: Sequence[str] = ()
    ) -> None:
        named = [[pid, start_time(pid)] for pid in pids]
        spec = {"pids": named, "run": [list(a) for a in run], "remove": list(remove)}
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _WATCH, json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )

    def done(self) -> None:
        """The server was stopped by its fixture: the watchdog exits without touching anything."""
        stdin = self._proc.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.write(b"done")
                stdin.close()
            except OSError:  # the watchdog is gone already
                pass
        with contextlib.suppress(subprocess.TimeoutExpired):  # it ends once it has read "done"
            self._proc.wait(timeout=30)


def start_time(pid: int) -> str | None:
    """When process `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat); None when
    it is gone. The name is left out first: it may hold spaces and parentheses."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
