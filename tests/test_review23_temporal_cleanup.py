"""review23: a tool's `cleanup_seconds` on Temporal, against a real Temporal Server.

`@tool(cleanup_seconds=...)` lets an async tool cut short by its timeout take longer than the default
2 s to clean up (a rollback). On Temporal the tool runs in an activity whose start-to-close timeout
was the tool's timeout plus `2 * tool_grace` only: a rollback longer than that was ended by Temporal
mid-way, and the activity retried, so the tool (a write) ran again while its first call rolled back.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture

from agent import Agent, Budget, tool
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import StopReason
from agent.temporal import _registry

pytestmark = pytest.mark.slow

SEEN: list[str] = []


@tool(timeout=0.5, cleanup_seconds=6)
async def write() -> str:
    """Write, and roll back when cut off (the rollback takes 2.5 s, within its 6 s of cleanup)."""
    SEEN.append("start")
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        SEEN.append("rolling back")
        await asyncio.sleep(2.5)
        SEEN.append("rolled back")
        raise
    return "never"


def writer(state: dict[str, Any]) -> Agent:
    script = [[call("write")], [finish("done", "written")]]
    return Agent(name="writer", model=ScriptedModel(script), tools=[write], budget=Budget(max_turns=4))


temporal = temporal_fixture()


def test_a_tools_cleanup_past_the_activitys_grace_runs_to_its_end_and_the_tool_runs_once(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> Any:
        catalog = Catalog()
        catalog.register("writer", writer)
        async with serving(temporal, catalog) as runs:
            queue = runs.task_queue
            # the activity's margin past the tool's timeout: 2 * 0.5 s, shorter than the 2.5 s rollback
            _registry.register(queue, dataclasses.replace(_registry.lookup(queue), tool_grace=0.5))
            return await asyncio.wait_for(runs.start("writer", "Write it"), 60)

    SEEN.clear()
    result = asyncio.run(scenario())
    assert result.reason is StopReason.SUCCESS, result.note
    # was: Temporal ended the activity at 1.5 s and ran it again ("start" 2+ times), the rollback cut
    assert SEEN == ["start", "rolling back", "rolled back"]
