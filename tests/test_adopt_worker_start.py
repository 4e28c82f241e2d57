"""`endstate worker --metrics-port P` without `--first-scrape-wait` (a team's first worker, as the README
starts one): its log said "warning: /metrics was not read within 0 s of the start" at every start, a
warning about a wait nobody asked for. Against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from temporal_server import TemporalServer, temporal_fixture
from test_telemetry_temporal import metrics_worker

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


def test_a_worker_asked_to_wait_for_no_scrape_polls_without_a_warning(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    proc, _ = metrics_worker(temporal, "adopt-no-wait", log)
    try:
        for _ in range(600):
            if "polling task queue" in log.read_text() or proc.poll() is not None:
                break
            time.sleep(0.05)
        said = log.read_text()
        assert "polling task queue" in said, said
        warned = [line for line in said.splitlines() if "warning" in line]
        assert [line for line in warned if "registered the search attributes" not in line] == [], said
    finally:
        proc.terminate()
        proc.wait(timeout=30)
