"""Retention and label counts: `endstate prune`, the service's upkeep on a schedule, and its /metrics."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pg
import pytest
from prometheus_client import CollectorRegistry
from test_service_support import Server, metric, wait_for

from agent.cli.main import main
from agent.durable.review import PRUNE_EVERY, ReviewError, Upkeep, prune
from agent.durable.store import Lease, NewRun, Outcome, RunStore, open_store
from agent.result import RunResult, StopReason
from telemetry import MetricsHooks

LEASE = Lease("w1", 4e9)


def finished(store: RunStore, run_id: str, at: float, reason: StopReason = StopReason.GAVE_UP) -> None:
    store.create(NewRun(run_id, "invoice-downloader", "task", "invoice_download"), LEASE, at)
    store.record(
        run_id, Outcome.of(RunResult(run_id, "invoice-downloader", "invoice_download", reason)), LEASE, at
    )


def waiting(store: RunStore, run_id: str, at: float) -> None:
    from agent.result import Suspension

    store.create(NewRun(run_id, "invoice-downloader", "task", "invoice_download"), LEASE, at)
    asked = Suspension(question="which one?", suspended_at=at, deadline=at + 1e9)
    result = RunResult(
        run_id, "invoice-downloader", "invoice_download", StopReason.NEED_HELP, suspension=asked
    )
    store.record(run_id, Outcome(Outcome.of(result).status, result, None), LEASE, at)


def test_prune_command_deletes_what_ended_before_the_age_and_says_how_many(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "runs.db")
    store = open_store(url)
    now = time.time()
    finished(store, "two-days", now - 2 * 86400)
    finished(store, "an-hour", now - 3600)
    waiting(store, "asked-long-ago", now - 30 * 86400)
    store.close()
    assert main(["prune", "--older-than", "1d", "--store", url]) == 0
    assert "pruned 1 finished run that ended before" in capsys.readouterr().out  # "1 run", not "1 runs"
    assert main(["prune", "--older-than", "1m", "--store", url]) == 0
    assert "pruned 1 finished run " in capsys.readouterr().out
    assert main(["prune", "--older-than", "1m", "--store", url]) == 0
    assert "pruned 0 finished runs " in capsys.readouterr().out
    store = open_store(url)
    assert [r.run_id for r in store.list_runs(limit=None)] == ["asked-long-ago"]
    store.close()


def test_prune_refuses_an_age_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prune", "--older-than", "30 days", "--store", str(tmp_path / "r.db")]) == 2
    assert "use a number and a unit" in capsys.readouterr().err


def test_upkeep_counts_each_label_once_and_prunes_at_most_hourly(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "runs.db"))
    metrics = MetricsHooks(CollectorRegistry())
    now = 1_900_000_000.0
    finished(store, "old", now - 100)
    finished(store, "kept", now - 1)
    store.add_review("old", "correct_give_up", "", now)
    store.add_review("kept", "correct_give_up", "", now)
    upkeep = Upkeep(store, retention=50, counter=metrics)

    def count(label: str) -> float | None:
        return metrics.registry.get_sample_value(
            "agent_review_labels_total",
            {"agent": "invoice-downloader", "task_type": "invoice_download", "label": label},
        )

    assert upkeep.once(now) == 1  # the first call prunes
    assert count("correct_give_up") == 2
    store.add_review("kept", "limit_too_low", "", now)
    finished(store, "later", now)
    assert upkeep.once(now + 100) == 0  # not due yet: "later" and "kept" stay until the next hour
    assert (count("correct_give_up"), count("limit_too_low")) == (2, 1)  # each label counted once
    assert upkeep.once(now + PRUNE_EVERY) == 2
    assert store.list_runs(limit=None) == []
    with pytest.raises(ReviewError, match="above 0 seconds"):
        prune(store, 0)
    store.close()


@pytest.mark.slow
@pytest.mark.parametrize("backend", pg.BACKENDS)
def test_the_service_prunes_with_retention_and_serves_label_counts(backend: str, tmp_path: Path) -> None:
    url = pg.url_for(backend, tmp_path)
    store = open_store(url)
    now = time.time()
    finished(store, "old", now - 7200)
    finished(store, "recent", now - 1)
    waiting(store, "asks", now - 7200)
    store.add_review("old", "false_success", "the CSV still has duplicates", now)
    try:
        with Server(url, tmp_path, "--retention", "1h") as server:
            wait_for(lambda: store.get("old") is None, what="the service to prune the old run")
            assert store.get("recent") is not None and store.get("asks") is not None
            text = httpx.get(f"{server.url}/metrics", timeout=10).text
            labels = {
                "agent": "invoice-downloader",
                "task_type": "invoice_download",
                "label": "false_success",
            }
            assert metric(text, "agent_review_labels_total", **labels) == 1.0
    finally:
        store.close()
