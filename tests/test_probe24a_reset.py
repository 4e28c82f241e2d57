"""probe24a: `temporal workflow reset` of a waiting run to its last workflow task re-does that task in a
new execution; what it observed (the turn, the `need_help` stop) was counted by the worker that ran it
first, and is not counted again. Against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer, serving, temporal_cli, temporal_fixture, waiting
from temporalio.api.enums.v1 import EventType
from test_probe22d_operator import payer

from agent.durable.runner import Catalog
from agent.temporal import TemporalRuns
from telemetry import Telemetry
from telemetry import names as n

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


def stops(telemetry: Telemetry, reason: str) -> float:
    labels = {
        "agent": "payer",
        "task_type": "default",
        "stop_reason": reason,
        "stop_limit": n.NO_LIMIT,
        n.LABEL_STOP_CAUSE: "",
    }
    return telemetry.registry.get_sample_value(n.METRIC_STOPS + "_total", labels) or 0.0


async def redone(runs: TemporalRuns, run_id: str, before: str) -> None:
    """Until the reset execution (not `before`) has completed the workflow task that re-does the reset one."""
    for _ in range(300):
        handle = runs.client.get_workflow_handle(run_id)
        described = await handle.describe()
        if described.run_id != before:
            kinds = [e.event_type for e in (await handle.fetch_history()).events]
            failed = kinds.index(EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
            if EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED in kinds[failed:]:
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} was not re-done after its reset")


async def reset_to_last_task(temporal: TemporalServer, runs: TemporalRuns, run_id: str) -> None:
    """What an operator types: `temporal workflow reset -w RUN_ID --type LastWorkflowTask`; until the
    reset execution has re-done that task."""
    first = (await runs.client.get_workflow_handle(run_id).describe()).run_id
    argv = ["workflow", "reset", "-w", run_id, "--type", "LastWorkflowTask", "--reason", "probe"]
    proc = await asyncio.create_subprocess_exec(
        temporal_cli(), *argv, "--address", temporal.address, stdout=subprocess.DEVNULL
    )
    assert await asyncio.wait_for(proc.wait(), 60) == 0
    await redone(runs, run_id, first)


def test_a_waiting_run_reset_to_its_last_workflow_task_counts_its_need_help_once(
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
                assert stops(telemetry, "need_help") == 1
                await reset_to_last_task(temporal, runs, run_id)
                await waiting(runs, run_id)
                assert stops(telemetry, "need_help") == 1  # was 2: the re-done task counted it again
                result = await runs.approve(run_id)
                assert (result.reason, result.output) == ("success", "paid")
                assert (stops(telemetry, "need_help"), stops(telemetry, "success")) == (1, 1)
        finally:
            telemetry.shutdown()

    asyncio.run(scenario())
