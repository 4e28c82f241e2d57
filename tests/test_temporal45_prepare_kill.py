"""temporal45: a worker killed (`kill -9`) while it runs a catalog's `prepare` (or `cleanup`) is noticed
within the worker's heartbeat timeout and the run goes on on another worker, as for a model or tool call.
Before, those activities had no heartbeat: the run was held for their whole timeout, 5 minutes. Against a
real Temporal Server (the `temporal` dev server) and `endstate worker` processes."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporal_agents import build
from temporal_server import TemporalServer, cli_env, endstate, temporal_fixture

from agent.durable.catalog import Catalog
from agent.result import StopReason
from agent.temporal import TemporalRuns

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
HEARTBEAT_S = 2
RESULT_WAIT_S = 150  # well past the heartbeat timeout and retries under load; short of prepare's 5 minutes


def _prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Log that it began; wait while the file `state["hold"]` exists (the first worker is killed here)."""
    with (Path(state["dir"]) / f"{run_id}.prepare").open("a") as f:
        f.write("prepare\n")
    while Path(state["hold"]).exists():
        time.sleep(0.05)
    return state


def catalog() -> Catalog:
    """`counter` with a `prepare` that holds (`test_temporal45_prepare_kill:catalog`)."""
    c = Catalog()
    c.register("counter", build, prepare=_prepare)
    return c


class Worker:
    """`endstate worker` for this module's catalog in a process of its own, ready once it polls."""

    def __init__(self, server: TemporalServer, queue: str) -> None:
        argv = endstate(
            "worker", "--temporal", server.address, "--task-queue", queue,
            "--catalog", f"{__name__}:catalog", "--heartbeat", str(HEARTBEAT_S),
        )  # fmt: skip
        self.log = Path(tempfile.mkstemp(prefix="endstate-worker-", suffix=".log")[1])
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(argv, env=cli_env(), stdout=out, stderr=subprocess.STDOUT)
        until = time.monotonic() + 120
        while "endstate worker: polling task queue" not in self.log.read_text():
            if self.proc.poll() is not None or time.monotonic() > until:
                self.stop()
                raise AssertionError(f"the worker did not start:\n{self.log.read_text()}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.unlink(missing_ok=True)


async def _until(check: Any, what: str) -> None:
    """Until `check()` (60 s at most)."""
    until = time.monotonic() + 60
    while not check():
        assert time.monotonic() < until, what
        await asyncio.sleep(0.05)


def test_a_worker_killed_in_prepare_is_replaced_within_the_heartbeat(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    queue, run_id = f"prep-{uuid.uuid4().hex[:8]}", f"prep-{uuid.uuid4().hex[:8]}"
    hold = tmp_path / "hold.flag"
    hold.write_text("hold")
    prepared = tmp_path / f"{run_id}.prepare"
    workers = [Worker(temporal, queue)]

    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        state = {"script": "success", "dir": str(tmp_path), "hold": str(hold)}
        await runs.start("counter", "count", run_id=run_id, state=state, wait=False)
        await _until(prepared.exists, "the first worker never began the run's prepare")
        workers[0].stop()  # kill -9, mid-prepare
        hold.unlink()
        workers.append(Worker(temporal, queue))
        result = await asyncio.wait_for(runs.result(run_id), RESULT_WAIT_S)
        assert (result.reason, result.turns) == (StopReason.SUCCESS, 3)
        assert prepared.read_text().splitlines() == ["prepare", "prepare"]  # the second worker's attempt

    try:
        asyncio.run(scenario())
    finally:
        for worker in workers:
            worker.stop()
