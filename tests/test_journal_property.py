"""Property: any run, suspended and answered through a store any number of times, ends as the
same run carried through in one process without a store.

Hypothesis draws the model's turns (tool calls, some failing, calls that need approval,
questions) and the answers a person gives (answers, approvals, denials). The reference resumes
each suspension in memory; the durable run goes through a `Runner` whose store is closed and
reopened between segments, so every answer is read back from the saved journal. Both must make
the same model requests and run the same tool calls: a recorded call run again (its result lost
by the store) gives the same text, so only the calls made show it. Both run on one stopped clock, so
the journal each model request was made from must be the same entry for entry: a reply's usage, its
provider stop reason and its opaque provider blocks (thinking, kept verbatim) come back from the
store as they went in.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent import Agent, Answer, Approval, Budget, Denial, HumanReply, RunResult, StopReason, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.models._messages import messages_of
from agent.models.scripted import ScriptedModel, call, finish, reply

pytestmark = pytest.mark.slow

Turn = list[tuple[str, int]]  # ("echo" | "approve" | "ask", n)


class Stopped:
    """A clock that never moves: both runs take the same times, so their journals compare whole."""

    def time(self) -> float:
        return 1_800_000_000.0

    def monotonic(self) -> float:
        return 0.0


CLOCK = Stopped()


RAN: list[str] = []  # every tool call made, in order (one run at a time)


@tool
def echo(n: int) -> str:
    """Say a number back; 3 fails (an error result)."""
    RAN.append(f"echo {n}")
    if n == 3:
        raise ValueError("three is not echoed")
    return f"echo {n}"


@tool(needs_approval=True)
def approve(n: int) -> str:
    """Do something a person must approve."""
    RAN.append(f"approve {n}")
    return f"approved action {n}"


def steps_of(turns: list[Turn]) -> list[Any]:
    """Each turn a reply of its calls, its usage drawn from it; odd turns think first (a block that must
    go back to the provider as it came, signature and all)."""
    steps: list[Any] = []
    for i, turn in enumerate(turns):
        blocks = [{"type": "thinking", "thinking": f"turn {i}", "signature": f"sig{i}=="}] if i % 2 else []
        for kind, n in turn:
            if kind == "ask":
                blocks.append(finish("need_help", f"question {n}?"))
            else:
                blocks.append(call(kind, n=n))
        used = sum(n for _, n in turn)
        steps.append(reply(*blocks, input_tokens=100 + i, output_tokens=7 * used + len(turn)))
    return [*steps, [finish("done", "all done")]]


def build(state: dict[str, Any]) -> Agent:
    return Agent(
        "prop",
        ScriptedModel(steps_of(state["turns"])),
        tools=[echo, approve],
        budget=Budget(max_turns=50, max_seconds=None),
        clock=CLOCK,
    )


def reply_for(result: RunResult, answers: list[str]) -> tuple[HumanReply, str | None, bool | None]:
    """The next answer to draw, as a typed reply and as the runner's answer/approved pair."""
    choice = answers.pop(0) if answers else "answer"
    assert result.suspension is not None
    if result.suspension.pending is None:
        return Answer(f"said {choice}"), f"said {choice}", None
    if choice == "deny":
        return Denial("not now"), "not now", False
    return Approval(), None, True


def in_memory(turns: list[Turn], answers: list[str]) -> tuple[RunResult, Agent]:
    agent = build({"turns": turns})
    result = agent.run("do the turns")
    while result.reason is StopReason.NEED_HELP:
        human, _, _ = reply_for(result, answers)
        assert result.snapshot is not None
        result = agent.resume(result.snapshot, human)
    return result, agent


def through_store(url: str, turns: list[Turn], answers: list[str]) -> tuple[RunResult, list[Agent]]:
    catalog = Catalog()
    built: list[Agent] = []

    def tracked(state: dict[str, Any]) -> Agent:
        built.append(build(state))
        return built[-1]

    catalog.register("prop", tracked)

    def segment(how: Any) -> RunResult:
        store = open_store(url)  # a new store (connection) for every segment: nothing kept in memory
        try:
            return asyncio.run(how(Runner(store, catalog, clock=CLOCK)))
        finally:
            store.close()

    result = segment(lambda r: r.start("prop", "do the turns", state={"turns": turns}))
    while result.reason is StopReason.NEED_HELP:
        _, answer, approved = reply_for(result, answers)
        result = segment(lambda r, a=answer, ok=approved, i=result.run_id: r.resume(i, a, approved=ok))
    return result, built


kinds = st.sampled_from(["echo", "echo", "approve", "ask"])
turn = st.lists(st.tuples(kinds, st.integers(0, 3)), min_size=1, max_size=3)
turns = st.lists(turn, min_size=0, max_size=5)
answers = st.lists(st.sampled_from(["approve", "deny", "answer"]), max_size=10)


@pytest.mark.parametrize("backend", pg.BACKENDS)
def test_a_run_through_the_store_ends_as_the_same_run_in_memory(backend: str, tmp_path_factory: Any) -> None:
    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(turns=turns, answers=answers)
    def check(turns: list[Turn], answers: list[str]) -> None:
        url = pg.url_for(backend, Path(tmp_path_factory.mktemp("prop")))
        RAN.clear()
        expected, reference = in_memory(turns, list(answers))
        ran_in_memory = list(RAN)
        RAN.clear()
        actual, durable = through_store(url, turns, list(answers))
        assert ran_in_memory == RAN  # no recorded call ran again, none was lost
        assert (actual.reason, actual.output, actual.turns) == (
            expected.reason,
            expected.output,
            expected.turns,
        )
        assert actual.verifier_failures == expected.verifier_failures
        assert actual.usage == expected.usage
        journals = [list(r.journal) for agent in durable for r in agent.model.requests]
        assert journals == [list(r.journal) for r in reference.model.requests]  # entry for entry
        seen = [r.messages for agent in durable for r in agent.model.requests]  # every request, in order
        assert seen == [r.messages for r in reference.model.requests]
        assert seen == [messages_of(r.journal) for r in reference.model.requests]

    check()
