"""A model's arguments held to the schema `@tool` wrote from the type hints: a value of another type,
a choice outside a `Literal`, a list item of the wrong type is the call's `bad_arguments` error and
the tool never runs with it (the API does not hold a model to a tool's schema)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import pytest

from agent import Agent, RunContext, StopReason, Tool, tool
from agent.models.scripted import ScriptedModel, call, finish
from agent.tools import execute

ran: list[dict[str, Any]] = []


@tool
def set_mode(mode: Literal["read", "write"], count: int = 1, ratio: float = 0.5) -> str:
    """Set the mode."""
    ran.append({"mode": mode, "count": count, "ratio": ratio})
    return "ok"


@tool
def tag(ids: list[int], label: str | None = None, extra: dict = None, note=None) -> str:  # type: ignore[assignment]  # noqa: RUF013
    """Tag rows."""
    ran.append({"ids": ids, "label": label, "extra": extra, "note": note})
    return "tagged"


def call_with(t: Tool, **arguments: Any) -> tuple[str, str | None]:
    ran.clear()
    outcome = asyncio.run(execute(t, arguments, RunContext("r", "a", "t", "x")))
    return outcome.text, outcome.error_type


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"mode": "delete"}, '\'mode\' must be one of "read", "write"; got "delete" (string)'),
        ({"mode": "read", "count": "5"}, "'count' must be an integer; got \"5\" (string)"),
        ({"mode": "read", "count": True}, "'count' must be an integer; got true (boolean)"),
        ({"mode": "read", "count": 2.5}, "'count' must be an integer; got 2.5 (number)"),
        ({"mode": "read", "ratio": "half"}, "'ratio' must be a number; got \"half\" (string)"),
        ({"mode": None}, '\'mode\' must be one of "read", "write"; got null (null)'),
    ],
)
def test_a_value_the_hints_do_not_take_is_a_bad_argument_and_the_tool_does_not_run(
    arguments: dict[str, Any], said: str
) -> None:
    text, error_type = call_with(set_mode, **arguments)
    assert error_type == "bad_arguments" and text == f"Error: bad arguments for 'set_mode': {said}"
    assert ran == []


def test_values_the_hints_take_run_as_before() -> None:
    assert call_with(set_mode, mode="write", count=3.0, ratio=1) == ("ok", None)  # JSON's 3.0 is an integer
    assert ran == [{"mode": "write", "count": 3, "ratio": 1.0}]  # as the hints' types (loop44)
    assert type(ran[0]["count"]) is int and type(ran[0]["ratio"]) is float


def test_list_items_are_checked_and_null_goes_where_none_is_taken() -> None:
    text, error_type = call_with(tag, ids=[1, "2"])
    assert (error_type, text) == (
        "bad_arguments",
        "Error: bad arguments for 'tag': 'ids' item 1 must be an integer; got \"2\" (string)",
    )
    assert call_with(tag, ids=[1, 2], label=None, extra=None, note=[{"any": "thing"}]) == ("tagged", None)
    assert call_with(tag, ids=None)[1] == "bad_arguments"  # a list, not optional


def test_a_tool_built_by_hand_gets_its_arguments_as_they_are() -> None:
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}}
    by_hand = Tool("count", lambda count: f"got {count!r}", "Count.", schema)
    assert call_with(by_hand, count="5") == ("got '5'", None)


def test_a_wrongly_typed_call_of_a_tool_needing_approval_is_not_put_to_a_person() -> None:
    @tool(needs_approval=True)
    def refund(order: str, cents: int) -> str:
        """Refund an order."""
        return "refunded"

    model = ScriptedModel(
        [[call("refund", order="A1", cents="all")], [call("refund", order="A1", cents=500)]]
    )
    result = Agent("refunds", model, tools=[refund]).run("Refund order A1.")
    assert result.reason is StopReason.NEED_HELP
    assert result.suspension is not None and result.suspension.pending is not None
    assert result.suspension.pending.arguments == {"order": "A1", "cents": 500}  # the first was refused
    told = model.requests[1].messages[-1]["content"][0]
    assert told["is_error"] and "'cents' must be an integer; got \"all\" (string)" in told["content"]


def test_a_run_whose_model_corrects_its_arguments_goes_on() -> None:
    model = ScriptedModel(
        [[call("set_mode", mode="READ")], [call("set_mode", mode="read")], [finish("done", "set")]]
    )
    ran.clear()
    result = Agent("modes", model, tools=[set_mode]).run("Set read mode.")
    assert result.reason is StopReason.SUCCESS
    assert ran == [{"mode": "read", "count": 1, "ratio": 0.5}]
