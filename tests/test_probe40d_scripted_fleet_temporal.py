"""On a real Temporal server, a run whose turns go to two workers, each with its own scripted model
for the run, plays each step of the script once: the same turns, tool calls and result as on one.

Each turn's tool needs a person's approval, so the run waits between turns with nothing in flight;
the test then stops the worker that served the turn and starts the other one, and approves: the turns
alternate between the two by construction, not by luck. A worker keeps its agent for the run (what a
worker's cache does; here its catalog's builder keeps it, as the worker is stopped and started again).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporal_server import TemporalServer
from test_temporal import temporal  # noqa: F401  (the server fixture)

from agent import Agent, Budget, RetryPolicy, RunContext, TransientModelError, tool
from agent.durable.catalog import Catalog
from agent.models.base import ModelReply, ModelRequest
from agent.models.scripted import ScriptedModel, Step, call, finish, reply, say
from agent.result import RunResult, StopReason
from agent.temporal import TemporalRuns
from agent.temporal.worker import build_worker

pytestmark = pytest.mark.slow

FAST_RETRY = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
TALLIED: list[tuple[str, int]] = []  # (run id, n) of every `tally` call, in the order they ran


@tool(needs_approval=True)
def tally(ctx: RunContext, n: int) -> str:
    """Tally n (a person approves it first)."""
    TALLIED.append((ctx.run_id, n))
    return f"tallied {n}"


def script() -> list[Step]:
    """Tallies 1 to 3, a transient error before the second (the loop asks again within the turn) and
    a paused reply before the third (sent back within the turn), then the finish."""
    return [
        [say("One."), call("tally", n=1)],
        TransientModelError("overloaded", error_type="overloaded"),
        [say("Two."), call("tally", n=2)],
        reply(say("Thinking."), stop_reason="pause_turn"),
        [say("Three."), call("tally", n=3)],
        [finish("done", "Tallied 1 to 3.")],
    ]


class Served:
    """A worker's model for a run: its `ScriptedModel`, logging which worker served which turn."""

    provider = "scripted"

    def __init__(self, worker: str, served: list[tuple[str, int]]) -> None:
        self.model, self.worker, self.served = ScriptedModel(script()), worker, served

    @property
    def name(self) -> str:
        return self.model.name

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.served.append((self.worker, request.replies + 1))
        return await self.model.complete(request)


def catalog(worker: str, kept: dict[str, Served], served: list[tuple[str, int]]) -> Catalog:
    """Worker `worker`'s catalog: agent `tallier`, with this worker's model for the run (`kept` by the
    run's `state["key"]`, so the worker keeps it however often it is started)."""

    def build(state: dict[str, Any]) -> Agent:
        model = kept.setdefault(state["key"], Served(worker, served))
        return Agent(
            name="tallier", model=model, tools=[tally], budget=Budget(max_turns=10), retry=FAST_RETRY
        )

    c = Catalog()
    c.register("tallier", build)
    return c


def run_on(server: TemporalServer, workers: list[str]) -> tuple[RunResult, list[tuple[str, int]], list[int]]:
    """A run whose segments (each up to a tool waiting for approval) go to `workers` in turn, one worker
    up at a time; its result, which worker served each model call (and its turn), and its tallies."""
    kept: dict[str, dict[str, Served]] = {name: {} for name in set(workers)}
    served: list[tuple[str, int]] = []
    key, queue = uuid.uuid4().hex[:8], f"test-{uuid.uuid4().hex[:8]}"

    async def scenario() -> RunResult:
        runs = await TemporalRuns.connect(server.address, task_queue=queue)
        result: RunResult | str | None = None
        for name in workers:  # each segment on the next worker, the one before it stopped
            up = await build_worker(
                runs.client, catalog(name, kept[name], served), task_queue=queue, heartbeat_seconds=2.0
            )
            async with up:
                if result is None:
                    result = await runs.start(
                        "tallier", "Tally 1 to 3.", state={"key": key}, run_id=f"tally-{key}"
                    )
                else:
                    assert isinstance(result, RunResult) and result.reason is StopReason.NEED_HELP, result
                    result = await runs.approve(result.run_id)
        assert isinstance(result, RunResult)
        return result

    result = asyncio.run(scenario())
    return result, served, [n for run_id, n in TALLIED if run_id == result.run_id]


def test_a_run_whose_turns_alternate_between_two_workers_plays_each_step_once(
    temporal: TemporalServer,  # noqa: F811
) -> None:
    alone, served_alone, tallied_alone = run_on(temporal, ["a"] * 4)
    assert alone.reason is StopReason.SUCCESS, alone.note
    assert tallied_alone == [1, 2, 3]

    result, served, tallied = run_on(temporal, ["a", "b", "a", "b"])

    assert tallied == [1, 2, 3]  # no tool call made twice: no step played twice
    assert [w for w, _ in served] == ["a", "b", "b", "a", "a", "b"]  # turn 2's retry on b; turn 3 paused on a
    assert (result.reason, result.turns, result.output) == (alone.reason, alone.turns, alone.output)
    assert [turn for _, turn in served] == [turn for _, turn in served_alone]
