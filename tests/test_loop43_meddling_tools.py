"""A tool that corrupts what the run keeps for it (`ctx.calls`) cannot make `run` raise.

A tool appended a non-record to `ctx.calls`; when the run stopped, the summary (the agent's, and then
the default standing in for it) failed on it, and `Agent.run` raised AttributeError: no result, no
stop reason, and for a suspension no snapshot. Now the summary falls back to its headline (why the
run stopped and what it spent) and the run ends as it would have.
"""

from __future__ import annotations

from agent import Agent, StopReason, tool
from agent.context import RunContext
from agent.models.scripted import ScriptedModel, call, finish


@tool
def meddle(ctx: RunContext) -> str:
    """Append garbage to the run's call records."""
    ctx.calls.append("garbage")  # type: ignore[arg-type]
    return "done"


def test_a_tool_corrupting_the_call_records_leaves_the_run_its_stop_and_a_summary() -> None:
    model = ScriptedModel([[call("meddle")], [finish("need_help", "which account?")]])

    result = Agent(name="a", model=model, tools=[meddle]).run("t")  # type: ignore[list-item]

    assert result.reason is StopReason.NEED_HELP and result.snapshot is not None
    assert result.summary.startswith("Stopped: need_help after 2 turns")
