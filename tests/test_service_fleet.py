"""Two `endstate serve` replicas on one store, as a fleet runs them: SQLite and PostgreSQL.

Each replica is a real process with its own runner, sweeper and leases. A run is
taken by one of them only: answered once when both get the answer at once,
recovered once when its worker died, and taken over by the survivor when a
replica is killed mid-run, with no recorded call run again.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import pytest
from test_runner_agents import a_run_whose_worker_died, counted, counter_state, lease_ran_out
from test_service_support import Server, run_status, wait_for, wait_status

from agent.durable.store import open_store

pytestmark = pytest.mark.slow
CATALOG = "test_runner_agents:catalog"


def _at_once(clients: list[httpx.Client], path: str, body: dict[str, object]) -> list[httpx.Response]:
    """The same POST to each replica, released together."""
    gate = threading.Barrier(len(clients))
    answers: list[httpx.Response | None] = [None] * len(clients)

    def post(i: int) -> None:
        gate.wait()
        answers[i] = clients[i].post(path, json=body)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert all(a is not None for a in answers), "a request did not come back"
    return [a for a in answers if a is not None]


def test_one_answer_sent_to_two_replicas_at_once_resumes_the_run_once(store_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    with (
        Server(store_url, tmp_path, catalog=CATALOG) as one,
        Server(store_url, tmp_path, catalog=CATALOG) as two,
        one.client() as a,
        two.client() as b,
    ):
        body = {"agent": "counter", "task": "ask", "state": counter_state(folder, "ask")}
        started = a.post("/runs", json=body)
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        waiting = wait_status(b, run_id, "waiting")  # the other replica reads the same run
        answers = _at_once([a, b], f"/runs/{run_id}/answer", {"answer": "2", "segments": waiting["segments"]})
        assert sorted(r.status_code for r in answers) == [202, 409], [r.text for r in answers]
        done = wait_status(a, run_id, "finished")
        assert wait_status(b, run_id, "finished") == done
    assert (done["stop_reason"], done["segments"]) == ("success", 2)
    assert counted(folder) == [1, 2]  # the second half ran once


def test_a_run_whose_worker_died_is_recovered_by_one_of_two_replicas(store_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    job = a_run_whose_worker_died(store_url, folder)  # and then its worker died
    with (
        Server(store_url, tmp_path, catalog=CATALOG) as one,
        Server(store_url, tmp_path, catalog=CATALOG) as two,
        one.client() as api,
    ):
        held = run_status(api, job.run_id)  # the recoveries at start (before ready) left it alone
        assert (held["status"], held["segments"]) == ("running", 1)
        lease_ran_out(store_url, job)
        done = wait_for(
            lambda: (rec := run_status(api, job.run_id))["status"] == "finished" and rec,
            timeout=60,
            what="a replica to recover the run once its lease ran out",
        )
        logs = [one.log.read_text(), two.log.read_text()]
    assert done["stop_reason"] == "success" and counted(folder) == [1, 2]  # each count ran once
    assert all("Traceback" not in log for log in logs), logs


def test_a_replica_killed_mid_tool_leaves_its_run_to_the_other_with_no_recorded_call_run_again(
    store_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    state = counter_state(folder, "hang")
    (folder / "hang.flag").write_text("block")  # the third turn's hang() blocks until this is removed
    with Server(store_url, tmp_path, "--lease", "2", catalog=CATALOG) as survivor, survivor.client() as api:
        doomed = Server(store_url, tmp_path, "--lease", "2", catalog=CATALOG)
        try:
            with doomed.client() as first:
                started = first.post("/runs", json={"agent": "counter", "task": "count", "state": state})
                assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            wait_for(lambda: counted(folder) == [1, 2, 3], what="three counts, then hang()")
            wait_for(lambda: _recorded_results(store_url, run_id) == 1, what="count(3)'s result recorded")
        finally:
            doomed.kill()  # SIGKILL: no handler runs, the lease is not given back
        (folder / "hang.flag").unlink()
        done = wait_for(
            lambda: (rec := run_status(api, run_id))["status"] == "finished" and rec,
            timeout=30,
            what="the surviving replica to take the run over",
        )
    assert (done["stop_reason"], done["turns"]) == ("success", 5)
    assert counted(folder) == [1, 2, 3, 4, 5]  # count(3) is not run again; hang() and count(4) are


def _recorded_results(store_url: str, run_id: str) -> int:
    """How many tool results the run's last checkpoint holds after its last model reply."""
    store = open_store(store_url)
    try:
        snap = store.snapshot(run_id)
    finally:
        store.close()
    journal = json.loads(snap.to_json()).get("journal", []) if snap else []
    replies = [i for i, e in enumerate(journal) if e["type"] == "reply"]
    return sum(e["type"] == "result" for e in journal[replies[-1] + 1 :]) if replies else 0
