"""red40b over Temporal: `endstate start` waiting for a run whose workflow is cancelled (`temporal workflow
cancel`, `TemporalRuns.cancel`) exits 3, as over a store; `resume` of it, ending in success, exits 0."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from subprocess import PIPE
from typing import Any

import pytest
from temporal_server import TemporalServer, cli_env, endstate, serving, temporal_fixture

from agent import Agent, Budget, tool
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, call, finish

pytestmark = pytest.mark.slow

HOLDING, RELEASE = threading.Event(), threading.Event()


@tool
def hold() -> str:
    """Wait until the test lets the call end."""
    HOLDING.set()
    RELEASE.wait(60)
    return "held"


def build(state: dict[str, Any]) -> Agent:
    script = [[call("hold")], [finish("done", "held")]]
    return Agent(name="holder", model=ScriptedModel(script), tools=[hold], budget=Budget(max_turns=4))


temporal = temporal_fixture()


async def cli(*argv: str) -> Any:
    """`endstate ARGV` started in a process of its own, without `$ENDSTATE_TEMPORAL`."""
    env = {k: v for k, v in cli_env().items() if k != "ENDSTATE_TEMPORAL"}
    return await asyncio.create_subprocess_exec(*endstate(*argv), stdout=PIPE, stderr=PIPE, env=env)


async def ended(proc: Any) -> tuple[int, dict[str, Any]]:
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert out, err.decode()
    return proc.returncode, json.loads(out)


def test_a_start_whose_workflow_is_cancelled_exits_3(temporal: TemporalServer) -> None:
    """Before: it printed the cancelled result and exited 0, as after a success."""
    catalog = Catalog()
    catalog.register("holder", build)
    run_id = f"held-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[tuple[int, dict[str, Any]], tuple[int, dict[str, Any]]]:
        async with serving(temporal, catalog) as runs:
            on = ("--json", "--temporal", temporal.address, "--task-queue", runs.task_queue)
            start = await cli("start", "holder", "Hold.", "--run-id", run_id, *on)
            assert await asyncio.to_thread(HOLDING.wait, 60)  # the run is inside its tool call
            await runs.cancel(run_id)
            RELEASE.set()
            cancelled = await ended(start)
            return cancelled, await ended(await cli("resume", run_id, *on))

    (code, result), (again, done) = asyncio.run(scenario())
    assert (code, result["reason"]) == (3, "cancelled")
    assert (again, done["reason"]) == (0, "success")
