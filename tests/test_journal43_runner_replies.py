"""The runner takes a person's reply typed, as `Agent.resume` does: `Answer("...")`, `Approval()` or
`Denial("why")` (the journal's types), beside the older `answer`/`approved` pair; one that does not fit
what the run waits for is refused before the run is claimed (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from agent import Agent, Answer, Approval, Budget, Denial, StopReason, tool
from agent.durable.runner import AnswerError, Catalog, Runner
from agent.durable.store import RunStatus, RunStore, open_store
from agent.journal import Answered
from agent.models.scripted import ScriptedModel, call, finish

SENT: list[int] = []


@tool(needs_approval=True)
def wire(amount: int) -> str:
    """Send money (needs approval)."""
    SENT.append(amount)
    return f"wired {amount}"


def payer(state: dict[str, Any]) -> Agent:
    return Agent("payer", ScriptedModel([[call("wire", amount=5)], [finish("done", "paid")]]), tools=[wire])


def asker(state: dict[str, Any]) -> Agent:
    script = [[finish("need_help", "Which region?")], [finish("done", "region noted")]]
    return Agent("asker", ScriptedModel(script), budget=Budget(max_turns=5))


@pytest.fixture
def runner(store_url: str) -> Iterator[Runner]:
    catalog = Catalog()
    catalog.register("payer", payer)
    catalog.register("asker", asker)
    store = open_store(store_url)
    yield Runner(store, catalog)
    store.close()


def waiting(runner: Runner, agent: str) -> str:
    first = asyncio.run(runner.start(agent, "the task"))
    assert first.reason is StopReason.NEED_HELP
    return first.run_id


def answered(store: RunStore, run_id: str) -> Answered:
    snap = store.snapshot(run_id)
    assert snap is not None
    return [e for e in snap.journal if isinstance(e, Answered)][-1]


def test_an_approval_runs_the_pending_call(runner: Runner) -> None:
    SENT.clear()
    run_id = waiting(runner, "payer")
    done = asyncio.run(runner.resume(run_id, Approval()))
    assert (done.reason, done.output, SENT) == (StopReason.SUCCESS, "paid", [5])
    assert answered(runner.store, run_id).reply == Approval()


def test_a_denial_keeps_its_reason_and_runs_nothing(runner: Runner) -> None:
    SENT.clear()
    run_id = waiting(runner, "payer")
    done = asyncio.run(runner.resume(run_id, Denial("over the limit")))
    assert done.reason is StopReason.SUCCESS and SENT == []
    assert answered(runner.store, run_id).reply == Denial("over the limit")


def test_an_answer_goes_to_the_question(runner: Runner) -> None:
    run_id = waiting(runner, "asker")
    done = asyncio.run(runner.resume(run_id, Answer("EU")))
    assert done.reason is StopReason.SUCCESS
    assert answered(runner.store, run_id).reply == Answer("EU")


@pytest.mark.parametrize(
    ("agent", "reply", "approved", "message"),
    [
        ("payer", Answer("yes"), None, "waits for approval of the call 'wire'"),
        ("asker", Approval(), None, "waits for an answer to a question, not for an approval"),
        ("asker", Answer("  "), None, r"waits for an answer to 'Which region\?': give one"),
        ("payer", Approval(), False, r"Approval\(\.\.\.\) and approved=False, which say different things"),
        ("payer", Denial(None), None, "a reply's text must be a string"),  # type: ignore[arg-type]
    ],
)
def test_a_typed_reply_that_does_not_fit_is_refused_and_the_run_still_waits(
    runner: Runner, agent: str, reply: Any, approved: bool | None, message: str
) -> None:
    run_id = waiting(runner, agent)
    with pytest.raises(AnswerError, match=message):
        runner.claim(run_id, reply, approved)
    record = runner.store.get(run_id)
    assert record is not None and record.status is RunStatus.WAITING
