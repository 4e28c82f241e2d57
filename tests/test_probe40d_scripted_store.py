"""The store's runner builds a run's agent from the catalog at each segment: a catalog that keeps one
agent (`lambda state: agent`) keeps its scripted model. A run whose segments alternate between two
runners (two processes on one store, each keeping its agent) plays each step once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent import Agent, Budget, RunContext, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel, Step, call, finish, say
from agent.result import RunResult, StopReason

TALLIED: list[int] = []


@tool(needs_approval=True)
def tally(ctx: RunContext, n: int) -> str:
    """Tally n (a person approves it first)."""
    TALLIED.append(n)
    return f"tallied {n}"


SCRIPT: list[Step] = [
    [say("One."), call("tally", n=1)],
    [say("Two."), call("tally", n=2)],
    [say("Three."), call("tally", n=3)],
    [finish("done", "Tallied 1 to 3.")],
]


def keeping() -> tuple[Catalog, ScriptedModel]:
    """A process's catalog that keeps one agent, and its model."""
    model = ScriptedModel(SCRIPT)
    agent = Agent(name="tallier", model=model, tools=[tally], budget=Budget(max_turns=10))
    catalog = Catalog()
    catalog.register("tallier", lambda state: agent)
    return catalog, model


def run_through(runners: list[Runner]) -> RunResult:
    """A run started on the first runner, each approval given on the next one."""

    async def scenario() -> RunResult:
        result = await runners[0].start("tallier", "Tally 1 to 3.")
        for runner in runners[1:]:
            assert result.reason is StopReason.NEED_HELP, result.note
            result = await runner.resume(result.run_id, approved=True)
        return result

    TALLIED.clear()
    return asyncio.run(scenario())


def test_a_run_whose_segments_alternate_between_two_runners_that_keep_their_agents(tmp_path: Path) -> None:
    store = open_store(tmp_path / "runs.db")
    try:
        (one, model), (other, other_model) = keeping(), keeping()
        alone = run_through([Runner(store, keeping()[0])] * 4)
        assert (alone.reason, TALLIED) == (StopReason.SUCCESS, [1, 2, 3])

        a, b = Runner(store, one), Runner(store, other)
        result = run_through([a, b, a, b])

        assert TALLIED == [1, 2, 3]
        assert (result.reason, result.turns, result.output) == (alone.reason, alone.turns, alone.output)
        assert [len(model.requests), len(other_model.requests)] == [2, 2]  # turns 1 and 3, 2 and 4
        other_model.assert_used_up()  # it played the finish
    finally:
        store.close()
