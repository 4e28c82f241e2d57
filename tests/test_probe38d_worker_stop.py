"""probe38d: `endstate worker` stopped by SIGTERM or SIGINT (a subprocess worker, a real Temporal Server).

On a signal the worker stops polling and says so in one line; a tool call in hand gets up to `--grace` seconds
to end (its result kept: it is not run again), and the worker exits 0. Past the grace the worker exits within
`--grace` + 5 s whatever the call does, with exit 2 and a line saying the call was cut; a second signal exits
at once, 2 as well. Before, a call that ignored its cancel held the worker's exit for ever, and a second
signal did nothing.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporal_agents import catalog
from temporal_server import TemporalServer, cli_env, completed_activities, endstate, serving, temporal_fixture
from test_probe36a_namespace_gone import polling

from agent.result import StopReason
from agent.temporal import TemporalRuns
from agent.temporal import _wire as w

pytestmark = pytest.mark.slow

temporal = temporal_fixture()

GRACE = 4.0
SLACK = 5.0  # the worker's own, past --grace (`cli.temporal.STOP_SLACK_S`)
ROOM = 10.0  # a loaded machine's start-up and scheduling, on top


class Worker:
    """An `endstate worker` subprocess on a queue of its own, its output in a file."""

    def __init__(self, server: TemporalServer, folder: Path, env: dict[str, str] | None = None) -> None:
        self.queue = f"stop-{uuid.uuid4().hex[:8]}"
        self.log = folder / "worker.log"
        argv = endstate(
            "worker", "--temporal", server.address, "--task-queue", self.queue,
            "--catalog", "temporal_agents:catalog", "--grace", str(GRACE), "--heartbeat", "2",
        )  # fmt: skip
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                argv, env=env or cli_env(), stdout=out, stderr=subprocess.STDOUT, text=True
            )
        polling(self.process, self.log)

    def signal(self, sig: signal.Signals) -> float:
        self.process.send_signal(sig)
        return time.monotonic()

    def exited(self, within: float) -> tuple[int, float]:
        """The exit code, and when it came (an AssertionError when it did not come `within` seconds)."""
        try:
            code = self.process.wait(timeout=within)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the worker did not exit:\n{self.log.read_text()}") from None
        return code, time.monotonic()

    async def stopping(self) -> None:
        """Until the worker says it stops (it has the signal)."""
        for _ in range(600):
            if any("endstate worker: stopping on" in line for line in self.said()):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"the worker never said it stops:\n{self.log.read_text()}")

    def said(self) -> list[str]:
        return self.log.read_text().splitlines()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


def held_run(folder: Path) -> tuple[dict[str, Any], Path]:
    """A run's state whose first count waits while its flag exists, and the flag."""
    flag = folder / "hold.flag"
    flag.write_text("hold")
    return {"script": "success", "dir": str(folder), "hold": str(flag), "hold_at": 1}, flag


def calls(folder: Path, run_id: str) -> list[str]:
    path = folder / f"{run_id}.log"
    return path.read_text().splitlines() if path.exists() else []


async def in_flight(folder: Path, run_id: str) -> None:
    """Until the run's first count has begun on the worker."""
    for _ in range(600):
        if "start 1" in calls(folder, run_id):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the run's first count never began")


async def after_stop(server: TemporalServer, runs: TemporalRuns, run_id: str, queue: str) -> StopReason:
    """The run's stop reason once a worker in this process takes it on."""
    async with serving(server, catalog(), queue=queue):
        result = await asyncio.wait_for(runs.result(run_id), 90)
    return result.reason


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_polling_and_the_call_in_hand_ends_within_the_grace_then_exit_0(
    temporal: TemporalServer, tmp_path: Path, sig: signal.Signals
) -> None:
    worker = Worker(temporal, tmp_path)

    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=worker.queue)
        state, flag = held_run(tmp_path)
        run_id = str(await runs.start("counter", "Count", state=state, wait=False))
        await in_flight(tmp_path, run_id)
        worker.signal(sig)
        await worker.stopping()
        assert worker.process.poll() is None, worker.said()  # it waits for the call in hand
        flag.unlink()  # the call ends
        code, _ = await asyncio.to_thread(worker.exited, GRACE + ROOM)
        assert code == 0, worker.said()
        assert await completed_activities(runs.client, run_id, w.TOOL_CHUNKED) == 1  # kept (a ctx tool)
        assert await after_stop(temporal, runs, run_id, worker.queue) is StopReason.SUCCESS
        assert calls(tmp_path, run_id).count("start 1") == 1, calls(tmp_path, run_id)  # never run again

    try:
        asyncio.run(scenario())
    finally:
        worker.kill()
    stopping = [line for line in worker.said() if "stopping" in line]
    assert len(stopping) == 1 and sig.name in stopping[0] and f"--grace {GRACE:g}" in stopping[0], (
        worker.said()
    )
    assert "Traceback" not in worker.log.read_text(), worker.said()


def test_a_call_in_hand_past_the_grace_is_cut_and_the_worker_exits_2_within_grace_and_5_s(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    worker = Worker(temporal, tmp_path)

    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=worker.queue)
        state, flag = held_run(tmp_path)
        run_id = str(await runs.start("counter", "Count", state=state, wait=False))
        await in_flight(tmp_path, run_id)
        sent = worker.signal(signal.SIGTERM)
        code, at = await asyncio.to_thread(
            worker.exited, GRACE + SLACK + ROOM
        )  # the call never ends by itself
        assert code == 2 and GRACE <= at - sent <= GRACE + SLACK + 1.0, (code, at - sent, worker.said())
        flag.unlink()
        assert await after_stop(temporal, runs, run_id, worker.queue) is StopReason.SUCCESS  # run again there

    try:
        asyncio.run(scenario())
    finally:
        worker.kill()
    last = worker.said()[-1]
    assert last.startswith("endstate: ") and f"--grace {GRACE:g}" in last and "cut" in last, worker.said()
    assert "Traceback" not in worker.log.read_text(), worker.said()


def test_a_second_signal_exits_at_once_with_2_saying_so(temporal: TemporalServer, tmp_path: Path) -> None:
    worker = Worker(temporal, tmp_path)

    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=worker.queue)
        state, flag = held_run(tmp_path)
        run_id = str(await runs.start("counter", "Count", state=state, wait=False))
        await in_flight(tmp_path, run_id)
        worker.signal(signal.SIGTERM)
        await worker.stopping()
        sent = worker.signal(signal.SIGINT)
        code, at = await asyncio.to_thread(worker.exited, ROOM)
        assert code == 2 and at - sent < GRACE, (code, at - sent, worker.said())
        flag.unlink()

    try:
        asyncio.run(scenario())
    finally:
        worker.kill()
    last = worker.said()[-1]
    assert last.startswith("endstate: ") and "second signal (SIGINT)" in last, worker.said()
