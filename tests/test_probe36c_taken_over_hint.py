"""`endstate start` (or answer, resume) whose run another worker took over while it ran (its lease ran
out while it stalled) ended its segment `cancelled`, and printed `-> endstate resume RUN_ID`: a
command the store refuses, since the run is running in that worker. Now the line's hint comes from
the store, not from the segment: it names the worker that holds the run, and the command that shows
how the run goes on; a run that moved on since (ended, or waits for a person) is said as it is.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

from test_runner_agents import counter_state
from test_service_support import spawn, wait_for

from agent.cli.runs import result_line
from agent.durable.store import Lease, RunRecord, RunStatus, open_store
from agent.durable.store.urls import shown_url
from agent.result import RunResult, StopReason

CATALOG = "test_runner_agents:catalog"
TAKER = "otherhost:777:taker"


def test_a_cli_run_taken_over_names_the_worker_that_continues_it_not_resume(
    store_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "w"
    state = counter_state(folder, "hang")
    (folder / "hang.flag").touch()
    out = tmp_path / "out.txt"
    start = (
        "start",
        "counter",
        "count",
        "--catalog",
        CATALOG,
        "--run-id",
        "taken",
        "--state",
        json.dumps(state),
    )
    cli = spawn(*start, store=store_url, log=out)
    try:
        wait_for(lambda: (folder / "hanging").exists(), what="the run inside its hang() call")
        store = open_store(store_url)
        try:
            held = store.get("taken")
            assert held is not None and held.owner is not None
            # a worker that found the CLI's lease run out (the CLI stalled past it)
            store.take_over("taken", held.owner, Lease(TAKER, 600.0), time.time(), only_lapsed=False)
            (folder / "hang.flag").unlink()  # the CLI's tool returns; its next checkpoint is refused
            assert cli.wait(60) == 3, out.read_text()  # its segment ended cancelled (red40b)
            record = store.get("taken")
            assert record is not None and (record.status, record.owner) == (RunStatus.RUNNING, TAKER)
        finally:
            store.close()
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    printed = out.read_text()
    assert "run taken: cancelled" in printed, printed
    assert "endstate resume" not in printed, printed  # the store would refuse it: a live worker holds it
    assert f"another worker ({TAKER}) holds the run now and continues it" in printed, printed
    follow = f"`endstate runs --store {shlex.quote(shown_url(store_url))}` shows how it goes on"
    assert follow in printed, printed


def _result(reason: StopReason) -> RunResult:
    return RunResult("r1", "counter", "counting", reason, turns=2, note="no longer held here")


def _record(status: RunStatus, stop: StopReason | None, owner: str | None = None) -> RunRecord:
    question = "Which one?" if status is RunStatus.WAITING else None
    return RunRecord(
        run_id="r1", agent="counter", task="count", task_type="counting", status=status, state={},
        started_at=0.0, updated_at=0.0, owner=owner, stop_reason=stop, turns=5, question=question,
    )  # fmt: skip


def test_a_run_that_moved_on_since_its_segment_ended_is_said_as_the_store_has_it() -> None:
    """The other worker may have ended the run, or suspended it, by the time the line is printed."""
    cancelled = _result(StopReason.CANCELLED)
    ended = result_line(cancelled, "", _record(RunStatus.FINISHED, StopReason.SUCCESS), "me")
    assert "endstate resume" not in ended and "it has ended since: success after 5 turns" in ended, ended
    asks = result_line(cancelled, "", _record(RunStatus.WAITING, StopReason.NEED_HELP), "me")
    assert "it waits for a person now" in asks and 'endstate answer r1 "your answer"' in asks, asks
    # the store holds the run as this segment left it: its own hint, as before
    mine = result_line(cancelled, "", _record(RunStatus.CANCELLED, StopReason.CANCELLED), "me")
    assert mine.endswith("-> endstate resume r1"), mine
    assert result_line(cancelled, "").endswith("-> endstate resume r1")  # no record read: as before
