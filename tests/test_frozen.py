"""`fast_init`: frozen dataclasses made faster stay what `@dataclass(frozen=True)` made them."""

from __future__ import annotations

import copy
import dataclasses
import dis
import inspect
import pickle
import sys
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import Any

import pytest

from agent._frozen import cached, fast_init
from agent.budget import Budget, Spent
from agent.journal import Call, Reply, Result, Text
from agent.models import ModelReply, ModelRequest
from agent.tools import Tool, ToolOutcome
from agent.usage import Usage


@fast_init
@dataclass(frozen=True)
class Sample:
    name: str
    count: int = 1
    tags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Plain:
    name: str
    count: int = 1
    tags: list[str] = field(default_factory=list)


def test_it_takes_what_the_dataclass_takes_and_holds_the_same():
    assert str(inspect.signature(Sample)) == str(inspect.signature(Plain))
    for args, kwargs in [
        (("a",), {}),
        (("a", 2), {}),
        (("a",), {"tags": ["t"]}),
        ((), {"name": "a", "count": 3}),
    ]:
        made, plain = Sample(*args, **kwargs), Plain(*args, **kwargs)
        assert dataclasses.asdict(made) == dataclasses.asdict(plain)
        assert repr(made) == repr(plain).replace("Plain", "Sample")


def test_each_instance_gets_its_own_default_from_a_factory():
    first, second = Sample("a"), Sample("b")
    first.tags.append("x")
    assert second.tags == []


def test_it_stays_frozen_equal_hashable_and_replaceable():
    made = Sample("a", 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.count = 3  # type: ignore[misc]
    assert made == Sample("a", 2) != Sample("a", 3)
    assert dataclasses.replace(made, count=5) == Sample("a", 5)
    assert pickle.loads(pickle.dumps(made)) == made
    assert copy.deepcopy(made) == made


def test_wrong_arguments_fail_as_with_the_dataclass():
    with pytest.raises(TypeError):
        Sample()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Sample("a", colour="red")  # type: ignore[call-arg]


def test_post_init_still_runs():
    @fast_init
    @dataclass(frozen=True)
    class Checked:
        value: int

        def __post_init__(self) -> None:
            if self.value < 0:
                raise ValueError("negative")

    assert Checked(1).value == 1
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)


def test_a_class_it_cannot_speed_up_keeps_the_dataclass_init():
    @dataclass(frozen=True, slots=True)
    class Slotted:
        value: int

    @dataclass(frozen=True)
    class KeywordOnly:
        value: int = field(kw_only=True)

    @dataclass(frozen=True)
    class WithInitVar:
        value: int
        scale: InitVar[int] = 1

    @dataclass
    class Mutable:
        value: int

    for cls in (Slotted, KeywordOnly, WithInitVar, Mutable):
        init = cls.__init__
        assert fast_init(cls).__init__ is init


# The attribute-read specialization these tests pin is CPython 3.11's (the version CI runs and the
# turn benchmark measures). 3.12 and 3.13 changed instance dicts and how `dis` shows specialized
# reads (these tests fail there on code before and after `fast_init` and `cached` alike); what
# either costs on those versions is not measured.
CPYTHON_311 = pytest.mark.skipif(
    sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11),
    reason="pins CPython 3.11's attribute-read specialization",
)

HOT = [
    Text("t"),
    Call("c", "look", {}),
    Reply((), 1, 2),
    Result("c", "t"),
    ToolOutcome("t"),
    Usage(1, 2),
    ModelRequest("", (), [], 1),
    ModelReply([], 1, 2),
]


def test_the_loops_hot_types_are_sped_up():
    for made in HOT:
        assert "_set" in type(made).__init__.__code__.co_names, type(made)  # fast_init's, not the dataclass's


@CPYTHON_311
@pytest.mark.parametrize("made", HOT, ids=lambda made: type(made).__name__)
def test_a_field_read_of_a_hot_type_takes_the_interpreters_fast_path(made: object) -> None:
    """The adaptive interpreter (CPython 3.11+) specializes a read of a field: an instance whose
    `__dict__` was filled in place held a split dict, whose reads it never specializes, so each read
    took the generic attribute lookup."""
    name = dataclasses.fields(made)[0].name  # type: ignore[arg-type]
    read = eval(f"lambda made: made.{name}")  # a function of its own: its instruction is this test's
    many = [dataclasses.replace(made) for _ in range(8)]  # type: ignore[type-var]  # each made by __init__
    for _ in range(50):
        for one in many:
            read(one)
    loads = [i.opname for i in dis.get_instructions(read, adaptive=True) if i.opname.startswith("LOAD_ATTR")]
    assert loads and not {"LOAD_ATTR", "LOAD_ATTR_ADAPTIVE"} & set(loads), (type(made).__name__, loads)


def _specialized(read: Callable[[Any], object], made: list[Any]) -> list[str]:
    """The attribute loads of `read` after it read each of `made` many times (CPython 3.11+)."""
    for _ in range(50):
        for one in made:
            read(one)
    return [i.opname for i in dis.get_instructions(read, adaptive=True) if i.opname.startswith("LOAD_ATTR")]


UNSPECIALIZED = {"LOAD_ATTR", "LOAD_ATTR_ADAPTIVE"}


def test_cached_works_a_value_out_once_per_instance_frozen_or_not():
    calls: list[int] = []

    @dataclass(frozen=True)
    class Frozen:
        value: int

        @cached
        def doubled(self) -> int:
            calls.append(self.value)
            return self.value * 2

    first, second = Frozen(1), Frozen(2)
    assert (first.doubled, first.doubled, second.doubled) == (2, 2, 4)
    assert calls == [1, 2]
    assert isinstance(Frozen.doubled, cached)  # the class shows the descriptor, as with cached_property
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.value = 3  # type: ignore[misc]
    assert first == Frozen(1) and copy.deepcopy(first).doubled == 2


@CPYTHON_311
def test_an_instance_with_a_cached_value_stays_fast_to_read():
    """`functools.cached_property` stores through `instance.__dict__`, which gives the instance a split
    dict: then no read of any of its attributes is specialized (CPython 3.11)."""

    @dataclass(frozen=True)
    class Tooly:
        name: str

        @cached
        def shape(self) -> str:
            return self.name.upper()

    made = [Tooly(str(i)) for i in range(8)]
    for one in made:
        assert one.shape == one.name.upper()
    assert not UNSPECIALIZED & set(_specialized(lambda one: one.name, made))


@CPYTHON_311
def test_the_agents_tools_and_budgets_cached_values_leave_them_fast_to_read():
    tools = [Tool(f"t{i}", lambda: None, "A tool.", {"type": "object", "properties": {}}) for i in range(8)]
    for t in tools:
        assert t.shape is not None and t.is_async is False and t.plain_types == {}
    assert not UNSPECIALIZED & set(_specialized(lambda t: t.timeout, tools))
    budgets = [Budget(max_turns=i + 1) for i in range(8)]
    for b in budgets:
        assert b.ceilings()["turns"] == b.max_turns
    assert not UNSPECIALIZED & set(_specialized(lambda b: b.max_turns, budgets))


@CPYTHON_311
def test_a_copy_of_the_spent_tally_leaves_the_tally_fast_to_read():
    tallies = [Spent(turns=i) for i in range(8)]
    copies = [t.copy() for t in tallies]
    assert copies == tallies and all(c is not t for c, t in zip(copies, tallies, strict=True))
    assert not UNSPECIALIZED & set(_specialized(lambda t: t.turns, tallies))
