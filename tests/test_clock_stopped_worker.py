"""clock: a worker process stopped (SIGSTOP: a frozen container, a debugger, a laptop lid) for longer than
its lease, whose run another process recovered meanwhile, does nothing twice once it goes on.

Real processes on SQLite and PostgreSQL: `endstate start` runs the run and is stopped inside its third
model call (turns 1 and 2 checkpointed); its lease runs out by the store's clock (moved on, not waited
for); `endstate recover` in another process takes the run over and finishes it. The stopped worker is
then continued: its model call returns the calls the recovery already ran. Before, it ran the first of
them once more, and only its next checkpoint found the run taken: a lease two workers both acted
under. Now a worker whose lease was last written longer ago than two thirds of it (by the time
elapsed on its host) confirms it before a tool starts: the run is taken, so it runs no tool, records
nothing and exits. Every count runs once and the run ends once, as the recovery recorded it."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from test_recovery import CATALOG, _checkpoint
from test_runner_agents import counted, counter_state, outlive_leases
from test_service_support import endstate, spawn, wait_for

from agent.durable.store import RunStatus, open_store

LEASE = "1.5"  # seconds: the stopped worker's lease (run out by the store's clock, moved on, too)


def test_a_worker_stopped_past_its_lease_and_continued_after_a_recovery_does_nothing_twice(
    store_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    state = counter_state(folder, "plain")
    (folder / "model.flag").write_text("block")  # the third model call waits (off the loop)
    log = tmp_path / "start.log"
    proc = spawn(
        "start", "kill-points", "count to four", "--state", json.dumps(state), "--catalog", CATALOG,
        "--lease", LEASE, store=store_url, log=log,
    )  # fmt: skip
    try:
        wait_for(lambda: (folder / "asked.txt").exists(), what="the third model call")
        wait_for(lambda: _checkpoint(store_url).get("usage", {}).get("turns") == 2, what="turn 2 saved")
        proc.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()
        store = open_store(store_url)
        [held] = store.list_runs(limit=None)
        store.close()
        assert held.owner is not None and outlive_leases(store_url, float(LEASE) + 1, held.owner) == 1
        (folder / "model.flag").unlink()  # (the stopped worker cannot go on yet)

        done = endstate("recover", "--catalog", CATALOG, store=store_url)
        assert done.returncode == 0, done.stderr
        assert counted(folder) == [1, 2, 3, 4]

        # stopped longer than its lease by its own clock too (another process's: none to inject)
        wait_for(lambda: time.monotonic() - stopped > float(LEASE), what="the lease's length")
        proc.send_signal(signal.SIGCONT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.kill()
            proc.wait(timeout=30)
    assert counted(folder) == [1, 2, 3, 4], log.read_text()  # count(3) and count(4) ran once
    store = open_store(store_url)
    try:
        [rec] = store.list_runs(limit=None)
    finally:
        store.close()
    assert (rec.status, rec.stop_reason, rec.turns, rec.owner) == (RunStatus.FINISHED, "success", 4, None)
    assert rec.segments == 2  # begun, then recovered: the continued worker made no segment
