"""probe35d: a run id that names another workflow type on the client's task queue is no Endstate run,
against a real Temporal Server (the `temporal` dev server).

A team's own workflow (here `TeamApproval`, which has an `answer` update of its own) on the queue
Endstate's client uses was taken for a run: `endstate answer ID` delivered Endstate's answer to it,
`runs`-by-id showed it, and `resume` of such a workflow once it had ended raised a traceback.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporal_server import TemporalServer, temporal_fixture
from temporalio import workflow
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from agent.durable.store import UnknownRun
from agent.temporal import TemporalRuns

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


@workflow.defn(name="TeamApproval")
class TeamApproval:
    """Another team's workflow: it takes answers until one says "stop", then returns them."""

    def __init__(self) -> None:
        self.answers: list[str] = []

    @workflow.run
    async def run(self, start: Any) -> list[str]:
        await workflow.wait_condition(lambda: "stop" in self.answers)
        return self.answers

    @workflow.update(name="answer")
    async def answer(self, text: str, *rest: Any) -> dict[str, Any]:
        self.answers.append(text)
        return {"taken": text}

    @workflow.query(name="answers")
    def given(self) -> list[str]:
        return self.answers


async def refused_everywhere(runs: TemporalRuns, run_id: str) -> None:
    """Every call by run id says there is no such run, naming the workflow's type."""
    calls = {
        "answer": lambda: runs.answer(run_id, "yes"),
        "approve": lambda: runs.approve(run_id),
        "deny": lambda: runs.deny(run_id, "no"),
        "resume": lambda: runs.resume(run_id),
        "cancel": lambda: runs.cancel(run_id),
        "ended": lambda: runs.ended(run_id),
        "submit": lambda: runs.submit(run_id, answer="yes", segments=1),
    }
    for name, make in calls.items():
        with pytest.raises(UnknownRun) as refused:
            await make()
        assert f"no run with id {run_id!r}" in str(refused.value), name
        assert "TeamApproval" in str(refused.value) and "not an Endstate run" in str(refused.value), name
    assert await runs.record(run_id) is None


async def ended(handle: WorkflowHandle[Any, Any]) -> None:
    """Until Temporal records the workflow as completed."""
    for _ in range(200):
        if (await handle.describe()).status is WorkflowExecutionStatus.COMPLETED:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the team's workflow never completed")


def test_another_workflow_type_on_the_queue_is_no_run_and_is_never_sent_endstates_calls(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        queue = f"shared-{uuid.uuid4().hex[:8]}"
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        team = Worker(
            runs.client,
            task_queue=queue,
            workflows=[TeamApproval],
            workflow_runner=UnsandboxedWorkflowRunner(),
        )
        async with team:
            handle = await runs.client.start_workflow(
                TeamApproval.run, {"agent": "counter"}, id="team-1", task_queue=queue
            )
            await refused_everywhere(runs, "team-1")
            assert await handle.query(TeamApproval.given) == []  # none of Endstate's calls reached it
            assert (await handle.describe()).status is WorkflowExecutionStatus.RUNNING  # nor cancelled it
            await handle.execute_update(TeamApproval.answer, "stop")  # its own client ends it
            await ended(handle)
            await refused_everywhere(runs, "team-1")  # ended, its result is not read as a run's

    asyncio.run(scenario())
