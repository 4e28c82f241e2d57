"""`fast_init`: a frozen dataclass made as fast as a plain one.

A frozen dataclass's own `__init__` sets each field through
`object.__setattr__` (its `__setattr__` refuses), which costs about four
times a plain assignment. The loop makes a few dozen such fields a turn
(journal entries, requests, outcomes), so `fast_init` gives those classes an
`__init__` that hands the instance its `__dict__` whole, built as one dict
display: one `object.__setattr__` an instance, not one a field. The class
stays what `@dataclass(frozen=True)` made it: the same signature, defaults,
default factories and `__post_init__`; equality, hashing, `replace` and the
refusal to set a field are the dataclass's own.

Why the dict is handed over whole, not filled through `self.__dict__`: on
CPython 3.11, reading `self.__dict__` of a fresh instance makes a split
(key-sharing) dict, and the interpreter never specializes an attribute read
of an instance with one: every `entry.text` then took the generic lookup,
about 250 instructions more than a specialized read (cachegrind; a fast
`__init__` paid that back after four or five reads of the instance, and most
are read more). A dict of its own is a combined one, whose reads specialize.

    @fast_init
    @dataclass(frozen=True)
    class Result: ...

A class it cannot speed up (slots, keyword-only, `InitVar` or `init=False`
fields) keeps the dataclass's `__init__`.

`cached` is `functools.cached_property` for objects the loop reads every turn
(an agent, its tools, its budget): `cached_property` stores its value through
`instance.__dict__`, which gives the instance a split dict for good, and then
no attribute read of it is specialized either (see above).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")
V = TypeVar("V")

_MISSING = dataclasses.MISSING


def fast_init(cls: type[T]) -> type[T]:
    """Give the frozen dataclass `cls` an `__init__` that fills `__dict__` directly (see the module)."""
    if not _plain(cls):
        return cls
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY, "_set": object.__setattr__}
    params, items = [], []
    for f in fields:
        if f.default is not _MISSING:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
            items.append(f"{f.name!r}: {f.name}")
        elif f.default_factory is not _MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            items.append(f"{f.name!r}: _factory_{f.name}() if {f.name} is _FACTORY else {f.name}")
        else:
            params.append(f.name)
            items.append(f"{f.name!r}: {f.name}")
    body = [f"    _set(self, '__dict__', {{{', '.join(items)}}})"]  # its own dict (see the module)
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body)
    exec(source, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    setattr(cls, "__init__", init)  # noqa: B010 - mypy refuses assigning a method
    return cls


class _Factory:
    """Stands for "no value given" where a field has a default factory."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _plain(cls: type) -> bool:
    """A frozen dataclass (no slots) whose `__init__` takes exactly its fields, by position or keyword."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" in vars(cls):
        return False
    taken = list(inspect.signature(cls).parameters.values())
    names = [f.name for f in dataclasses.fields(cls)]
    return [p.name for p in taken] == names and all(
        p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and not _reserved(p.name) for p in taken
    )


def _reserved(name: str) -> bool:
    """Names the generated `__init__` uses itself."""
    return name in {"self", "_set", "_FACTORY"} or name.startswith(("_default_", "_factory_"))


class cached(Generic[V]):  # lower case: a decorator, as `cached_property` is
    """`functools.cached_property` that stores its value as an attribute of the instance
    (`object.__setattr__`, so a frozen dataclass takes it too), never through `instance.__dict__`:
    the instance keeps the layout whose attribute reads the interpreter specializes (see the module).
    Worked out at the first read of each instance; two threads reading it first may both work it out."""

    def __init__(self, func: Callable[[Any], V]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> cached[V]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> V: ...

    def __get__(self, instance: object, owner: type | None = None) -> V | cached[V]:
        if instance is None:
            return self
        value = self.func(instance)
        object.__setattr__(instance, self.name, value)  # found before this descriptor from now on
        return value
