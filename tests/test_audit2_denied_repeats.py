"""A call that needs approval, denied and made again with the same arguments, is a repeat like any
other (DESIGN.md, `no_progress`: the same call N times with no change in state): a denial changes
nothing, so the third denied `push(main)` ends the run instead of asking a person again and again
until the turn budget runs out. The detector is rebuilt from the journal on every resume, so the
snapshots here go through JSON as another process would read them."""

from __future__ import annotations

import dataclasses
from typing import Any

from agent import Agent, Approval, Budget, Denial, RunResult, Snapshot, tool
from agent.models.scripted import ScriptedModel, call, finish, reply

pushed: list[str] = []


@tool(needs_approval=True)
def push(branch: str) -> str:
    """Push a branch."""
    pushed.append(branch)
    return f"pushed {branch}"


def _agent(*replies: Any, fingerprint: Any = None) -> Agent:
    return Agent(
        name="pusher",
        model=ScriptedModel(list(replies)),
        tools=[push],
        budget=Budget(max_turns=25),
        fingerprint=fingerprint,
    )


def _through_json(result: RunResult) -> Snapshot:
    assert result.snapshot is not None
    return Snapshot.from_json(result.snapshot.to_json())


def _answer_each(agent: Agent, first: RunResult, answers: list[Any]) -> tuple[RunResult, int]:
    """Resume with each answer in turn while the run asks; the last result and how many were given."""
    result, given = first, 0
    while result.reason == "need_help" and given < len(answers):
        result = agent.resume(_through_json(result), answers[given])
        given += 1
    return result, given


def test_the_third_denial_of_the_same_call_ends_the_run_as_no_progress() -> None:
    agent = _agent(*[reply(call("push", branch="main"))] * 10, reply(finish("done", "pushed")))
    reasons = [Denial("no"), Denial("not today"), Denial("still no"), Denial("no"), Denial("no")]
    result, asked = _answer_each(agent, agent.run("ship it"), reasons)
    assert (result.reason, asked) == ("no_progress", 3)
    assert result.note.startswith("push called 3 times")


def test_with_a_fingerprint_denials_that_change_nothing_end_the_run_too() -> None:
    agent = _agent(*[reply(call("push", branch="main"))] * 10, fingerprint=lambda ctx: "same world")
    result, asked = _answer_each(agent, agent.run("ship it"), [Denial("no")] * 6)
    assert (result.reason, asked) == ("no_progress", 3)


def test_a_call_approved_after_denials_runs_and_the_run_goes_on() -> None:
    pushed.clear()
    agent = _agent(*[reply(call("push", branch="main"))] * 3, reply(finish("done", "pushed")))
    result, asked = _answer_each(agent, agent.run("ship it"), [Denial("no"), Denial("no"), Approval()])
    assert (result.reason, asked, pushed) == ("success", 3, ["main"])


def test_denied_calls_with_other_arguments_are_not_repeats() -> None:
    branches = ["a", "b", "c", "d"]
    agent = _agent(*[reply(call("push", branch=b)) for b in branches], reply(finish("give_up", "all denied")))
    result, asked = _answer_each(agent, agent.run("ship it"), [Denial("no")] * 4)
    assert (result.reason, asked) == ("gave_up", 4)


def test_a_run_whose_history_asked_again_keeps_asking_when_denials_are_not_counted() -> None:
    """A Temporal run started before denials counted (`count_denials` is `workflow.patched` there) replays
    as its worker ran it: the same call denied again is asked again, its results carrying no state."""
    agent = _agent(*[reply(call("push", branch="main"))] * 5, reply(finish("give_up", "all denied")))
    before = dataclasses.replace(agent, count_denials=lambda: False)
    result, asked = _answer_each(before, before.run("ship it"), [Denial("no")] * 5)
    assert (result.reason, asked) == ("gave_up", 5)
    assert result.snapshot is None or not any(getattr(e, "seen", "") for e in result.snapshot.journal)
