"""A test session that holds real servers until it is killed: tests/test_killed_session.py runs it in
a pytest of its own, then sends it SIGTERM or SIGKILL (no tests of this suite here: its file name
keeps it out of the suite's collection; the test below runs only when this file is named)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pg
from prom_stack import prometheus, prometheus_config
from temporal_server import TemporalServer, temporal_fixture

temporal = temporal_fixture()


def test_leaves_a_sigterm_handler_of_its_own() -> None:
    """As an event loop's `add_signal_handler` does when the loop closes: the session's handler is
    put back after the test (else the SIGTERM below would kill the session with no teardown)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_holds_its_servers_until_killed(temporal: TemporalServer, tmp_path: Path) -> None:
    server = pg.shared_server()
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    with prometheus(prometheus_config(["127.0.0.1:9"]), tmp_path / "prometheus") as prom:
        held = {
            "pids": [postmaster, temporal.proc.pid],
            "ports": [server.port, temporal.port, int(prom.url.rsplit(":", 1)[1])],
            "folders": [str(server.dir)],
        }
        Path(os.environ["KILLED_SESSION_REPORT"]).write_text(json.dumps(held))
        while True:  # until killed
            time.sleep(0.1)
