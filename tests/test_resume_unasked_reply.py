"""A reply to a run that waits for none is refused, not dropped.

`agent.resume(cancelled_snapshot, Answer("..."))` went on as if no answer were given: the person's
words reached no one and nothing said so. The runner and Temporal already refused such replies; the
library now does too, and the run stays resumable without one.
"""

from __future__ import annotations

import pytest
from cancel_signals import SetOnCheck

from agent import Agent, Answer, Approval, Denial, SnapshotError, tool
from agent.models.scripted import ScriptedModel, call, finish, reply
from agent.snapshot import SnapshotKind


@tool
def look(x: int) -> str:
    """Look at x."""
    return f"saw {x}"


def _cancelled() -> tuple[Agent, ScriptedModel, object]:
    model = ScriptedModel([reply(call("look", x=1)), reply(call("look", x=2)), reply(finish("done", "ok"))])
    agent = Agent(name="looker", model=model, tools=[look])
    cut = agent.run("look twice", cancel=SetOnCheck(2))
    assert cut.reason == "cancelled" and cut.snapshot is not None
    assert cut.snapshot.kind is SnapshotKind.CANCELLED
    return agent, model, cut.snapshot


@pytest.mark.parametrize(
    "given",
    [Answer("use x=3"), "use x=3", Approval(), Denial("no")],
    ids=["answer", "text", "approval", "denial"],
)
def test_a_reply_to_a_cancelled_run_is_refused_and_nothing_runs(given: object) -> None:
    agent, model, snapshot = _cancelled()
    asked = len(model.requests)
    with pytest.raises(SnapshotError, match=r"waits for no answer or approval .* resume it without"):
        agent.resume(snapshot, given)  # type: ignore[arg-type]
    assert len(model.requests) == asked  # the model was not called

    result = agent.resume(snapshot)  # the run is still resumable, without a reply
    assert (result.reason, result.turns) == ("success", 3)


def test_approved_alone_is_refused_too() -> None:
    agent, _, snapshot = _cancelled()
    with pytest.raises(SnapshotError, match="waits for no answer or approval"):
        agent.resume(snapshot, approved=True)  # type: ignore[arg-type]
