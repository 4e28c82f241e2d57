"""A denial whose reason is blank is a denial with no reason, when resumed through the library too.

The runner, the service, the inbox and Temporal read a reason of only spaces as none (faces49);
`Agent.resume(snapshot, Denial("  "))` told the model "Denied by a person: . Do not retry this
call." Now it says that no reason was given, as every face does.
"""

from __future__ import annotations

import pytest

from agent import Agent, Denial, StopReason, tool
from agent.models.scripted import ScriptedModel, call, finish


@tool(needs_approval=True)
def push(branch: str) -> str:
    """Push the branch."""
    return f"pushed {branch}"


def _agent() -> Agent:
    steps = [[call("push", branch="main")], [finish("give_up", "not allowed to push")]]
    return Agent(name="ci", model=ScriptedModel(steps), tools=[push])


@pytest.mark.parametrize("reason", ["", "   ", " \t\n ", ". "])
def test_a_blank_reason_reaches_the_model_as_no_reason_given(reason: str) -> None:
    asked = _agent().run("push it")
    assert asked.reason is StopReason.NEED_HELP and asked.snapshot is not None
    resumed = _agent()
    result = resumed.resume(asked.snapshot, Denial(reason))
    assert result.reason is StopReason.GAVE_UP
    sent = str(resumed.model.requests[-1].messages)  # type: ignore[attr-defined]
    assert "Denied by a person: no reason given. Do not retry this call." in sent
    assert "Denied by a person: ." not in sent


def test_a_reason_keeps_its_words() -> None:
    asked = _agent().run("push it")
    assert asked.snapshot is not None
    resumed = _agent()
    resumed.resume(asked.snapshot, Denial("  wrong branch.  "))
    sent = str(resumed.model.requests[-1].messages)  # type: ignore[attr-defined]
    assert "Denied by a person: wrong branch. Do not retry this call." in sent
