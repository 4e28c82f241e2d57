"""audit12: the /metrics of the long-running processes over Temporal is shaped as `serve`'s is.

Before: `endstate serve` over a store served /metrics with the process's own metrics
(`process_cpu_seconds_total`, memory, open files) and without the `_created` series, as issue 14 asks,
but `endstate worker --metrics-port` and `endstate serve --temporal` served the `_created` series of
every counter and no process metrics: "the same telemetry" held on one backend only.

Against a real Temporal Server (the `temporal` dev server).
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from ports import PortTaken, held_by, on_free_port, port_clash
from temporal_server import TemporalServer, cli_env, endstate, temporal_fixture
from test_temporal_fleet import CATALOG, _served, _stop

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
WAIT_S = 120.0  # generous: a loaded CI machine


def _page(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as page:
        return str(page.read().decode())


def _shaped_for_a_service(text: str) -> None:
    assert "process_cpu_seconds_total" in text
    assert "process_resident_memory_bytes" in text
    assert "_created" not in text
    assert "agent_runs_started_total" in text  # the run series are there all the same


def _until(check: Callable[[], object], what: str) -> None:
    until = time.monotonic() + WAIT_S
    while time.monotonic() < until:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_workers_metrics_page_has_the_process_metrics_and_no_created_series(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    queue = f"page-{uuid.uuid4().hex[:8]}"

    def start(port: int) -> tuple[subprocess.Popen[bytes], int]:
        argv = ["worker", "--temporal", temporal.address, "--task-queue", queue, "--catalog", CATALOG]
        argv += ["--metrics-port", str(port)]
        with log.open("w") as out:
            proc = subprocess.Popen(endstate(*argv), env=cli_env(), stdout=out, stderr=subprocess.STDOUT)
        _until(lambda: held_by(proc.pid, port) or proc.poll() is not None, "the worker's /metrics")
        if proc.poll() is not None and port_clash(log.read_text()):
            raise PortTaken(log.read_text()[-500:])
        return proc, port

    proc, port = on_free_port(start, "endstate worker --metrics-port")
    try:
        assert proc.poll() is None, log.read_text()
        _shaped_for_a_service(_page(port))
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_serve_over_temporal_has_the_process_metrics_and_no_created_series(temporal: TemporalServer) -> None:
    proc, port = _served(temporal, f"page-{uuid.uuid4().hex[:8]}", "t" * 32)
    try:
        _shaped_for_a_service(_page(port))
    finally:
        _stop(proc)
