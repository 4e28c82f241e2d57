"""audit12: the /metrics of the long-running processes over Temporal is shaped as `serve`'s is.

Before: `endstate serve` over a store served /metrics with the process's own metrics
(`process_cpu_seconds_total`, memory, open files) and without the `_created` series, as issue 14 asks,
but `endstate worker --metrics-port` and `endstate serve --temporal` served the `_created` series of
every counter and no process metrics: "the same telemetry" held on one backend only.

Against a real Temporal Server (the `temporal` dev server).
"""

from __future__ import annotations

import urllib.request
import uuid
from pathlib import Path

import pytest
from temporal_server import TemporalServer, temporal_fixture
from test_telemetry_temporal import metrics_worker
from test_temporal_fleet import _served, _stop

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


def _page(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as page:
        return str(page.read().decode())


def _shaped_for_a_service(text: str) -> None:
    assert "process_cpu_seconds_total" in text
    assert "process_resident_memory_bytes" in text
    assert "_created" not in text
    assert "agent_runs_started_total" in text  # the run series are there all the same


def test_a_workers_metrics_page_has_the_process_metrics_and_no_created_series(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    proc, port = metrics_worker(temporal, f"page-{uuid.uuid4().hex[:8]}", log)
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
