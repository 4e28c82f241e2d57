"""A start whose run id was a pruned run's (its review label kept under that id) is refused with the
store's reason: the service said "taken by a different run (its agent, task ... differ)", which sent the
client looking for a run that does not exist."""

from __future__ import annotations

import time
from pathlib import Path

from test_service_defences import AUTH, Build, build  # noqa: F401 - the fixture

from agent.durable.store import open_store

START = {"agent": "csv-cleaner", "task": "Clean it", "state": {"scenario": "csv/clean"}, "run_id": "job-1"}


def test_a_pruned_runs_id_is_a_409_that_says_it_was_pruned(build: Build, tmp_path: Path) -> None:  # noqa: F811
    api = build()
    assert api.post("/runs", json=START, headers=AUTH).status_code in (200, 202)
    store = open_store(str(tmp_path / "runs.db"))
    try:
        deadline = time.monotonic() + 30
        while (record := store.get("job-1")) is None or record.stop_reason is None:
            assert time.monotonic() < deadline, "the run did not finish"
            time.sleep(0.05)
        store.add_review("job-1", "fine", "", time.time())
        assert store.prune(time.time() + 10) == 1
    finally:
        store.close()
    again = api.post("/runs", json=START, headers=AUTH)
    assert again.status_code == 409, again.text
    error = again.json()["error"]
    assert "pruned" in error and "pick another id" in error and "differ" not in error
