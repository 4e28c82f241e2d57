"""probe35d: a run that ended as `error` on Temporal reads with its `error_type` (`runs --json`,
`/runs/{id}`, `TemporalRuns.record`) as it does over a store, against a real Temporal Server.

Its record always said `error_type: null`: the run's result had `ConfigError` (or `workflow_terminated`,
which README says it reads as everywhere), but the record read from Temporal's visibility left it out.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid

import pytest
from temporal_agents import catalog
from temporal_server import (
    TemporalServer,
    cli_env,
    endstate,
    serving,
    temporal_cli,
    temporal_fixture,
    waiting,
)

from agent.durable.store import RunStatus
from agent.result import StopReason
from agent.temporal import TemporalRuns

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


def terminate(server: TemporalServer, run_id: str) -> None:
    """What an operator types: `temporal workflow terminate -w RUN_ID --reason ...`."""
    argv = [temporal_cli(), "workflow", "terminate", "-w", run_id, "--reason", "stuck"]
    subprocess.run([*argv, "--address", server.address], check=True, capture_output=True, timeout=60)


def listed(server: TemporalServer, runs: TemporalRuns) -> dict[str, dict[str, object]]:
    """`endstate runs --json` over Temporal, by run id."""
    where = ["--temporal", server.address, "--task-queue", runs.task_queue]
    done = subprocess.run(endstate("runs", "--json", *where), capture_output=True, text=True, env=cli_env())
    assert done.returncode == 0, done.stderr
    return {row["run_id"]: row for row in map(json.loads, done.stdout.splitlines())}


def test_a_run_ended_as_error_reads_with_its_error_type(temporal: TemporalServer, tmp_path: object) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog(), catalog_wait=0) as runs:
            unknown = await runs.start("nobody", "Count")  # the workers lack the agent: error at once
            assert (unknown.reason, unknown.error_type) == (StopReason.ERROR, "ConfigError")
            asked = uuid.uuid4().hex
            await runs.start(
                "counter", "Count", run_id=asked, state={"script": "question", "dir": str(tmp_path)}
            )
            await waiting(runs, asked)
            terminate(temporal, asked)
            expected = {unknown.run_id: "ConfigError", asked: "workflow_terminated"}
            rows = listed(temporal, runs)
            for run_id, error_type in expected.items():
                record = await runs.record(run_id)
                assert record is not None and record.status is RunStatus.FINISHED
                assert (record.stop_reason, record.error_type) == (StopReason.ERROR, error_type)
                assert (rows[run_id]["stop_reason"], rows[run_id]["error_type"]) == ("error", error_type)

    asyncio.run(scenario())
