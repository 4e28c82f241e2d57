"""SIGTERM stops a service's runs at once, not once uvicorn has drained its connections: runs take no
new turn after the signal, and a long tool is cut `--grace` seconds after it (found by the chaos
tests: a process shut down with SIGTERM went on running new tool calls for as long as a request was
in flight, and gave its runs a second grace after that)."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import pytest
from test_runner_agents import counted, counter_state
from test_service_support import TOKEN, Server, run_status, wait_for

pytestmark = pytest.mark.slow
CATALOG = "test_runner_agents:catalog"


def _request_in_flight(port: int) -> socket.socket:
    """A client that sent a POST's headers and the start of its body, and is still sending it."""
    sock = socket.create_connection(("127.0.0.1", port))
    head = (
        f"POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
    )
    sock.sendall(head.encode())
    return sock


def test_sigterm_stops_runs_at_their_next_turn_while_a_request_is_in_flight(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    server = Server(
        str(tmp_path / "runs.db"), tmp_path, "--grace", "4", "--body-timeout", "30", catalog=CATALOG
    )
    try:
        with server.client() as api:
            started = api.post(
                "/runs", json={"agent": "counter", "task": "t", "state": counter_state(folder, "slow")}
            )
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            wait_for(lambda: len(counted(folder)) >= 2, what="two turns")
            slow_client = _request_in_flight(server.port)
            time.sleep(0.3)  # the request is in, waiting for the rest of its body
            before = len(counted(folder))
            signalled = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            server.proc.wait(timeout=30)
            took = time.monotonic() - signalled
            slow_client.close()
    finally:
        server.kill()
    after = counted(folder)
    assert len(after) <= before + 1, f"{len(after) - before} counts after SIGTERM (had {before}): {after}"
    assert took < 4 + 3, f"the process took {took:.1f} s to stop, past its --grace of 4 s"
    with Server(str(tmp_path / "runs.db"), tmp_path, catalog=CATALOG) as again, again.client() as api:
        done = wait_for(lambda: (r := run_status(api, run_id))["status"] == "finished" and r, what="the run")
    assert done["stop_reason"] == "success"
    assert counted(folder) == list(range(1, 9))  # each count ran once, over the two processes
