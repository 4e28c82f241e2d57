"""A restart that recovers runs, scraped by a real Prometheus: `increase()` counts what it recovered.

A process that resumes or recovers runs before Prometheus first reads it shows
those counters already at N; on a new instance label (a new pod) that is a new
series to Prometheus, and `increase()` counts nothing of its first sample. The
service creates each series it may write at zero and, told to, waits for the
first scrape before it recovers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prom_stack import Prometheus, prometheus, prometheus_config, wait_until
from test_runner_agents import counter_state
from test_service_support import Server, wait_status

from telemetry import names as n

pytestmark = pytest.mark.slow
CATALOG = "test_runner_agents:catalog"
RUNS = 3
RESUMED = f"{n.METRIC_RUNS_RESUMED}_total"


def test_runs_a_new_instance_recovers_at_start_are_counted_by_increase(tmp_path: Path) -> None:
    """Runs in flight when the service stops end `cancelled`; its replacement (another port: a new
    instance, as a new pod) recovers them at start. Prometheus reads the replacement's counters at
    zero first, so `increase()` over the restart counts every resume."""
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with Server(store, tmp_path, catalog=CATALOG) as first:
        config = lambda *servers: prometheus_config([f"127.0.0.1:{s.port}" for s in servers])  # noqa: E731
        with prometheus(config(first), tmp_path / "prom") as prom:
            run_ids = _cancelled_by_a_stop(first, tmp_path / "work")
            with Server(store, tmp_path, "--first-scrape-wait", "120", catalog=CATALOG) as second:
                prom.reload(config(first, second))
                with second.client() as api:
                    done = [wait_status(api, run_id, "finished") for run_id in run_ids]
                    page = api.get("/metrics").text
                assert [d["stop_reason"] for d in done] == ["success"] * RUNS
                assert _resumed(page) == RUNS  # the replacement resumed them all
                wait_until(lambda: _read_at(prom, second.port) == RUNS, 30, "a scrape of the resumes")
                # `increase()` extrapolates to the window's end by up to about one scrape interval: over
                # n intervals read, up to 1.1/n too many. Read enough of them for that to stay in bounds
                # (3 read under load once counted 4.06 of 3).
                wait_until(lambda: _samples_at(prom, second.port) >= SAMPLES, 120, f"{SAMPLES} scrapes")
                counted = _increase(prom)
    assert counted == pytest.approx(RUNS, rel=0.25), f"increase() counted {counted} of {RUNS} resumes"


def _cancelled_by_a_stop(server: Server, folder: Path) -> list[str]:
    """`RUNS` slow runs started, then the service stopped while they run: each ends `cancelled`."""
    state = counter_state(folder, "slow")
    (folder / "slow.flag").write_text("hold")  # no run ends before the stop has begun
    with server.client() as api:
        body = {"agent": "counter", "task": "count", "state": state}
        run_ids = [api.post("/runs", json=body).json()["run_id"] for _ in range(RUNS)]
        for run_id in run_ids:
            wait_status(api, run_id, "running")
    assert server.stop_then((folder / "slow.flag").unlink) == 0
    return run_ids


def _resumed(page: str) -> float:
    """The resumes of cancelled runs on a /metrics page, over every agent and task type."""
    rows = [line for line in page.splitlines() if line.startswith(f"{RESUMED}{{")]
    return sum(float(line.rsplit(" ", 1)[1]) for line in rows if 'stop_reason="cancelled"' in line)


def _read_at(prom: Prometheus, port: int) -> float | None:
    """The replacement's resumes of cancelled runs as Prometheus last read them."""
    found = prom.query(f'sum({RESUMED}{{stop_reason="cancelled",instance="127.0.0.1:{port}"}})')
    return float(found[0]["value"][1]) if found else None


SAMPLES = 12  # scrapes of the replacement read before `increase()` is asked: 1.1/11 = 10% at most


def _samples_at(prom: Prometheus, port: int) -> float:
    """How many scrapes of the replacement's resumes Prometheus holds in the 5 minutes `_increase` reads."""
    found = prom.query(
        f'max(count_over_time({RESUMED}{{stop_reason="cancelled",instance="127.0.0.1:{port}"}}[5m]))'
    )
    return float(found[0]["value"][1]) if found else 0.0


def _increase(prom: Prometheus) -> float:
    """`increase()` of the resumes of cancelled runs over the restart, summed over the instances."""
    found = prom.query(f'sum(increase({RESUMED}{{stop_reason="cancelled"}}[5m]))')
    return float(found[0]["value"][1]) if found else 0.0
