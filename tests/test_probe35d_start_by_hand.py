"""probe35d: a run started by hand whose input Temporal's converter cannot read ends as `bad_start`, against a
real Temporal Server (the `temporal` dev server).

README: "An input that is not such an object ... ends the run at once as `error` with `error_type`
`bad_start`, the note saying what the input must be." A start with no `--input` at all (easy to forget),
one nested deeper than Python's JSON decoder goes, or one of an encoding no converter reads failed every
workflow task ("EndstateRun.run() missing 1 required positional argument", "Failed decoding arguments"):
the run stayed `running` for ever, with no stop reason.
"""

from __future__ import annotations

import asyncio
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


def deep_input(folder: Path, depth: int) -> list[str]:
    """`--input-file` of a start whose state nests `depth` objects deep (valid JSON)."""
    nested = '{"a": ' * depth + "1" + "}" * depth
    path = folder / "deep.json"
    path.write_text(
        f'{{"agent": "counter", "task": "Count", "state": {{"script": "success", "d": {nested}}}}}'
    )
    return ["--input-file", str(path)]


def start_by_hand(server: TemporalServer, runs: TemporalRuns, *given: str) -> str:
    """`temporal workflow start --type EndstateRun ...` with the input options `given`; the run id."""
    run_id = f"by-hand-{uuid.uuid4().hex[:8]}"
    argv = [temporal_cli(), "workflow", "start", "--address", server.address, "--type", "EndstateRun"]
    argv += ["--task-queue", runs.task_queue, "-w", run_id, *given]
    subprocess.run(argv, check=True, capture_output=True, timeout=60)
    return run_id


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ([], "was started with no input"),
        (["--input", '"x"', "--input-meta", "encoding=foo/bar"], "could not be read"),
        ("deep", "could not be read"),
    ],
    ids=["no-input", "unknown-encoding", "nested-3000-deep"],
)
def test_a_start_by_hand_whose_input_cannot_be_read_ends_as_bad_start(
    temporal: TemporalServer, tmp_path: Path, given: list[str] | str, said: str
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            options = deep_input(tmp_path, 3000) if given == "deep" else given
            run_id = await asyncio.to_thread(start_by_hand, temporal, runs, *options)
            result = await asyncio.wait_for(runs.result(run_id), 60)  # was: running for ever
            assert (result.reason, result.error_type) == (StopReason.ERROR, "bad_start")
            assert said in result.note and '{"agent": NAME, "task": TEXT' in result.note, result.note
            record = await runs.record(run_id)
            assert record is not None and record.stop_reason is StopReason.ERROR

    asyncio.run(scenario())
