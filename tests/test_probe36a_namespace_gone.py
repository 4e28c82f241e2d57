"""probe36a: `endstate worker` whose namespace Temporal no longer has, against a real server.

A development server restarted in memory loses the namespaces made on it. The worker on such a namespace
died in a 40-line traceback, exit 1; a first fix (1c52109, reverted) made it exit 2 in one line, but the
worker then sometimes never exited: Temporal's SDK waited for ever, in the worker's shutdown, on an
activity poll that never returned (seen here 2 times in 4). The worker now gives a failed worker's
shutdown --grace plus a few seconds, then exits regardless.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from temporal_server import RestartableServer, cli_env, endstate

pytestmark = pytest.mark.slow

EXIT_WITHIN_S = 90  # liveness, not speed: the worker exits about 15 s after Temporal refuses its polls


class TeamServer(RestartableServer):
    extra_args = ("--namespace", "team-ns")  # made at start, as `temporal operator namespace create` makes it


def test_a_worker_whose_namespace_a_restart_lost_exits_2_saying_so_in_one_line(tmp_path: Path) -> None:
    server = TeamServer()
    log = tmp_path / "worker.log"
    catalog = ("--catalog", "temporal_agents:catalog")
    argv = endstate("worker", "--temporal", server.address, "--namespace", "team-ns", *catalog)
    try:
        with log.open("w") as out:
            worker = subprocess.Popen(argv, env=cli_env(), stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            polling(worker, log)
            server.restart(extra_args=())  # in memory: the namespace is gone
            code = stopped(worker, log)  # was: exit 1 and a traceback; then, at times, no exit at all
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(timeout=30)
    finally:
        server.stop()
    said = log.read_text()
    ours = [line for line in said.splitlines() if line.startswith("endstate: ") and "warning" not in line]
    assert code == 2 and "Traceback" not in said, said
    assert ours[-1].startswith("endstate: the worker stopped") and "'team-ns'" in ours[-1], ours
    assert "Namespace team-ns is not found" in ours[-1] and "temporal operator namespace create" in ours[-1]


def polling(worker: subprocess.Popen[str], log: Path) -> None:
    """Until the worker says it polls."""
    for _ in range(1200):
        if "endstate worker: polling task queue" in log.read_text():
            return
        assert worker.poll() is None, log.read_text()
        time.sleep(0.05)
    raise AssertionError(f"the worker did not start:\n{log.read_text()}")


def stopped(worker: subprocess.Popen[str], log: Path) -> int:
    """The worker's exit code, once it has exited (an AssertionError when it has not, in time)."""
    try:
        return worker.wait(timeout=EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the worker did not exit:\n{log.read_text()}") from None
