"""A tool the time budget left no time to start is said to be not started, in the run's note too.

When a model's reply came with the time budget spent, its tool call was not started (its result
said "was not started: the run's time budget ran out"), but the run's note said "The time budget
ran out while look ran.": a person reading the result was told a side effect ran that never did.
"""

from __future__ import annotations

from agent import Agent, Budget, LimitKind, StopReason, tool
from agent.clock import SystemClock
from agent.journal import Result
from agent.models.base import ModelRequest
from agent.models.scripted import ScriptedModel, call, finish


class Jumping(SystemClock):
    """The system's monotonic clock, plus whatever `ahead` is set to."""

    ahead = 0.0

    def monotonic(self) -> float:
        return super().monotonic() + self.ahead


def test_a_tool_not_started_for_want_of_time_is_not_said_to_have_run() -> None:
    clock, ran = Jumping(), []

    @tool
    def look(path: str) -> str:
        """Look at a file."""
        ran.append(path)
        return "seen"

    def slow_reply(request: ModelRequest) -> list[dict[str, object]]:
        clock.ahead = 120.0  # the reply took the whole budget
        return [call("look", path="a.txt")]

    model = ScriptedModel([slow_reply, [finish("done", "ok")]])
    agent = Agent(name="looker", model=model, tools=[look], budget=Budget(max_seconds=60), clock=clock)

    result = agent.run("look")

    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.SECONDS)
    assert ran == []
    assert result.note == "The time budget ran out before look could start."
    assert result.snapshot is not None
    [told] = [e for e in result.snapshot.journal if isinstance(e, Result)]
    assert "was not started" in told.text
