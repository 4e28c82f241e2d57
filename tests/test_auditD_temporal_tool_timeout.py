"""A tool whose timeout no Temporal timer holds (`timeout=float("inf")`, or 1e20 seconds: "never time
out", written as a number) is a tool with no timeout of its own, as `None` is; a verifier made with
`timeout=1e20`, and a `RetryPolicy(max_delay=1e20)`'s backoff, get the longest duration too. In one
process they ran; in a Temporal run `timedelta(seconds=inf)` raised OverflowError in the workflow code:
for a tool or a verifier the workflow task failed and was retried for ever, and the run never ended (no
stop reason); for the backoff the run ended as error. Against a real Temporal Server (the dev server)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporal_server import TemporalServer, temporal_fixture

from agent import Agent, Budget, RetryPolicy, predicate
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, call, finish
from agent.temporal import TemporalRuns, build_worker
from agent.tools import tool

pytestmark = pytest.mark.slow


@tool(timeout=float("inf"))
def forever(x: int) -> str:
    """A tool its author never wants cut short."""
    return f"looked at {x}"


@tool(timeout=1e20)
def ages(x: int) -> str:
    """A tool with a timeout of 1e20 seconds."""
    return f"aged {x}"


NAMES = ["forever", "ages", "judged", "patient"]


def agent_for(name: str) -> Agent:
    budget = Budget(max_turns=5, max_seconds=60)
    if name == "patient":  # a backoff with no cap of its own, written as a number
        retry = RetryPolicy(max_delay=1e20)
        return Agent(name, ScriptedModel([[finish("done", "ok")]]), retry=retry, budget=budget)
    if name == "judged":  # no tool; a verifier that may take 1e20 s
        checked = predicate(lambda ctx: True, "never fails", timeout=1e20)
        return Agent(name, ScriptedModel([[finish("done", "ok")]]), verifiers=[checked], budget=budget)
    steps = [[call(name, x=1)], [finish("done", "ok")]]
    tools = {"forever": forever, "ages": ages}
    return Agent(name, ScriptedModel(steps), tools=[tools[name]], budget=budget)


def catalog() -> Catalog:
    found = Catalog()
    for name in NAMES:
        found.register(name, lambda state, name=name: agent_for(name))
    return found


temporal = temporal_fixture()


@pytest.mark.parametrize("name", NAMES)
def test_in_one_process_an_endless_timeout_runs(name: str) -> None:
    result = agent_for(name).run("Look once.")
    assert result.reason == "success", result.note


@pytest.mark.parametrize("name", NAMES)
def test_a_temporal_run_with_an_endless_timeout_ends_as_in_one_process(
    temporal: TemporalServer, name: str
) -> None:
    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=f"auditD-{uuid.uuid4().hex[:8]}")
        async with await build_worker(runs.client, catalog(), task_queue=runs.task_queue):
            run_id = await runs.start(name, "Look once.", wait=False)
            assert isinstance(run_id, str)
            result = await asyncio.wait_for(runs.result(run_id), 60)
        assert result.reason == "success", result.note
        assert result.turns == (1 if name in ("judged", "patient") else 2)

    asyncio.run(scenario())
