"""A reply given with more budget to a run that stopped at a limit is refused, not dropped.

`agent.resume(limited_snapshot, Answer("use the cache"), more=Extension(turns=5))` went on with the
extension and dropped the answer unread: the model never saw it and nothing said so (a cancelled
run's resume already refused a reply). The run waits for no answer; it stays resumable without one.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_runner import Workers, counters  # noqa: F401 (the fixture)
from test_runner_agents import counted, counter_state

from agent import Agent, Answer, Approval, Budget, Denial, Extension, SnapshotError, StopReason, tool
from agent.durable.store import NotClaimable, RunStatus
from agent.models.scripted import ScriptedModel, call, finish
from agent.snapshot import Snapshot, SnapshotKind


@tool
def look(x: int) -> str:
    """Look at x."""
    return f"saw {x}"


def _limited() -> tuple[Agent, ScriptedModel, Snapshot]:
    model = ScriptedModel([[call("look", x=1)], [call("look", x=2)], [finish("done", "ok")]])
    agent = Agent(name="looker", model=model, tools=[look], budget=Budget(max_turns=1))
    stopped = agent.run("look twice")
    assert (stopped.reason, stopped.limit) == (StopReason.LIMIT, "turns") and stopped.snapshot is not None
    assert stopped.snapshot.kind is SnapshotKind.LIMITED
    return agent, model, stopped.snapshot


@pytest.mark.parametrize(
    ("reply", "approved"),
    [(Answer("use x=3"), None), ("use x=3", None), (Approval(), None), (Denial("no"), None), (None, True)],
    ids=["answer", "text", "approval", "denial", "approved"],
)
def test_a_reply_with_more_budget_to_a_limit_stop_is_refused_and_nothing_runs(
    reply: object, approved: bool | None
) -> None:
    agent, model, snapshot = _limited()
    asked = len(model.requests)
    with pytest.raises(SnapshotError, match=r"waits for no answer or approval .*limited.* resume it without"):
        agent.resume(snapshot, reply, approved=approved, more=Extension(turns=5))  # type: ignore[arg-type]
    assert len(model.requests) == asked  # the model was not called

    result = agent.resume(snapshot, more=Extension(turns=5))  # still resumable, without a reply
    assert (result.reason, result.turns) == (StopReason.SUCCESS, 3)


@pytest.mark.parametrize(
    ("answer", "approved"), [("use the cache", None), (None, True)], ids=["answer", "approved"]
)
def test_the_runner_refuses_a_reply_given_with_more_budget_and_changes_nothing(
    counters: Workers,  # noqa: F811
    tmp_path: Path,
    answer: str | None,
    approved: bool | None,
) -> None:
    runner = counters.new()
    folder = tmp_path / "r"
    first = asyncio.run(runner.start("counter", "count", state=counter_state(folder, "plain", max_turns=1)))
    assert (first.reason, first.limit) == (StopReason.LIMIT, "turns")

    with pytest.raises(
        NotClaimable, match="waits for no answer or approval: give it more budget without one"
    ):
        runner.claim(first.run_id, answer, approved, more=Extension(turns=5))
    record = runner.store.get(first.run_id)
    assert record is not None and (record.status, record.stop_reason) == (
        RunStatus.FINISHED,
        StopReason.LIMIT,
    )

    done = asyncio.run(runner.resume(first.run_id, more=Extension(turns=5)))  # without one, it goes on
    assert (done.reason, done.turns) == (StopReason.SUCCESS, 3) and counted(folder) == [1, 2]
