"""Play the seed scenarios: every stop reason, offline, with what people do after."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from agent.agent import Agent
from agent.examples.scenarios import SCENARIOS, Scenario, World, build_agent, world_for
from agent.hooks import RunHooks
from agent.models.base import Model
from agent.result import RunResult, StopReason


@dataclass(frozen=True)
class Played:
    """One segment of a scenario's run, with what was expected of it."""

    scenario: Scenario
    result: RunResult
    expected: StopReason | None
    segment: int

    @property
    def met(self) -> bool:
        return self.expected is None or self.result.reason == self.expected

    def row(self) -> dict[str, Any]:
        """The JSON line `endstate demo --json` prints."""
        r = self.result
        return {
            "agent": r.agent,
            "scenario": self.scenario.name,
            "segment": self.segment,
            "expected": str(self.expected) if self.expected else None,
            **r.to_dict(),
        }


async def play(
    scenario: Scenario, *, hooks: RunHooks | None = None, model: Model | None = None
) -> list[Played]:
    """Run a scenario's first segment and, offline, what a person does after it."""
    options: dict[str, Any] = {"hooks": hooks} if hooks is not None else {}
    with world_for(scenario) as world:
        agent = build_agent(scenario, world, model, **options)
        state = {"scenario": scenario.name}
        first = await agent.arun(scenario.task, cancel=world.cancel, state=state)
        played = [Played(scenario, first, scenario.expect if model is None else None, 1)]
        if scenario.follow_up and first.snapshot is not None and model is None:
            after = await follow_up(agent, scenario.follow_up, first, world)
            played.append(Played(scenario, after, scenario.expect_after, 2))
    return played


class Action(Protocol):
    """What a person or the host does after a first segment (a scenario's or an eval case's)."""

    @property
    def action(self) -> str: ...  # "answer", "approve", "deny", "expire" or "resume"

    @property
    def text(self) -> str: ...


async def follow_up(agent: Agent, action: Action, first: RunResult, world: World) -> RunResult:
    """Do what the person or host does with a suspended or cancelled run."""
    snapshot = first.snapshot
    assert snapshot is not None
    if action.action == "answer":
        return await agent.aresume(snapshot, action.text)
    if action.action in ("approve", "deny"):
        return await agent.aresume(snapshot, action.text or None, approved=action.action == "approve")
    if action.action == "expire":  # nobody answers: the clock reaches the deadline
        deadline = snapshot.suspension.deadline if snapshot.suspension else 0.0
        return await agent.aexpire(snapshot, now=max(time.time(), deadline))
    world.cancel.clear()  # "resume": the host is back up
    return await agent.aresume(snapshot)


def select(names: list[str] | None) -> list[Scenario]:
    """The scenarios whose name starts with one of `names` (all when none given)."""
    if not names:
        return list(SCENARIOS)
    chosen = [s for s in SCENARIOS if any(s.name == n or s.name.startswith(n + "/") for n in names)]
    if not chosen:
        known = ", ".join(s.name for s in SCENARIOS)
        raise ValueError(f"no scenario matches {names}; known: {known}")
    return chosen
