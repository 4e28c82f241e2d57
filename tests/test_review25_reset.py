"""review25: a reset to a workflow task that observed nothing (an update a client sent while the run
waited) does not make the next live task taken for a replayed one: the `help_timeout` stop that comes in
it is counted. Against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer, serving, temporal_fixture, waiting
from test_probe22d_operator import pay
from test_probe24a_reset import reset_to_last_task, stops

from agent import Agent, Budget, HelpPolicy
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, call, finish
from agent.temporal import _wire as w
from telemetry import Telemetry

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
        telemetry = Telemetry.from_env({}, registry=CollectorRegistry())
        catalog = Catalog()
        catalog.register("payer", payer)
        try:
            async with serving(temporal, catalog, hooks=telemetry.hooks) as runs:
                run_id = await runs.start("payer", "Pay the invoice", wait=False)
                assert isinstance(run_id, str)
                await waiting(runs, run_id)
                handle = runs.client.get_workflow_handle(run_id)
                # a client reads the first segment's result: a workflow task in which nothing is observed
                await handle.execute_update(w.SEGMENT, 1)
                await reset_to_last_task(temporal, runs, run_id)
                result = await asyncio.wait_for(handle.result(), WAIT + 30)
                assert result["result"]["reason"] == "help_timeout"
                assert (stops(telemetry, "need_help"), stops(telemetry, "help_timeout")) == (
                    1,
                    1,
                )  # was (1, 0)
        finally:
            telemetry.shutdown()

    asyncio.run(scenario())
