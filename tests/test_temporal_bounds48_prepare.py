"""bounds48: a catalog's `prepare` that hangs on a Temporal worker ends its run `error` (`PrepareHangs`)
at `$ENDSTATE_PREPARE_TIMEOUT`, with no attempt more. Before, the prepare activity waited on it in the
event loop's default executor for the activity's whole 5-minute timeout, three attempts, each leaving an
executor thread held for good. Against a real Temporal Server and an `endstate worker` process."""

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
RESULT_WAIT_S = 120  # the deadline is 1 s: this is only the guard against a loaded machine


def _prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Count its attempts; wait while the file `state["hold"]` exists (two minutes at most)."""
    with (Path(state["dir"]) / f"{run_id}.prepare").open("a") as f:
        f.write("prepare\n")
    until = time.monotonic() + 120
    while Path(state["hold"]).exists() and time.monotonic() < until:
        time.sleep(0.05)
    return state


def catalog() -> Catalog:
    """`counter` with a `prepare` that holds (`test_temporal_bounds48_prepare:catalog`)."""
    c = Catalog()
    c.register("counter", build, prepare=_prepare)
    return c


def test_a_prepare_that_hangs_ends_the_run_error_at_its_deadline(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    queue, run_id = f"b48-{uuid.uuid4().hex[:8]}", f"b48-{uuid.uuid4().hex[:8]}"
    hold = tmp_path / "hold.flag"
    hold.write_text("hold")
    argv = endstate(
        "worker", "--temporal", temporal.address, "--task-queue", queue, "--catalog", f"{__name__}:catalog"
    )
    log = Path(tempfile.mkstemp(prefix="endstate-worker-", suffix=".log")[1])
    with log.open("w") as out:
        env = {**cli_env(), "ENDSTATE_PREPARE_TIMEOUT": "1"}
        worker = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)

    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        state = {"script": "success", "dir": str(tmp_path), "hold": str(hold)}
        await runs.start("counter", "count", run_id=run_id, state=state, wait=False)
        result = await asyncio.wait_for(runs.result(run_id), RESULT_WAIT_S)
        assert (result.reason, result.error_type) == (StopReason.ERROR, "PrepareHangs"), result.note
        assert "prepare did not finish within 1 s" in result.note
        assert (tmp_path / f"{run_id}.prepare").read_text().splitlines() == ["prepare"]  # tried once

    try:
        asyncio.run(scenario())
    finally:
        hold.unlink(missing_ok=True)
        if worker.poll() is None:
            worker.send_signal(signal.SIGKILL)
        worker.wait()
        log.unlink(missing_ok=True)
