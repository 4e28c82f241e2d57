"""A tool gets each number as the Python type its hint names: JSON has one number type.

The arguments were checked against the hints, but a whole `3.0` for an `n: int` reached the tool as
the float 3.0 (`range(n)`, `"ab"[n]` and `n.bit_length()` then fail inside the tool), a `2` for a
`x: float` as an int, and a `Literal[1, 2]`'s or a `list[int]`'s whole floats likewise. Now they
arrive as `int` and `float`; a non-integral number for an `int`, text, a boolean, or an integer no
float holds is the call's error result, which says what was wanted, and the run goes on.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import pytest

from agent import Agent, Approval, RunContext, StopReason, tool
from agent.journal import Result
from agent.models.scripted import ScriptedModel, call, finish
from agent.tools import Tool, execute

got: list[dict[str, Any]] = []


@tool
def take(
    n: int = 0,
    x: float = 0.0,
    pick: Literal[1, 2, 3] = 1,
    ns: list[int] | None = None,
    xs: list[float] | None = None,
    maybe: int | None = None,
    flag: bool = False,
) -> str:
    """Take numbers."""
    got.append({"n": n, "x": x, "pick": pick, "ns": ns, "xs": xs, "maybe": maybe, "flag": flag})
    return "taken"


def run_with(t: Tool, **arguments: Any) -> tuple[str, str | None]:
    got.clear()
    outcome = asyncio.run(execute(t, arguments, RunContext("r", "a", "t", "x")))
    return outcome.text, outcome.error_type


def typed(values: dict[str, Any]) -> dict[str, Any]:
    """Each value with its type, so that 3 and 3.0 (equal in Python) tell apart."""
    return {
        k: (v, type(v)) if not isinstance(v, list) else [(i, type(i)) for i in v] for k, v in values.items()
    }


def test_whole_floats_arrive_as_ints_and_ints_as_floats() -> None:
    assert run_with(take, n=3.0, x=2, pick=2.0, ns=[1.0, 2], xs=[1, 2.5], maybe=4.0) == ("taken", None)

    want = {"n": 3, "x": 2.0, "pick": 2, "ns": [1, 2], "xs": [1.0, 2.5], "maybe": 4, "flag": False}
    assert typed(got[0]) == typed(want)


def test_values_that_fit_as_they_are_reach_the_tool_unchanged() -> None:
    ns = [1, 2]
    assert run_with(take, n=3, x=2.5, ns=ns) == ("taken", None)
    # the list as it came, a copy of its own to change (the journal keeps the model's)
    assert got[0]["ns"] == ns and type(got[0]["ns"]) is list
    assert type(got[0]["n"]) is int and type(got[0]["x"]) is float


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"n": 3.5}, "'n' must be an integer; got 3.5 (number)"),
        ({"n": "3"}, "'n' must be an integer; got \"3\" (string)"),
        ({"n": True}, "'n' must be an integer; got true (boolean)"),
        ({"n": float("inf")}, "'n' must be an integer; got Infinity (number)"),
        ({"flag": 1.0}, "'flag' must be a boolean; got 1.0 (number)"),
        ({"flag": 1}, "'flag' must be a boolean; got 1 (integer)"),
        ({"x": True}, "'x' must be a number; got true (boolean)"),
        ({"x": 2**1100}, "'x' must be a number a float holds; got an integer of 1101 bits"),
        ({"pick": 2.5}, "'pick' must be one of 1, 2, 3; got 2.5 (number)"),
        ({"ns": [1, 2.5]}, "'ns' item 1 must be an integer; got 2.5 (number)"),
    ],
)
def test_a_number_the_hint_cannot_take_is_a_bad_argument_and_the_tool_does_not_run(
    arguments: dict[str, Any], said: str
) -> None:
    assert run_with(take, **arguments) == (f"Error: bad arguments for 'take': {said}", "bad_arguments")
    assert got == []


def test_in_a_run_the_model_is_told_and_its_next_call_gets_an_int() -> None:
    model = ScriptedModel([[call("take", n=2.5)], [call("take", n=2.0)], [finish("done", "ok")]])
    got.clear()

    result = Agent(name="a", model=model, tools=[take]).run("t")

    assert result.reason is StopReason.SUCCESS and result.turns == 3
    told = [e for e in model.requests[1].journal if isinstance(e, Result)][-1]
    assert (
        told.is_error
        and told.text == "Error: bad arguments for 'take': 'n' must be an integer; got 2.5 (number)"
    )
    assert [(g["n"], type(g["n"])) for g in got] == [(2, int)]


def test_an_approved_call_gets_its_whole_float_as_an_int() -> None:
    seen: list[Any] = []

    @tool(needs_approval=True)
    def pay(cents: int) -> str:
        """Pay."""
        seen.append(cents)
        return "paid"

    agent = Agent(
        name="a", model=ScriptedModel([[call("pay", cents=500.0)], [finish("done", "ok")]]), tools=[pay]
    )
    waiting = agent.run("t")
    assert waiting.reason is StopReason.NEED_HELP and waiting.snapshot is not None

    assert agent.resume(waiting.snapshot, Approval()).reason is StopReason.SUCCESS
    assert seen == [500] and type(seen[0]) is int
