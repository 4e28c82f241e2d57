"""What a tool returns is data for the model, whatever its type.

A tool that returned a `str` subclass whose methods raise (a hostile or broken wrapper type) ended
the whole run as `error` ("RuntimeError: len"): the loop took the value as a string and used it. An
object whose `__str__` and `__repr__` raise became an error result, though the tool ran and
returned. Now a string is taken as a plain `str` copy, and a value that cannot be written at all
is named by its type.
"""

from __future__ import annotations

from agent import Agent, StopReason, tool
from agent.journal import Result
from agent.models.scripted import ScriptedModel, call, finish


class Hostile(str):
    def __len__(self) -> int:
        raise RuntimeError("len")

    def __str__(self) -> str:
        raise RuntimeError("str")

    def __hash__(self) -> int:
        raise RuntimeError("hash")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq")


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("str")

    def __repr__(self) -> str:
        raise RuntimeError("repr")


def _result_of(value: object) -> tuple[StopReason, Result]:
    @tool
    def fetch() -> str:
        """Fetch."""
        return value  # type: ignore[return-value]

    model = ScriptedModel([[call("fetch")], [finish("done", "ok")]])
    result = Agent(name="a", model=model, tools=[fetch]).run("t")  # type: ignore[list-item]
    [res] = (
        [e for e in model.requests[-1].journal if isinstance(e, Result)]
        if len(model.requests) > 1
        else [None]
    )
    assert res is not None, result.note
    return result.reason, res


def test_a_string_subclass_whose_methods_raise_is_the_tools_result_as_plain_text() -> None:
    reason, res = _result_of(Hostile("the page"))

    assert reason is StopReason.SUCCESS
    assert (type(res.text), res.text, res.is_error) == (str, "the page", False)


def test_a_value_that_cannot_be_written_is_named_by_its_type_not_made_an_error() -> None:
    reason, res = _result_of(Unprintable())

    assert reason is StopReason.SUCCESS
    assert not res.is_error and "Unprintable" in res.text
