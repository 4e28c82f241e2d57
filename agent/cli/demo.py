"""Play the seed scenarios: every stop reason, offline, with what people do after."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from agent.examples.scenarios import SCENARIOS, Scenario, build_agent, follow_up, world_for
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
        if _interrupted():
            raise KeyboardInterrupt  # its run ended cancelled, recorded: the demo stops here (exit 130)
        played = [Played(scenario, first, scenario.expect if model is None else None, 1)]
        if scenario.follow_up and first.snapshot is not None and model is None:
            after = await follow_up(agent, scenario.follow_up, first, world)
            played.append(Played(scenario, after, scenario.expect_after, 2))
    if _interrupted():
        raise KeyboardInterrupt
    return played


def _interrupted() -> bool:
    """Whether Ctrl-C came (`asyncio.run` cancels its main task on it, and the run, swallowing the
    cancellation, ends `cancelled`): the demo then stops rather than play on."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def select(names: list[str] | None) -> list[Scenario]:
    """The scenarios whose name starts with one of `names` (all when none given)."""
    if not names:
        return list(SCENARIOS)
    chosen = [s for s in SCENARIOS if any(s.name == n or s.name.startswith(n + "/") for n in names)]
    if not chosen:
        known = ", ".join(s.name for s in SCENARIOS)
        raise ValueError(f"no scenario matches {names}; known: {known}")
    return chosen
