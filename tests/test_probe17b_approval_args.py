"""A call of a tool that needs approval, with arguments it cannot take (a name missing or unknown),
is answered with the error at once, as for any tool: no person is asked to approve a call that
could never run. Before, the run suspended on it, and an approval only brought the error (probe17b)."""

from __future__ import annotations

import pytest

from agent import Approval, StopReason, tool
from agent.models.scripted import call, finish

pushed: list[str] = []


@tool(needs_approval=True)
def push(branch: str) -> str:
    """Push the branch."""
    pushed.append(branch)
    return f"pushed {branch}"


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [({}, "missing a required argument: 'branch'"), ({"branch": "main", "force": True}, "'force'")],
)
def test_a_call_that_could_never_run_is_not_put_to_a_person(make_agent, arguments, problem) -> None:
    pushed.clear()
    steps = [[call("push", **arguments)], [finish("give_up", "cannot push")]]
    agent = make_agent(*steps, tools=[push])
    result = agent.run("Push main.")
    assert result.reason is StopReason.GAVE_UP, result.note  # not need_help
    (answer,) = agent.model.requests[1].messages[-1]["content"]
    assert (
        answer["is_error"]
        and "bad arguments for 'push'" in answer["content"]
        and problem in answer["content"]
    )
    assert pushed == []


def test_a_call_it_can_take_still_waits_for_approval(make_agent) -> None:
    pushed.clear()
    agent = make_agent([call("push", branch="main")], [finish("done", "pushed")], tools=[push])
    first = agent.run("Push main.")
    assert first.reason is StopReason.NEED_HELP and pushed == []
    assert first.suspension and first.suspension.pending and first.suspension.pending.name == "push"
    assert agent.resume(first.snapshot, Approval()).reason is StopReason.SUCCESS
    assert pushed == ["main"]
