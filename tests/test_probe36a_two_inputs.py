"""probe36a: a run started by hand with two inputs or more, against a real Temporal Server.

`temporal workflow start --type EndstateRun --input A --input B` (a second `--input` left in a script): the
SDK gave `run` both and every workflow task failed ("takes from 1 to 2 positional arguments but 3 were
given"), the run `running` for ever with no stop reason (README said so). It now ends as `error`,
`bad_start`, as an input that is not one JSON object does; a run of one input is run as it was.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from pathlib import Path

import pytest
from temporal_agents import catalog
from temporal_server import TemporalServer, serving, temporal_cli, temporal_fixture

from agent.result import StopReason
from agent.temporal import TemporalRuns

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


def start_by_hand(server: TemporalServer, runs: TemporalRuns, inputs: list[str]) -> str:
    """`temporal workflow start --type EndstateRun --input I ...`, one `--input` each; the run id."""
    run_id = f"by-hand-{uuid.uuid4().hex[:8]}"
    argv = [temporal_cli(), "workflow", "start", "--address", server.address, "--type", "EndstateRun"]
    argv += ["--task-queue", runs.task_queue, "-w", run_id]
    for given in inputs:
        argv += ["--input", given]
    subprocess.run(argv, check=True, capture_output=True, timeout=60)
    return run_id


@pytest.mark.parametrize("more", [['"again"'], ["1", "null"]], ids=["two-inputs", "three-inputs"])
def test_a_start_by_hand_with_more_than_one_input_ends_as_bad_start(
    temporal: TemporalServer, tmp_path: Path, more: list[str]
) -> None:
    start = json.dumps(
        {"agent": "counter", "task": "Count", "state": {"script": "success", "dir": str(tmp_path)}}
    )

    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            run_id = await asyncio.to_thread(start_by_hand, temporal, runs, [start, *more])
            result = await asyncio.wait_for(runs.result(run_id), 60)  # was: running for ever
            assert (result.reason, result.error_type) == (StopReason.ERROR, "bad_start")
            assert f"{1 + len(more)} inputs" in result.note and '{"agent": NAME' in result.note, result.note
            record = await runs.record(run_id)
            assert record is not None and record.stop_reason is StopReason.ERROR

    asyncio.run(scenario())


def test_a_start_by_hand_with_one_input_runs_as_it_did(temporal: TemporalServer, tmp_path: Path) -> None:
    start = json.dumps(
        {"agent": "counter", "task": "Count", "state": {"script": "success", "dir": str(tmp_path)}}
    )

    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            run_id = await asyncio.to_thread(start_by_hand, temporal, runs, [start])
            result = await asyncio.wait_for(runs.result(run_id), 60)
            assert (result.reason, result.verified) == (StopReason.SUCCESS, True)

    asyncio.run(scenario())
