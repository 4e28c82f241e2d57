"""A verifier or per-turn check that fails oddly still ends the run as `verifier_error`, saying so.

A verifier (or a check) that raised an exception whose `__str__` raises ended the run with the
note "RuntimeError: str" and error type `RuntimeError`, as if the loop itself had broken; one that
returned an object whose `__repr__` raises was reported as having raised ("A verifier raised
RuntimeError: repr"), not as returning the wrong thing. Now the note names the verifier's own
exception (its message marked unreadable) or the type it returned.
"""

from __future__ import annotations

from typing import Any

from agent import Agent, StopReason
from agent.context import RunContext
from agent.models.scripted import ScriptedModel, call, finish


class Garbled(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str")


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("repr")


def _raises(ctx: RunContext) -> list[str]:
    raise Garbled()


async def _raises_async(ctx: RunContext) -> list[str]:
    raise Garbled()


def _returns_unprintable(ctx: RunContext) -> Any:
    return Unprintable()


def _run(**kw: Any) -> Any:
    model = ScriptedModel([[finish("done", "ok")], [finish("give_up", "x")]])
    return Agent(name="a", model=model, **kw).run("t")


def test_a_verifier_raising_an_unprintable_exception_is_a_verifier_error() -> None:
    for verifier in (_raises, _raises_async):
        result = _run(verifiers=[verifier])
        assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
        assert result.note.startswith("A verifier raised Garbled")


def test_a_verifier_returning_an_unprintable_object_is_told_it_returned_the_wrong_type() -> None:
    result = _run(verifiers=[_returns_unprintable])

    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "returned" in result.note and "Unprintable" in result.note and "list" in result.note


def test_a_per_turn_check_raising_an_unprintable_exception_is_a_verifier_error() -> None:
    model = ScriptedModel([[call("nothing")], [finish("give_up", "x")]])
    result = Agent(name="a", model=model, checks=[_raises]).run("t")  # type: ignore[list-item]

    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert result.note.startswith("A per-turn check raised Garbled")
