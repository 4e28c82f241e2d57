"""The scenario the `temporal workflow reset` tests share: a payer's run waiting for its approval on a
real Temporal Server, what an operator's reset does to it, and the stops the worker counted."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator, Callable
from typing import Any

from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer, serving, temporal_cli, waiting
from temporalio.api.enums.v1 import EventType

from agent import Agent
from agent.durable.runner import Catalog
from agent.temporal import TemporalRuns
from telemetry import Telemetry
from telemetry import names as n


def stops(telemetry: Telemetry, reason: str) -> float:
    """The payer's runs counted as stopped for `reason` (no limit, no cause)."""
    labels = {
        "agent": "payer",
        "task_type": "default",
        "stop_reason": reason,
        "stop_limit": n.NO_LIMIT,
        n.LABEL_STOP_CAUSE: "",
    }
    return telemetry.registry.get_sample_value(n.METRIC_STOPS + "_total", labels) or 0.0


@contextlib.asynccontextmanager
async def waiting_payer(
    temporal: TemporalServer, payer: Callable[[dict[str, Any]], Agent]
) -> AsyncIterator[tuple[Telemetry, TemporalRuns, str]]:
    """A worker whose catalog has `payer` (counting into a fresh registry), and a run of it started
    and waiting for its approval: (the worker's telemetry, the client, the run's id)."""
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry())
    catalog = Catalog()
    catalog.register("payer", payer)
    try:
        async with serving(temporal, catalog, hooks=telemetry.hooks) as runs:
            run_id = await runs.start("payer", "Pay the invoice", wait=False)
            assert isinstance(run_id, str)
            await waiting(runs, run_id)
            yield telemetry, runs, run_id
    finally:
        telemetry.shutdown()


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
