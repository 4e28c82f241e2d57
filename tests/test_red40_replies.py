"""red40: a typed reply whose text is None is refused with the error every other non-string gets."""

from __future__ import annotations

import pytest

from agent import Agent, Answer, Denial, tool
from agent.errors import ConfigError
from agent.models.scripted import ScriptedModel, call, finish


@tool(needs_approval=True)
def pay(to: str) -> str:
    """Pay someone."""
    return f"paid {to}"


def _asking() -> Agent:
    return Agent(name="asks", model=ScriptedModel([[finish("need_help", "which?")], [finish("done", "ok")]]))


def _approving() -> Agent:
    return Agent(
        name="pays", model=ScriptedModel([[call("pay", to="x")], [finish("done", "ok")]]), tools=[pay]
    )


@pytest.mark.parametrize(("make", "reply"), [(_asking, Answer(None)), (_approving, Denial(None))])  # type: ignore[arg-type]
def test_a_reply_of_none_is_a_config_error_and_the_run_still_waits(make: object, reply: object) -> None:
    """Before: `agent.resume(snapshot, Answer(None))` raised AttributeError ('NoneType' object has
    no attribute 'strip'), and Denial(None) was taken as a reason."""
    agent = make()  # type: ignore[operator]
    waiting = agent.run("do it")
    assert waiting.reason == "need_help"
    with pytest.raises(
        ConfigError, match=r"a reply's text must be a string: pass Answer\('...'\).* not NoneType"
    ):
        agent.resume(waiting.snapshot, reply)
    done = agent.resume(waiting.snapshot, Answer("the first") if make is _asking else Denial("no"))
    assert done.reason == "success"
