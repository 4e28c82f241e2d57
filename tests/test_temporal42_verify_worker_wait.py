"""temporal42: a verification whose answer waited for a worker past the run's time left is taken, as a
model or tool call's is: the time the run waited for a worker is not the agent's (README: "A run's time
budget counts what a run in one process counts"). Against a real Temporal Server (the dev server).

This is how one of 200 fleet runs (two turns, a 120 s budget) stopped `limit` under load: its verify
activity ended in time, and the workflow task that carried its answer was held past the budget's timer.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture
from test_probe24a_worker_wait import _longest_wait_for_a_workflow_task, _replay_failure

from agent import Agent, Budget, RunContext
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, finish
from agent.temporal import TemporalRuns, build_worker

pytestmark = pytest.mark.slow

BUDGET = 6.0
SLOW_BUDGET = 2.0
IN_CHECK = threading.Event()  # the verifier runs: the test stops the worker while it does
GO = threading.Event()  # the verifier returns once the worker no longer polls


def held_check(ctx: RunContext) -> list[str]:
    """Passes, once the test has stopped the worker that runs it."""
    IN_CHECK.set()
    GO.wait(timeout=60)
    return []


def checked(state: dict[str, Any]) -> Agent:
    return Agent(
        name="checked",
        model=ScriptedModel([[finish("done", "done at once")]]),
        verifiers=[held_check],
        budget=Budget(max_seconds=BUDGET),
    )


def slow_check(ctx: RunContext) -> list[str]:
    """Passes, after longer than the run's whole budget."""
    time.sleep(SLOW_BUDGET + 2)
    return []


def slow(state: dict[str, Any]) -> Agent:
    return Agent(
        name="slow",
        model=ScriptedModel([[finish("done", "done at once")]]),
        verifiers=[slow_check],
        budget=Budget(max_seconds=SLOW_BUDGET),
    )


def catalog() -> Catalog:
    found = Catalog()
    found.register("checked", checked)
    found.register("slow", slow)
    return found


temporal = temporal_fixture()


def test_a_verification_whose_answer_waited_for_a_worker_past_the_budget_is_taken(
    temporal: TemporalServer,
) -> None:
    # Was: `limit`/`seconds` after 1 turn: the verify activity passed in about 1 s, but its answer came in
    # the workflow task in which the budget's timer fired (no worker for 8 s), and the cut threw it away.
    async def scenario() -> None:
        IN_CHECK.clear()
        GO.clear()
        runs = await TemporalRuns.connect(temporal.address, task_queue=f"t42v-{uuid.uuid4().hex[:8]}")
        stop = timedelta(seconds=10)  # as `endstate worker` runs: the calls in hand end on a stop
        first = await build_worker(
            runs.client, catalog(), task_queue=runs.task_queue, graceful_shutdown_timeout=stop
        )
        async with first:
            run_id = await runs.start("checked", "Finish", wait=False)
            assert isinstance(run_id, str)
            assert await asyncio.to_thread(IN_CHECK.wait, 60)
            stopping = asyncio.ensure_future(first.shutdown())  # it stops polling, ends the check in hand
            await asyncio.sleep(1.0)
            GO.set()
            await stopping
        await asyncio.sleep(BUDGET + 2)  # no worker at all, longer than the whole budget
        async with await build_worker(runs.client, catalog(), task_queue=runs.task_queue):
            result = await asyncio.wait_for(runs.result(run_id), 60)
        assert (result.reason, result.limit, result.verified) == ("success", None, True), result.note
        assert result.turns == 1
        assert result.active_seconds < BUDGET, result.active_seconds
        assert await _longest_wait_for_a_workflow_task(runs, run_id) > BUDGET  # the worker was away
        assert await _replay_failure(runs, run_id) is None  # what the workflow decided is deterministic

    asyncio.run(scenario())


def test_a_verification_that_runs_past_the_budget_still_stops_the_run_at_its_time_limit(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            result = await runs.start("slow", "Finish")
            assert not isinstance(result, str)
            assert (result.reason, result.limit) == ("limit", "seconds"), result.note
            assert result.active_seconds >= SLOW_BUDGET, result.active_seconds
            assert await _replay_failure(runs, result.run_id) is None

    asyncio.run(scenario())
