"""Approving a call the resuming agent has no tool for is refused before anything runs.

`agent.resume(snapshot, Approval())` by an agent whose tools no longer hold the pending call's (a
deployment that dropped or renamed it) took the approval and ended the run `error` for good
("SnapshotError: agent 't' has no tool 'push' to run after approval"): a person's approval spent on
a run that could never go on. Now it is a `SnapshotError` out of `resume`, as an edited pending call
is, and the run still waits: an agent that has the tool approves it, or a denial goes on.
"""

from __future__ import annotations

import pytest

from agent import Agent, Approval, Denial, SnapshotError, StopReason, tool
from agent.models.scripted import ScriptedModel, call, finish


@tool(needs_approval=True)
def push(branch: str) -> str:
    """Push the branch."""
    return f"pushed {branch}"


@tool
def look(path: str) -> str:
    """Look at a file."""
    return f"read {path}"


def _steps() -> list[object]:
    return [[call("push", branch="main")], [finish("done", "pushed")]]


def test_an_approval_for_a_tool_the_agent_lacks_is_refused_and_the_run_still_waits() -> None:
    asked = Agent(name="ci", model=ScriptedModel(_steps()), tools=[look, push]).run("push it")
    assert asked.reason is StopReason.NEED_HELP and asked.snapshot is not None

    without = Agent(name="ci", model=ScriptedModel(_steps()), tools=[look])
    with pytest.raises(SnapshotError, match=r"has no tool 'push' to run: .* or deny it; nothing was run"):
        without.resume(asked.snapshot, Approval())  # ended the run `error` before
    assert without.model.requests == []  # type: ignore[attr-defined]

    denied = without.resume(asked.snapshot, Denial("not from this deployment"))
    assert denied.reason is StopReason.SUCCESS
    approved = Agent(name="ci", model=ScriptedModel(_steps()), tools=[look, push]).resume(
        asked.snapshot, Approval()
    )
    assert (approved.reason, approved.output) == (StopReason.SUCCESS, "pushed")
