"""Per-turn checks made wrong are refused when made, with what to fix: a goal whose output is no text
ended its run as `error` at the very turn the goal was reached."""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, ConfigError, StopReason, goal, invariant, tool
from agent.models.scripted import ScriptedModel, call, finish


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (
            lambda: goal(lambda ctx: True, None),
            r"goal\(\) needs the output the run ends with, as text; got None",
        ),
        (lambda: goal("rows_clean", "clean"), r"goal\(\) takes a function of the RunContext, not str"),
        (
            lambda: invariant(lambda ctx: True, 7),
            r"invariant\(\) needs the reason to give when it breaks, as text",
        ),
        (
            lambda: invariant(None, "no rows lost"),
            r"invariant\(\) takes a function of the RunContext, not NoneType",
        ),
    ],
)
def test_a_check_made_wrong_is_refused_when_made(make: Any, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        make()


def test_a_goal_made_right_still_ends_the_run_as_success() -> None:
    @tool
    def clean() -> str:
        """Clean the rows."""
        return "cleaned"

    model = ScriptedModel([[call("clean")], [finish("done", "never reached")]])
    reached = goal(lambda ctx: any(c.name == "clean" for c in ctx.calls), "the rows are clean")
    result = Agent("cleaner", model, tools=[clean], checks=[reached]).run("Clean the rows.")
    assert (result.reason, result.output, result.verified) == (StopReason.SUCCESS, "the rows are clean", True)


async def never(ctx: Any) -> bool:
    return False


class AsyncReached:
    async def __call__(self, ctx: Any) -> bool:
        return False


def test_an_async_def_check_is_refused_when_made() -> None:
    with pytest.raises(ConfigError, match=r"goal\(\) takes a plain def, not an async def"):
        goal(never, "reached")
    with pytest.raises(ConfigError, match=r"invariant\(\) takes a plain def, not an async def"):
        invariant(never, "holds")


def test_a_check_that_returns_a_coroutine_ends_the_run_as_error_not_as_a_goal_reached() -> None:
    @tool
    def step() -> str:
        """Take a step."""
        return "ok"

    model = ScriptedModel([[call("step")], [finish("give_up", "stuck")]])
    result = Agent("a", model, tools=[step], checks=[goal(AsyncReached(), "reached")]).run("Go.")
    assert (result.reason, result.error_type) == (
        StopReason.ERROR,
        "verifier_error",
    )  # was: success, verified
    assert "checks are plain defs, called unawaited" in result.note
