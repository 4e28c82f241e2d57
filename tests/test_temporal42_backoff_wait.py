"""temporal42: the time a run's step after a retry's backoff waits for a worker is not the run's: the
backoff counts (as in one process), the worker being away after it does not. Against a real Temporal
Server (the dev server)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporal_server import TemporalServer, temporal_fixture
from test_probe24a_worker_wait import _longest_wait_for_a_workflow_task, _replay_failure

from agent import Agent, Budget, RetryPolicy, TransientModelError
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, finish
from agent.temporal import TemporalRuns, build_worker

pytestmark = pytest.mark.slow

BUDGET = 5.0
BACKOFF = 1.0
# one model for the process: a worker that takes the run over goes on with the script's next step
MODEL = ScriptedModel([TransientModelError("overloaded", error_type="overloaded"), [finish("done", "ok")]])


def retried(state: dict[str, Any]) -> Agent:
    return Agent(
        name="retried",
        model=MODEL,
        budget=Budget(max_seconds=BUDGET),
        retry=RetryPolicy(max_attempts=3, base_delay=BACKOFF, max_delay=BACKOFF, jitter=False),
    )


def catalog() -> Catalog:
    found = Catalog()
    found.register("retried", retried)
    return found


temporal = temporal_fixture()


def test_a_worker_away_after_a_retry_backoff_does_not_spend_the_run_budget(temporal: TemporalServer) -> None:
    # Was: `limit`/`seconds`: the backoff's timer fired with no worker polling, and the 8 s until one
    # took the workflow's next step counted as the run's active time.
    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=f"t42b-{uuid.uuid4().hex[:8]}")
        async with await build_worker(runs.client, catalog(), task_queue=runs.task_queue):
            run_id = await runs.start("retried", "Try twice", wait=False)
            assert isinstance(run_id, str)
            assert await _backoff_began(runs, run_id)
        await asyncio.sleep(BUDGET + 3)  # no worker at all, longer than the whole budget
        async with await build_worker(runs.client, catalog(), task_queue=runs.task_queue):
            result = await asyncio.wait_for(runs.result(run_id), 60)
        assert (result.reason, result.limit) == ("success", None), result.note
        assert BACKOFF <= result.active_seconds < BUDGET, result.active_seconds
        assert await _longest_wait_for_a_workflow_task(runs, run_id) > BUDGET  # the worker was away
        assert await _replay_failure(runs, run_id) is None

    asyncio.run(scenario())


async def _backoff_began(runs: TemporalRuns, run_id: str) -> bool:
    """Once the run's history shows the backoff's timer: one started after the model call failed (the
    call's own budget timer starts with the call)."""
    for _ in range(600):
        history = await runs.client.get_workflow_handle(run_id).fetch_history()
        kinds = [e.WhichOneof("attributes") for e in history.events]
        if "activity_task_failed_event_attributes" in kinds:
            failed = kinds.index("activity_task_failed_event_attributes")
            if "timer_started_event_attributes" in kinds[failed:]:
                return True
        await asyncio.sleep(0.05)
    return False
