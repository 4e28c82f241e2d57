"""Helpers for the service, inbox and recovery tests: real `endstate` processes (no tests here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from ports import PortTaken, held_by, on_free_port, port_clash
from test_runner_agents import env_with_tests

TOKEN = "test-token-0123456789abcdef"
TIMEOUT = 60.0


def endstate(*args: str, store: str, env: dict[str, str] | None = None, timeout: float = 120) -> Any:
    """Run `endstate ARGS --store STORE` to completion; the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args, "--store", store],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or env_with_tests(),
    )


def spawn(*args: str, store: str, env: dict[str, str] | None = None, log: Path | None = None) -> Any:
    """Start `endstate ARGS --store STORE` in the background; the Popen."""
    argv = [sys.executable, "-m", "agent.cli", *args, "--store", store]
    if log is None:
        return subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env or env_with_tests()
        )
    with log.open("w") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env or env_with_tests())


def wait_for(check: Callable[[], Any], timeout: float = TIMEOUT, what: str = "condition") -> Any:
    """Poll `check` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


class Server:
    """`endstate serve` on a free loopback port, stopped with SIGTERM (killed if it hangs)."""

    def __init__(self, store: str, tmp: Path, *extra: str, catalog: str | None = None) -> None:
        self.store, self.tmp, self.extra, self.catalog = store, tmp, extra, catalog
        self.proc = on_free_port(self._start_on, "endstate serve")

    def _start_on(self, port: int) -> Any:
        """`endstate serve` on `port`, ready; `PortTaken` when it could not bind it."""
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = self.tmp / f"serve-{port}.log"
        env = {**env_with_tests(), "ENDSTATE_TOKEN": TOKEN, "ENDSTATE_WORLDS": str(self.tmp / "worlds")}
        args = ["serve", "--port", str(port), "--sweep-interval", "0.2", "--grace", "5", *self.extra]
        if self.catalog:
            args += ["--catalog", self.catalog]
        self.proc = spawn(*args, store=self.store, env=env, log=self.log)
        try:
            wait_for(self._ready, what=f"the service to be ready (log: {self.log})")
        except BaseException:
            self.kill()
            raise
        return self.proc

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            said = self.log.read_text()
            if port_clash(said):
                raise PortTaken(said[-500:])
            raise AssertionError(f"endstate serve exited {self.proc.returncode}:\n{said}")
        try:
            ready = httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False
        return ready and held_by(self.proc.pid, self.port)  # not another process that took the port

    def client(self, token: str | None = TOKEN) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send `sig` and wait for the exit; its return code."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
                raise
        return int(self.proc.returncode)

    def stop_then(self, release: Callable[[], None]) -> int:
        """SIGTERM; once the service has begun its shutdown (uvicorn logs that it waits for the
        application's), `release()` (a test lets go of runs it held inside a turn: the shutdown ends
        them at that turn, cancelled, instead of their ending first); the exit's return code."""
        os.kill(self.proc.pid, signal.SIGTERM)
        began = "Waiting for application shutdown"
        wait_for(lambda: began in self.log.read_text() or self.proc.poll() is not None, what=began)
        release()
        try:
            self.proc.wait(timeout=30)  # not signalled again: a second SIGTERM makes uvicorn quit at once
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        return int(self.proc.returncode)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.stop()
        finally:
            self.kill()


def run_status(client: httpx.Client, run_id: str) -> dict[str, Any]:
    response = client.get(f"/runs/{run_id}")
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def wait_status(client: httpx.Client, run_id: str, *statuses: str) -> dict[str, Any]:
    """Poll the run until its status is one of `statuses`; its JSON."""

    def check() -> dict[str, Any] | None:
        data = run_status(client, run_id)
        return data if data["status"] in statuses else None

    found: dict[str, Any] = wait_for(check, what=f"run {run_id} to be {' or '.join(statuses)}")
    return found


def metric(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample in a Prometheus text exposition, or None."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        head, _, value = line.rpartition(" ")
        sample, _, rest = head.partition("{")
        got = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
        if sample == name and got == want:
            return float(value)
    return None
