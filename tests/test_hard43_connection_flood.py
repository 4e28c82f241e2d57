"""A flood of connections (idle ones, each held until its header deadline) never takes every file
descriptor of the service: past its cap (the open-file limit less those kept for runs) a connection
is answered 503 at once, asyncio never fails an accept for want of descriptors, and a start still
works once the flood is gone."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import test_service_support as support
from test_runner_agents import env_with_tests
from test_service_support import Server, wait_status

OPEN_FILES = 256  # the service's `ulimit -n` here (systemd's default soft limit is 1024)


def _spawn_with_few_files(
    *args: str, store: str, env: dict[str, str] | None = None, log: Path | None = None
) -> Any:
    """`endstate ARGS --store STORE` as `spawn` starts it, under `ulimit -n OPEN_FILES`."""
    argv = ["sh", "-c", f'ulimit -n {OPEN_FILES} && exec "$@"', "sh", sys.executable, "-m", "agent.cli"]
    argv += [*args, "--store", store]
    assert log is not None
    with log.open("w") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env or env_with_tests())


def test_the_cap_and_backlog_keep_a_share_of_the_open_files_for_runs() -> None:
    from agent.service.guard import accept_backlog, connection_cap

    assert connection_cap(1024) == 768 and accept_backlog(1024) == 128
    assert connection_cap(256) == 192 and accept_backlog(256) == 32
    assert accept_backlog(1 << 20) == 2048


def test_a_flood_of_idle_connections_is_refused_past_the_cap_and_leaves_files_for_the_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(support, "spawn", _spawn_with_few_files)
    flood: list[socket.socket] = []
    with Server(str(tmp_path / "runs.db"), tmp_path, "--header-timeout", "30") as server:
        try:
            refused = b""
            for _ in range(OPEN_FILES + 20):  # more than the process may open, one after another
                conn = socket.create_connection(("127.0.0.1", server.port), timeout=10)
                flood.append(conn)
                conn.settimeout(0.05)
                try:
                    refused = conn.recv(4096)
                except TimeoutError:
                    continue  # held, waiting for its headers
                break
            assert refused.startswith(b"HTTP/1.1 503"), "no connection was refused past the cap"
            assert b"retry-after: 5" in refused and b"ulimit -n" in refused
        finally:
            for conn in flood:
                conn.close()
        with server.client() as api:
            started = api.post("/runs", json={"agent": "invoice-downloader", "task": "Get the invoice",
                                              "state": {"scenario": "invoice/which-one"}})  # fmt: skip
            assert started.status_code == 202, started.text
            assert wait_status(api, started.json()["run_id"], "waiting")["stop_reason"] == "need_help"
        said = server.log.read_text()
    assert "Too many open files" not in said and "out of system resource" not in said
    assert said.count("refused connections past 192 open at once") == 1
