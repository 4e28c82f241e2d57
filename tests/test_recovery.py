"""Crash recovery with real processes: kill -9 mid-run, and SIGTERM; SQLite and PostgreSQL.

The `counter` agent (tests/test_runner_agents.py) appends every `count(n)` call
to a file, so the tests can see that no call whose result was recorded ran twice.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pg
import psycopg
import pytest
from load_bounds import FLUSH_S
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from test_runner_agents import a_run_whose_worker_died, catalog, counted, counter_state, lease_ran_out
from test_service_support import Server, endstate, run_status, spawn, wait_for, wait_status

from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store
from agent.result import StopReason
from telemetry import Telemetry
from telemetry import names as n

pytestmark = pytest.mark.slow
CATALOG = "test_runner_agents:catalog"


@pytest.fixture(params=pg.BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return pg.url_for(request.param, tmp_path)


def _checkpoint(store_url: str) -> dict[str, object]:
    """The one run's last checkpoint, as JSON (empty when there is none yet)."""
    store = open_store(store_url)
    try:
        runs = store.list_runs(limit=None)
        snap = store.snapshot(runs[0].run_id) if runs else None
        return json.loads(snap.to_json()) if snap else {}
    finally:
        store.close()


def _replies_and_results_after_the_last(snapshot: dict[str, Any]) -> tuple[int, int]:
    """How many replies the checkpoint holds, and how many results follow the last one."""
    journal = snapshot.get("journal") or []
    replies = [i for i, e in enumerate(journal) if e["type"] == "reply"]
    after = sum(e["type"] == "result" for e in journal[replies[-1] + 1 :]) if replies else 0
    return len(replies), after


def test_kill_9_mid_turn_then_recover_completes_and_runs_no_call_twice(
    store_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    state = counter_state(folder, "hang")
    (folder / "hang.flag").write_text("block")  # the third turn's hang() blocks until this is removed
    proc = spawn(
        "start", "counter", "count to five", "--state", json.dumps(state), "--catalog", CATALOG,
        "--lease", "60", store=store_url, log=tmp_path / "start.log",
    )  # fmt: skip
    try:
        wait_for(lambda: counted(folder) == [1, 2, 3], what="three counts")
        # the third turn's reply with count(3)'s result: the second turn's checkpoint also ends in one result
        wait_for(
            lambda: _replies_and_results_after_the_last(_checkpoint(store_url)) == (3, 1), what="count(3)"
        )
    finally:
        proc.kill()  # SIGKILL: no handler runs, nothing is flushed
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    (folder / "hang.flag").unlink()

    store = open_store(store_url)
    [stuck] = store.list_runs(limit=None)
    store.close()
    assert stuck.status is RunStatus.RUNNING and stuck.turns == 3  # the dead worker still "holds" it

    done = endstate("recover", "--catalog", CATALOG, store=store_url)
    assert done.returncode == 0, done.stderr
    assert "success" in done.stdout and "1 run recovered or swept" in done.stdout
    assert counted(folder) == [1, 2, 3, 4, 5]  # count(3) is not run again; hang() and count(4) are
    store = open_store(store_url)
    [rec] = store.list_runs(limit=None)
    store.close()
    assert (rec.status, rec.stop_reason, rec.segments, rec.turns) == (RunStatus.FINISHED, "success", 2, 5)


@pytest.mark.parametrize(
    ("point", "after_recovery"),
    [
        ("model", [1, 2, 3, 4]),  # killed in the third model call: turns 1-2 recorded, turn 3 asked again
        ("between", [1, 2, 3, 3, 4]),  # count(3) ran, its result was not recorded yet: it is the one re-run
    ],
)
def test_kill_9_at_each_point_of_a_turn_then_recover_runs_no_recorded_call_again(
    store_url: str, tmp_path: Path, point: str, after_recovery: list[int]
) -> None:
    folder = tmp_path / "run"
    state = counter_state(folder, "plain")
    (folder / f"{point}.flag").write_text("block")
    proc = spawn(
        "start", "kill-points", "count to four", "--state", json.dumps(state), "--catalog", CATALOG,
        "--lease", "60", store=store_url, log=tmp_path / "start.log",
    )  # fmt: skip
    try:
        wait_for(
            lambda: counted(folder) == ([1, 2] if point == "model" else [1, 2, 3]), what="the kill point"
        )
        wait_for(lambda: _checkpoint(store_url).get("usage", {}).get("turns") == 2, what="turn 2 recorded")
    finally:
        proc.kill()  # SIGKILL: no handler runs, nothing is flushed
        proc.wait(timeout=30)
    (folder / f"{point}.flag").unlink()

    done = endstate("recover", "--catalog", CATALOG, store=store_url)
    assert done.returncode == 0, done.stderr
    assert counted(folder) == after_recovery  # count(1) and count(2), recorded, never run again
    store = open_store(store_url)
    [rec] = store.list_runs(limit=None)
    store.close()
    assert (rec.status, rec.stop_reason, rec.turns) == (RunStatus.FINISHED, "success", 4)


def test_kill_9_between_the_runs_end_and_its_record_asks_only_the_last_reply_again(
    store_url: str, tmp_path: Path
) -> None:
    """The last reply and the stop go with the segment's record: killed before it, recovery asks the
    model for that reply again, and no tool runs again; the journal holds each entry once."""
    folder = tmp_path / "run"
    state = counter_state(folder, "plain")
    (folder / "ended.flag").write_text("block")
    proc = spawn(
        "start", "kill-points", "count to four", "--state", json.dumps(state), "--catalog", CATALOG,
        "--lease", "60", store=store_url, log=tmp_path / "start.log",
    )  # fmt: skip
    try:
        wait_for(lambda: (folder / "ended.txt").exists(), what="the run's end")
    finally:
        proc.kill()  # SIGKILL: the segment ended, its record was not written
        proc.wait(timeout=30)
    (folder / "ended.flag").unlink()
    assert (folder / "ended.txt").read_text() == "success"
    store = open_store(store_url)
    [stuck] = store.list_runs(limit=None)
    store.close()
    assert stuck.status is RunStatus.RUNNING

    done = endstate("recover", "--catalog", CATALOG, store=store_url)
    assert done.returncode == 0, done.stderr
    assert counted(folder) == [1, 2, 3, 4]  # every call ran once
    store = open_store(store_url)
    [rec] = store.list_runs(limit=None)
    snap = store.snapshot(rec.run_id)
    store.close()
    assert (rec.status, rec.stop_reason, rec.segments, rec.turns) == (RunStatus.FINISHED, "success", 2, 4)
    assert snap is not None
    kinds = [type(e).__name__ for e in snap.journal]
    assert kinds == ["Task"] + ["Reply", "Result"] * 2 + ["Reply", "Result", "Result", "Reply", "Stopped"]


@contextmanager
def nothing_written(store_url: str) -> Iterator[None]:
    """Hold the store's write lock (SQLite) or the runs' rows (PostgreSQL): no checkpoint lands."""
    if not store_url.startswith("postgres"):
        lite = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None, timeout=30)
        lite.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            lite.execute("ROLLBACK")
            lite.close()
        return
    with psycopg.connect(store_url) as conn, conn.transaction():
        conn.execute("SELECT run_id FROM endstate_runs FOR UPDATE")  # reads go on, updates wait
        yield
        # A statement sent before its client died still runs when the lock goes, even one its backend
        # has not read yet (not yet waiting on the lock): end every other backend of this test's own
        # database (the dead client's), and wait until each has gone, as the server does once it sees
        # the connection gone.
        others = (
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        for row in conn.execute(others).fetchall():
            conn.execute("SELECT pg_terminate_backend(%s, 30000)", (row[0],))


def test_kill_9_after_a_checkpoint_was_handed_over_but_before_it_landed_reruns_only_unsaved_calls(
    store_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    state = counter_state(folder, "plain")
    (folder / "handed.flag").write_text("block")  # after count(2): turn 2 not yet checkpointed
    (folder / "model.flag").write_text("block")  # the third model call waits (off the loop)
    proc = spawn(
        "start", "kill-points", "count to four", "--state", json.dumps(state), "--catalog", CATALOG,
        "--lease", "60", store=store_url, log=tmp_path / "start.log",
    )  # fmt: skip
    try:
        wait_for(lambda: counted(folder) == [1, 2], what="count(2)")
        wait_for(lambda: _checkpoint(store_url).get("usage", {}).get("turns") == 1, what="turn 1 recorded")
        with nothing_written(store_url):
            (folder / "handed.flag").unlink()  # turn 2 ends: its checkpoint is handed to the writer
            wait_for(lambda: (folder / "asked.txt").exists(), what="the third model call")
            proc.kill()  # SIGKILL while turn 2's checkpoint waits to land
            proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert _checkpoint(store_url)["usage"]["turns"] == 1  # turn 2's checkpoint never landed
    (folder / "model.flag").unlink()

    done = endstate("recover", "--catalog", CATALOG, store=store_url)
    assert done.returncode == 0, done.stderr
    assert counted(folder) == [1, 2, 2, 3, 4]  # count(1), durable, never again; count(2) was not durable
    store = open_store(store_url)
    [rec] = store.list_runs(limit=None)
    store.close()
    assert (rec.status, rec.stop_reason, rec.turns) == (RunStatus.FINISHED, "success", 4)


def test_sigterm_checkpoints_in_flight_runs_as_cancelled_and_a_restart_finishes_them(
    store_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    state = counter_state(folder, "slow", hold_at=2)
    (folder / "slow.flag").write_text("hold")  # the second turn ends only once the shutdown has begun
    body = {"agent": "counter", "task": "count slowly", "state": state}
    server = Server(store_url, tmp_path, catalog=CATALOG)
    try:
        with server.client() as api:
            run_id = api.post("/runs", json=body).json()["run_id"]
            wait_for(lambda: len(counted(folder)) >= 2, what="two counts")
        assert server.stop_then((folder / "slow.flag").unlink) == 0
    finally:
        server.kill()
    store = open_store(store_url)
    rec = store.get(run_id)
    store.close()
    assert rec is not None and (rec.status, rec.stop_reason, rec.interrupted) == (
        RunStatus.CANCELLED, "cancelled", True,
    )  # fmt: skip
    assert rec.snapshot_json is not None and 2 <= rec.turns < 9
    before = counted(folder)

    with Server(store_url, tmp_path, catalog=CATALOG) as again, again.client() as api:
        done = wait_status(api, run_id, "finished")
    assert done["stop_reason"] == "success" and done["segments"] == 2
    assert counted(folder) == list(range(1, 9)) and before == list(range(1, len(before) + 1))


def test_the_service_recovers_a_run_whose_worker_died_while_it_was_up(store_url: str, tmp_path: Path) -> None:
    """At start the run's lease is still good (its worker, on another host, may be alive); once
    the lease runs out, the running service takes the run over, not only at its next start."""
    folder = tmp_path / "run"
    job = a_run_whose_worker_died(store_url, folder)  # and then its worker died
    with Server(store_url, tmp_path, catalog=CATALOG) as server, server.client() as api:
        held = run_status(api, job.run_id)  # the recovery at start (before ready) left it alone
        assert (held["status"], held["segments"]) == ("running", 1)
        lease_ran_out(store_url, job)
        done = wait_for(
            lambda: (rec := run_status(api, job.run_id))["status"] == "finished" and rec,
            timeout=60,
            what="the service to recover the run once its lease ran out",
        )
    assert (done["stop_reason"], done["segments"]) == ("success", 2) and counted(folder) == [1, 2]


def _counted_total(registry: CollectorRegistry, metric: str) -> float:
    """A counter's samples summed over every label set (0 when it has none)."""
    return sum(s.value for m in registry.collect() for s in m.samples if s.name == metric + "_total")


@pytest.mark.parametrize(
    ("agent", "script", "flag", "saved"),
    [
        ("kill-points", "plain", "model.flag", 2),  # killed in the third model call: turn 2 checkpointed
        ("counter", "hang-first", "hang.flag", 0),  # killed in its first turn: no checkpoint yet
    ],
)
def test_a_run_recovered_after_its_worker_died_is_not_counted_as_started_again(
    store_url: str, tmp_path: Path, agent: str, script: str, flag: str, saved: int
) -> None:
    """The worker counted the run's start, then died mid-segment; the worker that recovers it
    (from its checkpoint, or from its task when it had none) counts no second start."""
    folder = tmp_path / "run"
    state = counter_state(folder, script)
    (folder / flag).write_text("block")
    proc = spawn(
        "start", agent, "count", "--state", json.dumps(state), "--catalog", CATALOG,
        "--lease", "60", store=store_url, log=tmp_path / "start.log",
    )  # fmt: skip
    try:
        wait_for(lambda: counted(folder) == [1, 2][:saved] and _runs(store_url) == 1, what="the kill point")
        wait_for(lambda: _checkpoint(store_url).get("usage", {}).get("turns", 0) == saved, what="turn saved")
    finally:
        proc.kill()  # SIGKILL mid-segment: the start it counted is the run's only one
        proc.wait(timeout=30)
    (folder / flag).unlink()

    spans = InMemorySpanExporter()
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=spans)
    store = open_store(store_url)
    try:
        [stuck] = store.list_runs(limit=None)
        [done] = asyncio.run(Runner(store, catalog(), hooks=telemetry.hooks).recover())
        assert telemetry.force_flush(FLUSH_S), "the spans were not exported"
    finally:
        store.close()
        telemetry.shutdown()
    assert done.reason is StopReason.SUCCESS
    registry = telemetry.registry
    assert _counted_total(registry, n.METRIC_RUNS_STARTED) == 0  # counted once, by the dead worker
    assert _counted_total(registry, n.METRIC_RUNS_RESUMED) == 0  # nobody resumed it: it went on
    assert _counted_total(registry, n.METRIC_STOPS) == 1  # the segment ended once, here
    [span] = [s for s in spans.get_finished_spans() if s.name == f"invoke_agent {agent}"]
    assert span.attributes is not None and span.start_time is not None
    if saved:  # a later segment, from the checkpoint: it starts now
        assert span.attributes[n.AGENT_SEGMENT] == 2 and n.AGENT_SEGMENT_REPLAYED not in span.attributes
    else:  # the first segment again: it runs from when the run began, as one that started before
        assert span.attributes[n.AGENT_SEGMENT] == 1 and span.attributes[n.AGENT_SEGMENT_REPLAYED] is True
        assert span.start_time / 1e9 == pytest.approx(stuck.started_at, abs=1e-3)


def _runs(store_url: str) -> int:
    store = open_store(store_url)
    try:
        return len(store.list_runs(limit=None))
    finally:
        store.close()
