"""probe22d: an `EndstateRun` started by Temporal's own tools (`temporal workflow start`, as a Schedule or
a parent workflow would) instead of Endstate's client: a run shows by its agent and task in `runs`,
`pending` and the pending-help gauges like any other, and an input that is no run ends at once as
`error` saying what it must be, never a workflow task failing for ever. Against a real dev server."""

from __future__ import annotations

import asyncio
import subprocess
import uuid

import pytest
from temporal_server import TemporalServer, temporal_cli, temporal_fixture
from test_probe22d_operator import worker

from agent.durable.store import RunStatus
from agent.temporal import TemporalRuns
from agent.temporal.pending import TemporalPending

pytestmark = pytest.mark.slow


temporal = temporal_fixture()


async def start_by_hand(server: TemporalServer, runs: TemporalRuns, run_id: str, given: str) -> None:
    """What an operator types (a Schedule or a parent workflow sends the same): no search attributes,
    no memo, only the input."""
    argv = ["workflow", "start", "--type", "EndstateRun", "--task-queue", runs.task_queue, "-w", run_id]
    proc = await asyncio.create_subprocess_exec(
        temporal_cli(), *argv, "--input", given, "--address", server.address, stdout=subprocess.DEVNULL
    )
    assert await proc.wait() == 0


@pytest.mark.parametrize(
    "given",
    [
        '{"agent": "payer", "task": "Pay the invoice"}',
        '{"agent": "payer", "task": "Pay the invoice", "task_type": "", "state": {}}',  # as a client sends it
    ],
)
def test_a_run_started_by_temporals_own_tools_shows_by_its_agent_and_task_and_goes_on(
    temporal: TemporalServer, given: str
) -> None:
    async def scenario() -> None:
        async with worker(temporal) as runs:
            run_id = f"by-hand-{uuid.uuid4().hex[:8]}"
            # was: the prepare activity failed on the state it lacked (KeyError), and with it the run
            await start_by_hand(temporal, runs, run_id, given)
            record = None
            for _ in range(300):
                record = await runs.record(run_id)
                if record is not None and record.status is not RunStatus.RUNNING:
                    break
                await asyncio.sleep(0.1)
            assert record is not None and record.status is RunStatus.WAITING, record
            # was: agent '' and task '': the row, `pending` and the gauges' `agent` label blank
            assert (record.agent, record.task, record.task_type) == ("payer", "Pay the invoice", "default")
            assert [r.agent for r in await runs.pending() if r.run_id == run_id] == ["payer"]
            gauges = TemporalPending(temporal.address, task_queue=runs.task_queue)
            try:
                rows = await asyncio.to_thread(gauges)
            finally:
                gauges.close()
            assert [(agent, task_type) for agent, task_type, _ in rows] == [("payer", "default")]
            done = await runs.approve(run_id)
            assert (done.reason, done.output) == ("success", "paid")

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ('"Pay the invoice"', "must be a JSON object"),
        ('{"agent": 5, "task": "Pay"}', "agent is not"),
        ('{"agent": "payer", "task": "Pay", "state": [1]}', "state is not"),
        ('{"agent": "payer", "task": "Pay", "task_type": "' + "t" * 3000 + '"}', "task_type is not"),
        # 800 bytes of UTF-8 but 2,402 as Temporal counts a keyword (its JSON: `\u00e9`): was a run for ever
        ('{"agent": "payer", "task": "Pay", "task_type": "' + "\u00e9" * 400 + '"}', "task_type is not"),
        ('{"agent": "' + "\u00e9" * 400 + '", "task": "Pay"}', "agent is not"),
    ],
)
def test_a_start_by_hand_that_is_no_run_ends_at_once_as_error_saying_what_it_must_be(
    temporal: TemporalServer, given: str, said: str
) -> None:
    async def scenario() -> None:
        async with worker(temporal) as runs:
            run_id = f"no-run-{uuid.uuid4().hex[:8]}"
            await start_by_hand(temporal, runs, run_id, given)
            # was: every workflow task failed (a run `running` for ever), or a worker's KeyError
            result = await asyncio.wait_for(runs.result(run_id), 30)
            assert (result.reason, result.error_type) == ("error", "bad_start")
            assert said in result.note and '"agent": NAME' in result.note
            record = await runs.record(run_id)
            assert record is not None and (record.status, record.stop_reason) == (RunStatus.FINISHED, "error")

    asyncio.run(scenario())
