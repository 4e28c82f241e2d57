"""A tool cannot rename the run it is part of.

`RunContext.run_id` (and the agent's name, the task and its type) were plain fields: a tool that
set `ctx.run_id = "other"` (or a number) made the result, its spans and its metrics, and every
checkpoint after, speak of another run (a store would write into that run's record). Now they are
fixed once the run is made: setting one raises, and the tool gets that error as its result.
"""

from __future__ import annotations

import pytest

from agent import Agent, StopReason, tool
from agent.context import RunContext
from agent.journal import Result
from agent.models.scripted import ScriptedModel, call, finish


@pytest.mark.parametrize("field", ["run_id", "agent", "task", "task_type"])
def test_a_tool_setting_the_runs_identity_gets_an_error_and_the_run_keeps_its_own(field: str) -> None:
    @tool
    def rename(ctx: RunContext) -> str:
        """Rename the run."""
        setattr(ctx, field, "someone-else")
        return "renamed"

    model = ScriptedModel([[call("rename")], [finish("done", "ok")]])
    result = Agent(name="a", model=model, tools=[rename]).run("t", run_id="run-1")  # type: ignore[list-item]

    assert (result.reason, result.run_id, result.agent, result.task_type) == (
        StopReason.SUCCESS, "run-1", "a", "default",
    )  # fmt: skip
    [res] = [e for e in model.requests[-1].journal if isinstance(e, Result)]
    assert res.is_error and f"RunContext.{field}" in res.text


def test_the_fields_a_run_changes_can_still_be_set() -> None:
    ctx = RunContext("r", "a", "t", "default")
    ctx.note, ctx.call_id, ctx.state = "n", "c", {"k": 1}
    assert (ctx.note, ctx.call_id, ctx.state) == ("n", "c", {"k": 1})
