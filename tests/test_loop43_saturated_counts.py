"""A run's token tallies stop at the most a store holds, so its snapshot can always be loaded.

Each call's counts are checked (0 to 2**63 - 1), but their sum was not: a run whose calls (its own,
or a tool's `ctx.charge`) added up past 2**63 - 1 suspended with a snapshot that
`Snapshot.from_json` refused ("usage.input_tokens must be a count from 0 to 2**63 - 1"), so the
suspended run could never be resumed. Now the tallies saturate at 2**63 - 1 (a token budget, if
any, ran out long before).
"""

from __future__ import annotations

from agent import Agent, StopReason, tool
from agent.budget import MAX_COUNT
from agent.context import RunContext
from agent.models.base import ModelReply
from agent.models.scripted import ScriptedModel, call, finish
from agent.snapshot import Snapshot


@tool
def huge(ctx: RunContext) -> str:
    """Run a sub-agent that reports an enormous usage."""
    ctx.charge("claude-sonnet-4-5", ModelReply(content=[], input_tokens=2**62, output_tokens=2**62))
    return "done"


def test_a_run_whose_counts_add_up_past_a_stores_most_still_resumes() -> None:
    model = ScriptedModel(
        [[call("huge")], [call("huge")], [finish("need_help", "go on?")], [finish("done", "ok")]]
    )
    agent = Agent(name="a", model=model, tools=[huge])  # type: ignore[list-item]

    suspended = agent.run("t")

    assert suspended.reason is StopReason.NEED_HELP and suspended.snapshot is not None
    assert suspended.usage.input_tokens == suspended.usage.output_tokens == MAX_COUNT
    resumed = agent.resume(Snapshot.from_json(suspended.snapshot.to_json()), "yes")
    assert resumed.reason is StopReason.SUCCESS
    assert resumed.usage.input_tokens == MAX_COUNT
