"""review25: a reset to a workflow task that observed nothing (an update a client sent while the run
waited) does not make the next live task taken for a replayed one: the `help_timeout` stop that comes in
it is counted. Against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from reset_scenario import reset_to_last_task, stops, waiting_payer
from temporal_server import TemporalServer, temporal_fixture
from test_probe22d_operator import pay

from agent import Agent, Budget, HelpPolicy
from agent.models.scripted import ScriptedModel, call, finish
from agent.temporal import _wire as w

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
WAIT = 12.0  # the person's time: long enough to reset the run before it runs out


def payer(state: dict[str, Any]) -> Agent:
    script = [[call("pay", amount=7)], [finish("done", "paid")]]
    help_policy = HelpPolicy(wait_seconds=WAIT)
    return Agent(
        name="payer", model=ScriptedModel(script), tools=[pay], budget=Budget(max_turns=6), help=help_policy
    )


def test_a_reset_to_a_task_that_observed_nothing_leaves_the_next_stop_counted(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        async with waiting_payer(temporal, payer) as (telemetry, runs, run_id):
            handle = runs.client.get_workflow_handle(run_id)
            # a client reads the first segment's result: a workflow task in which nothing is observed
            await handle.execute_update(w.SEGMENT, 1)
            await reset_to_last_task(temporal, runs, run_id)
            result = await asyncio.wait_for(handle.result(), WAIT + 30)
            assert result["result"]["reason"] == "help_timeout"
            assert (stops(telemetry, "need_help"), stops(telemetry, "help_timeout")) == (1, 1)  # was (1, 0)

    asyncio.run(scenario())
