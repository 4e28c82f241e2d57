"""A person's reply is news to the progress detector: a run that idled before it asked never ends as
`no_progress` on the answer's own turn, before the model has read the answer (the answer was lost)."""

from __future__ import annotations

from typing import Any

import pytest
from cancel_signals import SetOnCheck

from agent import Agent, Answer, Approval, Denial, HelpPolicy, ProgressDetector, tool
from agent.models.base import ModelRequest
from agent.models.scripted import ScriptedModel, call, finish, reply, say


@tool
def look(x: int) -> str:
    """Look at x."""
    return "the same"


@tool(needs_approval=True)
def push(branch: str) -> str:
    """Push a branch."""
    return "pushed"


def _agent(ask: Any, *later: Any, help: HelpPolicy | None = None) -> tuple[Agent, ScriptedModel]:
    """Two idle turns (no tool call), then `ask`, with an idle limit of 3 turns."""
    model = ScriptedModel([reply(say("hmm")), reply(say("still hmm")), reply(ask), *later])
    agent = Agent(
        name="asker",
        model=model,
        tools=[look, push],
        progress=lambda: ProgressDetector(max_idle_turns=3),
        help=help or HelpPolicy(),
    )
    return agent, model


def _read_by_model(request: ModelRequest, words: str) -> bool:
    return words in repr(request.messages)


@pytest.mark.parametrize(
    ("ask", "given", "words"),
    [
        (finish("need_help", "Which file?"), Answer("a.py"), "a.py"),
        (call("push", branch="main"), Denial("not on Fridays"), "not on Fridays"),
    ],
    ids=["answer", "denial"],
)
def test_a_reply_after_idle_turns_reaches_the_model(ask: Any, given: Any, words: str) -> None:
    agent, model = _agent(ask, reply(finish("done", "ok")))
    first = agent.run("fix it")
    assert first.reason == "need_help" and first.snapshot is not None
    result = agent.resume(first.snapshot, given)
    assert (result.reason, result.note) == ("success", "")
    assert _read_by_model(model.requests[-1], words)
    assert result.turns == 4


def test_the_help_policys_default_answer_reaches_the_model_too() -> None:
    policy = HelpPolicy(wait_seconds=1, on_timeout="resume", default_answer="Nobody came; go on alone.")
    agent, model = _agent(finish("need_help", "Which file?"), reply(finish("done", "ok")), help=policy)
    first = agent.run("fix it")
    assert first.suspension is not None and first.snapshot is not None
    result = agent.expire(first.snapshot, now=first.suspension.deadline + 5)
    assert result.reason == "success"
    assert _read_by_model(model.requests[-1], "go on alone")


def test_a_run_resumed_again_counts_the_answer_as_news_as_the_first_segment_did() -> None:
    """The detector rebuilt from the journal (a later resume, a recovery) agrees with the live one:
    after the answer, one idle turn and then a cancellation, one more idle turn is the 2nd of 3."""
    agent, _ = _agent(
        finish("need_help", "Which file?"),
        reply(say("reading")),
        reply(say("thinking")),
        reply(finish("done", "ok")),
    )
    first = agent.run("fix it")
    assert first.snapshot is not None
    cut = agent.resume(first.snapshot, Answer("a.py"), cancel=SetOnCheck(2))
    assert (cut.reason, cut.turns) == ("cancelled", 4)
    assert cut.snapshot is not None
    result = agent.resume(cut.snapshot)
    assert (result.reason, result.turns) == ("success", 6)


def test_idle_turns_after_the_answer_still_end_the_run() -> None:
    """The answer resets the idle count, it does not switch the rule off."""
    agent, _ = _agent(
        finish("need_help", "Which file?"), reply(say("a")), reply(say("b")), reply(say("c")), reply(say("d"))
    )
    first = agent.run("fix it")
    assert first.snapshot is not None
    result = agent.resume(first.snapshot, Answer("a.py"))
    assert (result.reason, result.turns) == ("no_progress", 6)


def test_an_approved_call_counts_as_before() -> None:
    agent, _ = _agent(call("push", branch="main"), reply(finish("done", "ok")))
    first = agent.run("fix it")
    assert first.snapshot is not None
    assert agent.resume(first.snapshot, Approval()).reason == "success"
