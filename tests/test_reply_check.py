"""One check of a person's reply (`reply_problem`): the loop's resume and the runner refuse the same
replies, for the same reason (the Temporal workflow's validators call it too: tests/test_temporal.py)."""

from __future__ import annotations

import pytest

from agent import SnapshotError
from agent.agent import check_reply
from agent.durable.runner import AnswerError, check_answer
from agent.durable.store.base import RunRecord, RunStatus
from agent.journal import Answer, Approval, Denial, HumanReply, reply_problem
from agent.stops import PendingAction, Suspension

QUESTION = "Which region: EU or US?"
CALL = PendingAction("t1", "wire", {"amount": 5})

CASES: list[tuple[PendingAction | None, HumanReply | None, str | None]] = [
    (None, Answer("EU"), None),
    (None, Answer("  "), f"waits for an answer to {QUESTION!r}: give one"),
    (None, None, f"waits for an answer to {QUESTION!r}: give one"),
    (None, Approval(), "waits for an answer to a question, not for an approval: answer it"),
    (None, Denial("no"), "waits for an answer to a question, not for an approval: answer it"),
    (CALL, Approval(), None),
    (CALL, Denial(""), None),
    (CALL, Denial("too much"), None),
    (CALL, Answer("yes"), "waits for approval of the call 'wire': approve or deny it"),
    (CALL, None, "waits for approval of the call 'wire': approve or deny it"),
]


@pytest.mark.parametrize(("pending", "reply", "problem"), CASES)
def test_the_one_check_says_what_a_waiting_run_takes(pending, reply, problem) -> None:
    assert reply_problem(reply, pending.name if pending else None, QUESTION) == problem


def as_pair(reply: HumanReply | None) -> tuple[str | None, bool | None]:
    if isinstance(reply, Answer):
        return reply.text, None
    if isinstance(reply, Denial):
        return reply.reason, False
    return None, (True if isinstance(reply, Approval) else None)


@pytest.mark.parametrize(("pending", "reply", "problem"), CASES)
def test_the_loop_and_the_runner_refuse_alike(pending, reply, problem) -> None:
    suspension = Suspension(QUESTION, deadline=2e9, suspended_at=1e9, pending=pending)
    record = RunRecord(
        "r1", "agent", "task", "default", RunStatus.WAITING, {}, 1e9, 1e9, question=QUESTION, pending=pending
    )
    if problem is None:
        check_reply(suspension, reply)
        check_answer(record, *as_pair(reply))
        return
    with pytest.raises(SnapshotError) as by_loop:
        check_reply(suspension, reply)
    with pytest.raises(AnswerError) as by_runner:
        check_answer(record, *as_pair(reply))
    assert str(by_loop.value).startswith(f"the run {problem} (pass ")
    assert str(by_runner.value) == f"run r1 {problem}"
