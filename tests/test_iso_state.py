"""Isolation of a run's state: what a run's tools write in `ctx.state` is that run's alone.

`arun(task, state=...)` and a resume from a snapshot copied the state's top level only: runs started
from one template (`state=DEFAULTS`, say `{"seen": []}`) shared its lists and dicts, so each run's
tools saw and changed every other run's notes, and the template itself; a resumed segment changed
the snapshot it was given (a value the caller may keep, or resume again).
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from agent import Agent, Budget, StopReason, tool
from agent.context import RunContext
from agent.models.scripted import ScriptedModel, Step, call, finish, reply

SAID: dict[str, list[str]] = {}  # what `note` told each run's model, by run id


@tool
def note(ctx: RunContext, text: str) -> str:
    """Note a text in the run's state; say how many notes the run has."""
    ctx.state["seen"].append(text)
    ctx.state["counts"][text] = len(ctx.state["seen"])
    said = f"{len(ctx.state['seen'])} notes"
    SAID.setdefault(ctx.run_id, []).append(said)
    return said


def noting(turn: int) -> Step:
    return reply(call("note", text=f"turn {turn}")) if turn <= 2 else reply(finish("done", "noted"))


def test_runs_started_from_one_state_each_keep_their_own_notes() -> None:
    template: dict[str, Any] = {"seen": [], "counts": {}}
    agent = Agent("notes", ScriptedModel(then=noting), tools=[note], budget=Budget(max_turns=5))

    async def three() -> list[Any]:
        return list(await asyncio.gather(*(agent.arun(f"task {i}", state=template) for i in range(3))))

    results = asyncio.run(three())
    assert [r.reason for r in results] == [StopReason.SUCCESS] * 3
    for result in results:
        assert SAID[result.run_id] == ["1 notes", "2 notes"], SAID
    assert template == {"seen": [], "counts": {}}


def test_a_resumed_segment_leaves_the_snapshot_it_was_given_as_it_was() -> None:
    steps: list[Step] = [
        [call("note", text="first")],
        [finish("need_help", "Go on?")],
        [call("note", text="second")],
        [finish("done", "noted")],
    ]
    agent = Agent("notes", ScriptedModel(steps), tools=[note], budget=Budget(max_turns=6))
    asked = agent.run("note things", state={"seen": [], "counts": {}})
    assert asked.reason is StopReason.NEED_HELP and asked.snapshot is not None
    kept = copy.deepcopy(asked.snapshot.state)
    done = agent.resume(asked.snapshot, "yes")
    assert done.reason is StopReason.SUCCESS
    assert asked.snapshot.state == kept == {"seen": ["first"], "counts": {"first": 1}}
