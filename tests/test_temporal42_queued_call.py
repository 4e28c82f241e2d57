"""temporal42: a model call that waits for a worker longer than the time its run has left is not cut by
the budget: the time a call waits for a worker is not the run's (README: "A run's time budget counts what
a run in one process counts"). Against a real Temporal Server (the dev server).

Here one worker runs the workflow (and no activity) while no worker runs activities: the run's model call
waits in the task queue past the run's whole budget, then runs in a moment once a worker comes.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporal_server import TemporalServer, temporal_fixture
from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker
from test_probe24a_worker_wait import _replay_failure

from agent import Agent, Budget, tool
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult
from agent.temporal import TemporalRuns, build_worker
from agent.temporal import _wire as w
from agent.temporal._activities import call_state, worker_setup
from agent.temporal.worker import OneInput, workflow_runner
from agent.temporal.workflow import EndstateRun

pytestmark = pytest.mark.slow

BUDGET = 4.0
IN_TOOL = threading.Event()  # `step` runs: the test hands the workflow to a worker with no activities
GO = threading.Event()  # `step` returns once the worker that runs it no longer polls


@tool(timeout=None)
def step(n: int) -> str:
    """One step; the first holds until the test has stopped the worker that runs it."""
    if n == 1:
        IN_TOOL.set()
        GO.wait(timeout=60)
    return f"step {n}"


def stepper(state: dict[str, Any]) -> Agent:
    script = [[call("step", n=1)], [finish("done", "stepped")]]
    return Agent(name="stepper", model=ScriptedModel(script), tools=[step], budget=Budget(max_seconds=BUDGET))


def catalog() -> Catalog:
    found = Catalog()
    found.register("stepper", stepper)
    return found


temporal = temporal_fixture()


@activity.defn(name=w.CALL_STATE)
async def no_call_state(ask: dict[str, Any]) -> dict[str, Any]:
    """As a worker denied the right to describe workflows finds."""
    raise ApplicationError("permission denied: DescribeWorkflowExecution", non_retryable=True)


def test_a_model_call_that_waits_for_a_worker_past_the_budget_is_not_cut(temporal: TemporalServer) -> None:
    # Was: `limit`/`seconds` ("The model call was cut off when the time budget ran out") after 1 turn:
    # the workflow's budget timer fired while the call still waited in the task queue, and cut it.
    result, _ = asyncio.run(_queued_past_the_budget(temporal, call_state))
    assert (result.reason, result.limit) == ("success", None), result.note
    assert result.turns == 2
    assert result.active_seconds < BUDGET, result.active_seconds


def test_when_temporal_does_not_say_whether_the_call_started_it_is_cut_as_before(
    temporal: TemporalServer,
) -> None:
    result, _ = asyncio.run(_queued_past_the_budget(temporal, no_call_state))
    assert (result.reason, result.limit) == ("limit", "seconds"), result.note
    assert result.note == "The model call was cut off when the time budget ran out."


async def _queued_past_the_budget(temporal: TemporalServer, state_of: Any) -> tuple[RunResult, TemporalRuns]:
    """A run whose second model call waits for a worker that runs activities past its whole budget, with
    `state_of` as the workflow worker's `endstate.call-state`; its result, checked to replay."""
    IN_TOOL.clear()
    GO.clear()
    runs = await TemporalRuns.connect(temporal.address, task_queue=f"t42q-{uuid.uuid4().hex[:8]}")
    stop = timedelta(seconds=10)  # as `endstate worker` runs: the calls in hand end on a stop
    first = await build_worker(
        runs.client, catalog(), task_queue=runs.task_queue, graceful_shutdown_timeout=stop
    )
    apart = await TemporalRuns.connect(temporal.address, task_queue=runs.task_queue)  # its own workers
    workflows_only = Worker(
        apart.client,
        task_queue=runs.task_queue,
        workflows=[EndstateRun],
        activities=[state_of, worker_setup],  # the local activities a workflow worker runs
        no_remote_activities=True,
        workflow_runner=workflow_runner(),
        interceptors=[OneInput()],
    )
    async with first:
        run_id = await runs.start("stepper", "Step once", wait=False)
        assert isinstance(run_id, str)
        assert await asyncio.to_thread(IN_TOOL.wait, 60)
        async with workflows_only:
            stopping = asyncio.ensure_future(first.shutdown())  # it stops polling, ends the call in hand
            await asyncio.sleep(1.0)
            GO.set()
            await stopping
            # the model call now waits for a worker that runs activities: none, past the whole budget
            await asyncio.sleep(BUDGET * 2 + 2)
            async with await build_worker(runs.client, catalog(), task_queue=runs.task_queue):
                result = await asyncio.wait_for(runs.result(run_id), 60)
    assert await _longest_activity_wait(runs, run_id) > BUDGET  # the call really waited that long
    assert await _replay_failure(runs, run_id) is None  # what the workflow decided is deterministic
    return result, runs


async def _longest_activity_wait(runs: TemporalRuns, run_id: str) -> float:
    """The longest time from an activity's scheduling to its start, in the run's history."""
    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    scheduled: dict[int, float] = {}
    longest = 0.0
    for event in history.events:
        at = event.event_time.ToDatetime().timestamp()
        if event.HasField("activity_task_scheduled_event_attributes"):
            scheduled[event.event_id] = at
        elif event.HasField("activity_task_started_event_attributes"):
            began = scheduled.get(event.activity_task_started_event_attributes.scheduled_event_id)
            if began is not None:
                longest = max(longest, at - began)
    return longest
