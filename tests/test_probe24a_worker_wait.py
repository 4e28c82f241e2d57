"""probe24a: a run's time budget on Temporal counts the time its calls ran on a worker, not the time the
run waited for one (every worker down or redeploying, a backlog), as the store's runner counts it. Against
a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture
from temporalio.worker import Replayer
from test_temporal import replay_failure

from agent import Agent, Budget, tool
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, call, finish
from agent.temporal import TemporalRuns, build_worker
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import EndstateRun

pytestmark = pytest.mark.slow

BUDGET = 6.0
IN_TOOL = threading.Event()  # `step` runs: the test stops the worker while it does
GO = threading.Event()  # `step` returns once the worker no longer polls


@tool(timeout=None)
def step(n: int) -> str:
    """One step; the first holds until the test has stopped the worker."""
    if n == 1:
        IN_TOOL.set()
        GO.wait(timeout=60)
    return f"step {n}"


@tool
def work(n: int) -> str:
    """One step that takes its time."""
    time.sleep(1.5)
    return f"worked {n}"


def stepper(state: dict[str, Any]) -> Agent:
    script = [[call("step", n=1)], [call("step", n=2)], [finish("done", "stepped")]]
    return Agent(name="stepper", model=ScriptedModel(script), tools=[step], budget=Budget(max_seconds=BUDGET))


def worker_agent(state: dict[str, Any]) -> Agent:
    script = [[call("work", n=i)] for i in range(1, 10)] + [[finish("done", "worked")]]
    return Agent(name="worker", model=ScriptedModel(script), tools=[work], budget=Budget(max_seconds=3))


def catalog() -> Catalog:
    found = Catalog()
    found.register("stepper", stepper)
    found.register("worker", worker_agent)
    return found


temporal = temporal_fixture()


def test_a_run_whose_worker_is_away_between_two_turns_longer_than_its_budget_goes_on(
    temporal: TemporalServer,
) -> None:
    # Was: `limit`/`seconds` ("The seconds budget ran out with the call of step"): the 8 s in which no
    # worker polled counted as the run's active time, as the workflow's clock ran on.
    async def scenario() -> None:
        IN_TOOL.clear()
        GO.clear()
        runs = await TemporalRuns.connect(temporal.address, task_queue=f"probe24a-{uuid.uuid4().hex[:8]}")
        stop = timedelta(seconds=10)  # as `endstate worker` runs: the calls in hand end on a stop
        first = await build_worker(
            runs.client, catalog(), task_queue=runs.task_queue, graceful_shutdown_timeout=stop
        )
        async with first:
            run_id = await runs.start("stepper", "Step twice", wait=False)
            assert isinstance(run_id, str)
            assert await asyncio.to_thread(IN_TOOL.wait, 60)
            stopping = asyncio.ensure_future(first.shutdown())  # it stops polling, ends the call in hand
            await asyncio.sleep(1.0)
            GO.set()
            await stopping
        await asyncio.sleep(BUDGET + 2)  # no worker at all, longer than the whole budget
        async with await build_worker(runs.client, catalog(), task_queue=runs.task_queue):
            result = await asyncio.wait_for(runs.result(run_id), 60)
        assert (result.reason, result.limit) == ("success", None), result.note
        assert result.turns == 3
        assert result.active_seconds < BUDGET, result.active_seconds
        gap = await _longest_wait_for_a_workflow_task(runs, run_id)
        assert gap > BUDGET  # the worker really was away that long
        assert await _replay_failure(runs, run_id) is None  # what the workflow decided is deterministic

    asyncio.run(scenario())


def test_a_run_that_spends_its_time_on_its_calls_still_stops_at_its_time_limit(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            result = await runs.start("worker", "Work")
        assert not isinstance(result, str)
        assert (result.reason, result.limit) == ("limit", "seconds"), result.note
        assert 2 <= result.turns <= 3
        assert result.active_seconds >= 3.0
        assert await _replay_failure(runs, result.run_id) is None

    asyncio.run(scenario())


async def _longest_wait_for_a_workflow_task(runs: TemporalRuns, run_id: str) -> float:
    """The longest time from a workflow task's scheduling to its start, in the run's history."""
    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    scheduled: dict[int, float] = {}
    longest = 0.0
    for event in history.events:
        at = event.event_time.ToDatetime().timestamp()
        if event.HasField("workflow_task_scheduled_event_attributes"):
            scheduled[event.event_id] = at
        elif event.HasField("workflow_task_started_event_attributes"):
            began = scheduled.get(event.workflow_task_started_event_attributes.scheduled_event_id)
            if began is not None:
                longest = max(longest, at - began)
    return longest


async def _replay_failure(runs: TemporalRuns, run_id: str) -> Exception | None:
    """Why the run's history does not replay under this code, or None."""
    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


def test_a_run_started_before_active_time_left_out_worker_waits_replays_as_it_ran() -> None:
    """A history recorded by the code before `WORKER_TIME` (the scenario above: the worker away 8 s between
    the two turns of a 6 s run, which stopped `limit`/`seconds`; `fetch_history().to_json()`) replays under
    this code without nondeterminism (it keeps the workflow's clock: `workflow.patched`)."""
    assert replay_failure("temporal_v8_worker_away_history.json") is None
