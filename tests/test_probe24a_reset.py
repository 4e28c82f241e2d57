"""probe24a: `temporal workflow reset` of a waiting run to its last workflow task re-does that task in a
new execution; what it observed (the turn, the `need_help` stop) was counted by the worker that ran it
first, and is not counted again. Against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio

import pytest
from reset_scenario import reset_to_last_task, stops, waiting_payer
from temporal_server import TemporalServer, temporal_fixture, waiting
from test_probe22d_operator import payer

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


def test_a_waiting_run_reset_to_its_last_workflow_task_counts_its_need_help_once(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        async with waiting_payer(temporal, payer) as (telemetry, runs, run_id):
            assert stops(telemetry, "need_help") == 1
            await reset_to_last_task(temporal, runs, run_id)
            await waiting(runs, run_id)
            assert stops(telemetry, "need_help") == 1  # was 2: the re-done task counted it again
            result = await runs.approve(run_id)
            assert (result.reason, result.output) == ("success", "paid")
            assert (stops(telemetry, "need_help"), stops(telemetry, "success")) == (1, 1)

    asyncio.run(scenario())
