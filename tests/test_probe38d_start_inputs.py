"""probe38d: a run started by hand with several inputs, one of them unreadable, ends as `bad_start` against a
real Temporal Server (the `temporal` dev server).

With two inputs or more the SDK drops `run`'s type and reads every input with the converter: one it could
not read (an unknown encoding) failed every workflow task ("Failed decoding arguments"), before the worker
could end the run as `bad_start`; the run stayed `running` for ever. The worker now reads each input alone.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporal_agents import catalog
from temporal_server import TemporalServer, serving, temporal_fixture
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.converter import DefaultPayloadConverter
from test_probe35d_start_by_hand import start_by_hand

from agent.result import StopReason
from agent.temporal import TemporalRuns
from agent.temporal.worker import each_input_alone

pytestmark = pytest.mark.slow

temporal = temporal_fixture()

START = '{"agent": "counter", "task": "Count", "state": {"script": "success"}}'
UNREADABLE = Payload(metadata={"encoding": b"foo/bar"}, data=b'"x"')


async def ended_as_bad_start(runs: TemporalRuns, run_id: str, count: int) -> None:
    result = await asyncio.wait_for(runs.result(run_id), 60)  # was: running for ever
    assert (result.reason, result.error_type) == (StopReason.ERROR, "bad_start")
    assert f"was started with {count} inputs" in result.note, result.note
    assert '{"agent": NAME, "task": TEXT' in result.note, result.note


def test_a_start_by_hand_of_inputs_the_converter_cannot_read_ends_as_bad_start(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            given = ["--input", START, "--input", '"x"', "--input-meta", "encoding=foo/bar"]
            run_id = await asyncio.to_thread(start_by_hand, temporal, runs, *given)
            await ended_as_bad_start(runs, run_id, 2)

    asyncio.run(scenario())


@pytest.mark.parametrize("unreadable_at", [0, 1, 2])
def test_one_unreadable_input_among_readable_ones_ends_the_run_as_bad_start(
    temporal: TemporalServer, unreadable_at: int
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            run_id = f"by-hand-{uuid.uuid4().hex[:8]}"
            args: list[object] = [{"agent": "counter", "task": "Count"}, "more", {"state": {}}]
            args[unreadable_at] = RawValue(UNREADABLE)
            await runs.client.start_workflow("EndstateRun", args=args, id=run_id, task_queue=runs.task_queue)
            await ended_as_bad_start(runs, run_id, 3)
            record = await runs.record(run_id)
            assert record is not None and record.stop_reason is StopReason.ERROR

    asyncio.run(scenario())


def test_inputs_read_alone_keep_the_readable_ones_and_the_unreadable_one_unread() -> None:
    converter = each_input_alone(DefaultPayloadConverter)()
    readable = converter.to_payloads([{"a": 1}, "b"])
    read = converter.from_payloads([readable[0], UNREADABLE, readable[1]])
    assert read[0] == {"a": 1} and read[2] == "b"
    assert isinstance(read[1], RawValue) and read[1].payload == UNREADABLE
    with pytest.raises(Exception, match="foo/bar"):  # typed inputs are read as the base converter reads them
        converter.from_payloads([UNREADABLE], [str])
    assert each_input_alone(type(converter)) is type(converter)
