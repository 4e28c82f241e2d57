"""Tools: plain Python functions with JSON-schema parameters and a timeout."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import operator
import os
import queue
import re
import threading
import time
import types
import typing
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent._frozen import cached, fast_init
from agent._valid import is_number, is_text
from agent.content import (
    Block,
    ContentError,
    Document,
    Image,
    SearchResult,
    ToolOutput,
    ToolReference,
    blocks_of,
    text_of,
)
from agent.context import RunContext
from agent.errors import ConfigError
from agent.journal import CONTAINERS, thawed
from agent.text import written

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # what the Anthropic and OpenAI APIs accept
# a parameter's name (a key of the schema's properties): the Messages API refuses a whole request that
# holds a tool with any other ("Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'")
PARAMETER_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,64}")

CLEANUP_GRACE = 2.0  # seconds a cancelled async tool may go on (its cleanup) before it is left behind
MAX_CLEANUP = 3600.0  # a tool's cleanup_seconds at most: a cut tool never holds its run past an hour


@dataclass(frozen=True)
class Tool:
    """A function the model may call.

    A parameter named `ctx` receives the `RunContext` and is not shown to the
    model. `needs_approval` tools never run before a person approves them;
    `preview`, when given, tells that person what a call would do (say, the
    diff a push would publish): it takes the call's arguments and returns text.
    An async tool cut short (its timeout, the run's time budget, a cancellation)
    has `cleanup_seconds` to end after the cut (its `finally`, a rollback) before
    it is left behind.
    """

    name: str
    fn: Callable[..., Any]
    description: str
    parameters: dict[str, Any]
    timeout: float | None = 30.0
    needs_approval: bool = False
    wants_ctx: bool = field(default=False, repr=False)
    preview: Callable[[dict[str, Any]], str] | None = field(default=None, repr=False)
    # (name, may be null) of each parameter whose schema `@tool` wrote from its type hint: a call's value
    # for it is checked against that schema before the tool runs (a hand-built Tool's go as they are)
    typed: tuple[tuple[str, bool], ...] = field(default=(), repr=False, compare=False)
    cleanup_seconds: float = field(default=CLEANUP_GRACE, repr=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.name, str) and TOOL_NAME.fullmatch(self.name)):
            raise ConfigError(
                f"tool name {self.name!r} is not one a model API takes: 1 to 64 ASCII letters, digits, _ or -"
            )
        if not callable(self.fn):
            raise ConfigError(
                f"tool {self.name!r}: fn must be the function to call, not {type(self.fn).__name__}"
            )
        if not is_text(self.description):
            raise ConfigError(
                f"tool {self.name!r}: description must be text that tells the model what it does"
            )
        if not (isinstance(self.parameters, dict) and self.parameters.get("type") == "object"):
            raise ConfigError(
                f"tool {self.name!r}: parameters must be a JSON schema of an object, as model APIs take it: "
                f"{{'type': 'object', 'properties': {{...}}}}; got {self.parameters!r:.80}"
            )
        if bad := _bad_parameter_names(self.parameters):
            names = ", ".join(map(repr, bad))[:120]
            raise ConfigError(
                f"tool {self.name!r}: parameter names {names} are not ones a model API takes (1 to 64 "
                "ASCII letters, digits, _, . or -): the API would refuse each request of the run; rename them"
            )
        t = self.timeout
        if t is not None and not (is_number(t) and t > 0):
            raise ConfigError(
                f"tool {self.name!r}: timeout must be a positive number of seconds (or None); got {t!r}"
            )
        c = self.cleanup_seconds
        if not (is_number(c) and 0 <= c <= MAX_CLEANUP):
            raise ConfigError(
                f"tool {self.name!r}: cleanup_seconds must be a number of seconds from 0 to {MAX_CLEANUP:g}; "
                f"got {c!r}"
            )
        if not isinstance(self.needs_approval, bool):
            shown = repr(self.needs_approval)
            raise ConfigError(f"tool {self.name!r}: needs_approval must be True or False, not {shown}")
        if self.preview is not None and not callable(self.preview):
            raise ConfigError(f"tool {self.name!r}: preview must be a function of the arguments, or None")

    @cached
    def signature(self) -> inspect.Signature:
        return inspect.signature(self.fn)

    @cached
    def is_async(self) -> bool:
        """An `async def`, a partial of one, or an object whose `__call__` is one."""
        fn = self.fn
        return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)

    @cached
    def shape(self) -> ArgumentShape:
        """The names the function takes, worked out once rather than bound on every call."""
        return ArgumentShape.of(self.signature)

    @cached
    def plain_types(self) -> dict[str, type]:
        """The Python type that fits each typed parameter's schema as it is (a JSON type, no choices
        nor items to check), worked out once: the usual value is checked by one lookup."""
        properties = self.parameters.get("properties")
        if not isinstance(properties, dict):
            return {}
        kinds = {name: properties.get(name) for name, _ in self.typed}
        return {
            name: _PLAIN_TYPES[schema["type"]]
            for name, schema in kinds.items()
            if isinstance(schema, dict)
            and schema.get("type") in _PLAIN_TYPES
            and "enum" not in schema
            and "items" not in schema
        }

    def spec(self) -> dict[str, Any]:
        """The tool as the model is told of it."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}


def _bad_parameter_names(schema: dict[str, Any]) -> list[Any]:
    properties = schema.get("properties")
    names = properties if isinstance(properties, dict) else {}
    return [n for n in names if not (isinstance(n, str) and PARAMETER_NAME.fullmatch(n))]


UNKNOWN_TOOL = "unknown_tool"  # error_type of a call to a tool the agent does not have
TOOL_ERROR = "tool_error"  # error_type of a tool error a framework handed the model, its type not told


@fast_init
@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call gave back to the model: its text, and the content blocks it returned, if any
    (then `text` is their `text_of`)."""

    text: str
    is_error: bool = False
    error_type: str | None = None
    budget_cut: bool = False  # the run's time limit, not the tool's own timeout, stopped the call
    blocks: tuple[Block, ...] = ()
    # the call started and never reported back (its worker died): it may or may not have taken effect,
    # so the loop suspends the run for a person to say, as it does for an approved call found in flight
    lost: bool = False


@dataclass(frozen=True)
class ArgumentShape:
    """What keyword arguments a function accepts: checked per call without `Signature.bind`."""

    names: frozenset[str]
    required: tuple[str, ...]
    any_keyword: bool

    @classmethod
    def of(cls, sig: inspect.Signature) -> ArgumentShape:
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        params = [p for p in sig.parameters.values() if p.kind in kinds]
        return cls(
            names=frozenset(p.name for p in params),
            required=tuple(p.name for p in params if p.default is inspect.Parameter.empty),
            any_keyword=any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()),
        )

    def problem(self, kwargs: dict[str, Any]) -> str | None:
        """What is wrong with calling with `kwargs` (in `TypeError`'s words), or None."""
        for name in self.required:
            if name not in kwargs:
                return f"missing a required argument: {name!r}"
        if not self.any_keyword:
            for name in kwargs:
                if name not in self.names:
                    return f"got an unexpected keyword argument {name!r}"
        return None


def _need_function(f: Any) -> None:
    """A clear error for what `@tool` cannot make a tool of: a class, a name, a builtin."""
    hint = f": for a tool named {f!r}, write @tool(name={f!r})" if isinstance(f, str) else ""
    if not callable(f) or isinstance(f, type):
        what = f"the class {f.__name__}" if isinstance(f, type) else type(f).__name__
        raise ConfigError(f"@tool takes a function (def or async def), not {what}{hint}")
    try:
        inspect.signature(f)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"@tool cannot read the parameters of {f!r} ({exc}): wrap it in a def") from exc


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = 30.0,
    needs_approval: bool = False,
    preview: Callable[[dict[str, Any]], str] | None = None,
    cleanup_seconds: float = CLEANUP_GRACE,
) -> Any:
    """Make a `Tool` from a function (a `functools.partial` of one, or an object with `__call__`);
    its type hints give the JSON schema, which each call's arguments are then checked against.

    Use bare (`@tool`) or with options (`@tool(timeout=5, needs_approval=True)`);
    `timeout=None` sets no timeout of its own (the run's time budget still bounds it).
    `preview(arguments)` says in text what a call would do, for the person who approves it.
    `cleanup_seconds` is how long an async tool cut short may go on cleaning up (default 2).
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        _need_function(f)
        label = name or _name_of(f)
        doc = _doc_of(f)
        if not (description or doc):
            raise ConfigError(f"tool {label!r} needs a description: add a docstring")
        params, wants_ctx, typed = _schema_of(f, label)
        return Tool(
            name=label,
            fn=f,
            description=description or doc,
            parameters=params,
            timeout=timeout,
            needs_approval=needs_approval,
            wants_ctx=wants_ctx,
            preview=preview,
            typed=typed,
            cleanup_seconds=cleanup_seconds,
        )

    return wrap(fn) if fn is not None else wrap


def _described(f: Callable[..., Any]) -> Callable[..., Any]:
    """The function whose type hints and docstring describe `f`: a `functools.partial`'s function, a
    callable object's `__call__`; `f` itself when it is a function or a method."""
    while isinstance(f, functools.partial):
        f = f.func
    return f if inspect.isroutine(f) else type(f).__call__


def _name_of(f: Callable[..., Any]) -> str:
    """A tool's default name: its function's (a partial's too), or a callable object's class's."""
    while isinstance(f, functools.partial):
        f = f.func
    return getattr(f, "__name__", None) or type(f).__name__


def _doc_of(f: Callable[..., Any]) -> str:
    """A tool's default description: its function's docstring (a partial's function's: the partial's
    own is functools' "partial(func, *args, **keywords) - new function with..."), else its class's."""
    if isinstance(f, functools.partial) or inspect.isroutine(f):
        return inspect.getdoc(_described(f)) or ""
    own = getattr(type(f).__call__, "__doc__", None)  # its own words, not `object`'s "Call self as..."
    return inspect.cleandoc(own) if isinstance(own, str) else inspect.getdoc(type(f)) or ""


def _schema_of(
    fn: Callable[..., Any], name: str
) -> tuple[dict[str, Any], bool, tuple[tuple[str, bool], ...]]:
    try:
        hints = typing.get_type_hints(_described(fn))
    except Exception as exc:  # a hint naming what does not exist (a typo, an import under TYPE_CHECKING)
        raise ConfigError(f"tool {name!r}: its type hints cannot be read ({exc})") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    typed: list[tuple[str, bool]] = []
    wants_ctx = False
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ConfigError(
                f"tool {name!r}: a model passes named arguments only, so "
                f"{_STARS[param.kind]}{param.name} cannot be given: name each parameter (or build a Tool "
                "with a schema)"
            )
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:  # every call would be refused
            raise ConfigError(
                f"tool {name!r}: a model passes named arguments only, so {param.name} (before the "
                "'/') cannot be given: drop the '/' (or build a Tool with a schema)"
            )
        if param.name == "ctx":
            wants_ctx = True
            continue
        properties[param.name] = _json_schema(name, param.name, hints.get(param.name, str))
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        if param.name in hints:  # an unannotated parameter is sent as a string, but takes anything
            typed.append((param.name, param.default is None or _admits_none(hints[param.name])))
    schema = {"type": "object", "properties": properties, "required": required}
    return schema | {"additionalProperties": False}, wants_ctx, tuple(typed)


def _admits_none(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


_STARS = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}


def _json_schema(fn: str, param: str, hint: Any) -> dict[str, Any]:
    """The JSON schema of one parameter: a JSON type, `Literal` choices as an enum, list items typed."""
    origin = typing.get_origin(hint) or hint
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:  # Optional[X]: X, or left out
            return _json_schema(fn, param, args[0])
    if origin is typing.Literal and (choices := typing.get_args(hint)):
        kinds = {type(c) for c in choices}
        if len(kinds) == 1 and (kind := kinds.pop()) in _JSON_TYPES:
            return {"type": _JSON_TYPES[kind], "enum": list(choices)}
    if origin is list and (items := typing.get_args(hint)):
        return {"type": "array", "items": _json_schema(fn, param, items[0])}
    if origin not in _JSON_TYPES:
        raise ConfigError(
            f"tool {fn!r}: parameter {param!r} has type {hint!r}; use one of str, int, float, "
            "bool, list, dict, a Literal of one of them, or build a Tool with a schema"
        )
    return {"type": _JSON_TYPES[origin]}


class ToolHost(Protocol):
    """Where a run's tool and verifier calls are carried out, for a host that runs the loop somewhere
    other than a plain process. Temporal's worker sets one (`set_host`): its workflows have no threads,
    their tools are activities whose outcome the worker made already, and their verifiers an activity.
    Each method returns None to leave the call as it is in a plain process."""

    def outcome(self, value: Any) -> ToolOutcome | None:
        """The outcome a tool's returned `value` stands for, taken as it is; None to read `value` as any
        tool's (text, content blocks, JSON)."""

    def offload(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Awaitable[Any] | None:
        """What to await for `fn(**kwargs)` (a sync tool, a verifier) instead of running it on a daemon
        thread; None to run it there."""

    # A host may also have `threadless() -> bool`: True where the code at work may start no thread (a
    # workflow's); an exception's message is then read where it is (`said`), not on a worker thread.


_host: ToolHost | None = None


def set_host(host: ToolHost | None) -> None:
    """Carry out this process's tool and verifier calls with `host` (None: as a plain process does).
    One host per process: Temporal's worker sets its own when it builds its workflow runner."""
    global _host
    _host = host


def arguments_problem(tool_: Tool, arguments: dict[str, Any]) -> str | None:
    """What is wrong with calling `tool_` with `arguments` (a name missing or unknown), or None: the
    check `execute` makes before a call, for a call a person is to approve first."""
    kwargs = {**arguments, "ctx": None} if tool_.wants_ctx else arguments
    if problem := tool_.shape.problem(kwargs):
        return problem
    fitted = _typed(tool_, arguments)
    return fitted if isinstance(fitted, str) else None


def _typed(tool_: Tool, arguments: dict[str, Any]) -> dict[str, Any] | str:
    """`arguments` (a call's, or the keyword arguments made of them, `ctx` among them) as the tool's
    type hints take them (`@tool`'s schema: its JSON type, a `Literal`'s choices, a list's items), or
    what keeps one from fitting: a model's arguments are not held to the schema it was sent (`"5"` for
    an int, `"delete"` for a `Literal["read", "write"]`), and the tool would get them. JSON has one
    number type, so a whole `3.0` for an `int` arrives as `3` and a `2` for a `float` as `2.0`. The
    arguments themselves when all fit as they are (the usual call: no copy)."""
    properties, plain = tool_.parameters["properties"], tool_.plain_types
    fitted = arguments
    for name, nullable in tool_.typed:
        value = arguments.get(name, _ABSENT)
        if type(value) is plain.get(name) or value is _ABSENT or (nullable and value is None):
            continue  # the usual value: the one type its schema takes as it is
        if not isinstance(schema := properties.get(name), dict):
            continue
        try:
            as_hinted = _fit(schema, value)
        except _Misfit as exc:
            return f"{name!r} {exc}"
        if as_hinted is not value:
            fitted = fitted if fitted is not arguments else dict(arguments)
            fitted[name] = as_hinted
    return fitted


class _Misfit(Exception):
    """What keeps a model's value from fitting one of `@tool`'s parameter schemas."""


_ABSENT = object()
_JSON_NAMES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", dict: "object"}
_PLAIN_TYPES = {  # a JSON type's one Python type (a whole float for an integer goes the long way)
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": float,
    "array": list,
    "object": dict,
}


def _json_name(value: Any) -> str:
    return "null" if value is None else _JSON_NAMES.get(type(value), type(value).__name__)


def _fit(schema: dict[str, Any], value: Any) -> Any:
    """`value` as the parameter whose schema is `schema` takes it (a `Literal`'s own choice, a whole
    float as an int, an int as a float), or `_Misfit` saying what is wrong."""
    if (choices := schema.get("enum")) is not None:
        for choice in choices:
            if _same(value, choice):
                return choice
        raise _Misfit(f"must be one of {', '.join(json.dumps(c) for c in choices)}; got {_shown(value)}")
    kind, got = schema.get("type"), _json_name(value)
    if not isinstance(kind, str):  # a schema `@tool` did not write (a Tool replaced by hand): no check
        return value
    if got == kind:
        return _fit_items(schema["items"], value) if kind == "array" and "items" in schema else value
    if kind == "integer" and got == "number" and value.is_integer():  # JSON's 3.0 is the integer 3
        return int(value)
    if kind == "number" and got == "integer":
        try:
            return float(value)
        except OverflowError:
            raise _Misfit(
                f"must be a number a float holds; got an integer of {value.bit_length()} bits"
            ) from None
    raise _Misfit(f"must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}; got {_shown(value)}")


def _fit_items(schema: dict[str, Any], items: list[Any]) -> list[Any]:
    """A list's items as `schema` takes each (the list itself when all fit as they are)."""
    fitted = []
    for i, item in enumerate(items):
        try:
            fitted.append(_fit(schema, item))
        except _Misfit as exc:
            raise _Misfit(f"item {i} {exc}") from None
    return items if all(map(operator.is_, fitted, items)) else fitted


def _same(value: Any, choice: Any) -> bool:
    """One JSON value: `1.0` is the choice `1`, but `true` is not `1` (as Python's `==` holds)."""
    if isinstance(value, bool) or isinstance(choice, bool):
        return value is choice
    if isinstance(value, int | float) and isinstance(choice, int | float):
        return value == choice
    return type(value) is type(choice) and value == choice


def _shown(value: Any) -> str:
    return f"{json.dumps(value, default=repr)[:60]} ({_json_name(value)})"


async def execute(
    tool_: Tool, arguments: dict[str, Any], ctx: RunContext, *, limit: float | None = None
) -> ToolOutcome:
    """Run one tool call; any exception or a timeout becomes an error result.

    `limit` is the most seconds the call may take (the time left in the run's
    budget): the call gets the shorter of it and the tool's own timeout, and a
    call cut short by it says so in `budget_cut`. With no time left the tool
    does not start. A tool raising `KeyboardInterrupt` cancels the call: it is
    re-raised as `asyncio.CancelledError`, which the loop turns into `cancelled`.
    """
    arguments = _own(arguments)  # the tool's to change: the journal keeps the call as the model made it
    given = {**arguments, "ctx": ctx} if tool_.wants_ctx else arguments  # `fn(**kwargs)` copies it
    kwargs = tool_.shape.problem(given) or (_typed(tool_, given) if tool_.typed else given)
    if isinstance(kwargs, str):  # what is wrong with the arguments
        return ToolOutcome(f"Error: bad arguments for {tool_.name!r}: {kwargs}", True, "bad_arguments")
    seconds, cut_by_limit = _deadline(tool_.timeout, limit)
    if cut_by_limit and not seconds:
        return _budget_cut(tool_, started=False)
    started = time.monotonic()
    try:
        if not tool_.is_async:
            return await _sync_call(tool_, kwargs, seconds)
        done, value = _first_step(tool_.fn(**kwargs), seconds, tool_.cleanup_seconds)
        if not done:
            return await value  # type: ignore[no-any-return]
        quick = _quick(value)
        return quick if quick is not None else await _bounded(_written(value), seconds)
    except ContentError as exc:  # a bad block, made in the tool or found in what it returned
        return ToolOutcome(
            f"Error: tool {tool_.name!r} returned a content block the API would refuse: {exc}",
            True,
            "bad_content",
        )
    except _Expired:
        if cut_by_limit:
            return _budget_cut(tool_, started=True)
        return ToolOutcome(f"Error: tool {tool_.name!r} timed out after {seconds:g} s.", True, "timeout")
    except BaseException as exc:  # a tool's failure, even SystemExit, is data for the model
        left = None if seconds is None else seconds - (time.monotonic() - started)
        return await _failure(exc, left)


def _own(arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` with their lists and dicts copied, at every depth, for a tool that changes what it is
    given in place (sorts a list, fills in a dict): the call recorded in the journal, sent back to the
    model and saved, stays the model's. Arguments of plain values (the usual call) are not copied:
    `fn(**kwargs)` copies the top level."""
    if type(arguments) is not dict:  # a journal's call's (`FrozenDict`): `fn(**kwargs)` makes a dict of it
        arguments = dict(arguments)
    for value in arguments.values():
        if type(value) in CONTAINERS:
            return {name: thawed(v) for name, v in arguments.items()}
    return arguments


async def _sync_call(tool_: Tool, kwargs: dict[str, Any], seconds: float | None) -> ToolOutcome:
    """A sync tool's call on a worker thread, which makes its outcome too (`_made`), both within
    `seconds`."""
    got = await _bounded(_in_daemon_thread(tool_.fn, kwargs, _made), seconds)
    if type(got) is _Made:  # the usual call
        return got.outcome
    if inspect.iscoroutine(got):  # an async def behind a plain def (a decorator): run it too
        return await _bounded(_outcome_of(driven(got, tool_.cleanup_seconds)), seconds)
    quick = _quick(got)  # a host carried the call out: its value as it is
    return quick if quick is not None else await _bounded(_written(got), seconds)


async def _failure(exc: BaseException, left: float | None) -> ToolOutcome:
    """`_failed(exc)` on the event loop: a message of the exception's own code (`plain_error`) is read
    on a worker thread within `left` seconds (what is left of the call's bound), as its value would be."""
    if plain_error(exc) or isinstance(exc, KeyboardInterrupt):
        return _failed(exc)
    if isinstance(exc, asyncio.CancelledError) and run_cancelled():
        raise exc
    return _failed(exc, await said_within(exc, left))


def _failed(exc: BaseException, told: str | None = None) -> ToolOutcome:
    """A tool's failure as its error result, saying `told` (else its message, read here: on the tool's
    worker thread, or a plain one); raises `asyncio.CancelledError` when the run itself is
    cancelled (`run_cancelled`) or the tool was interrupted (`KeyboardInterrupt`)."""
    if isinstance(exc, asyncio.CancelledError):
        if run_cancelled():
            raise exc
        told = (said_now(exc) if told is None else told) or "no message"
        return ToolOutcome(f"Error: CancelledError raised inside the tool ({told})", True, "CancelledError")
    if isinstance(exc, KeyboardInterrupt):
        raise asyncio.CancelledError("a tool was interrupted (KeyboardInterrupt)") from exc
    told = said_now(exc) if told is None else told
    return ToolOutcome(f"Error: {type(exc).__name__}: {told}", True, type(exc).__name__)


def run_cancelled() -> bool:
    """Whether the task at work is being cancelled (the caller's cancel, a shutdown, a timeout around
    the run): then a `CancelledError` is the run's. One raised while it is not is a tool's (or a
    verifier's) own failure, such as a library's cancelled future: data for the model, not the
    caller's signal. In the task of a run (`own_cancels`), only a cancel asked since the run began is
    counted: an earlier run's, which that run took into its result and left on the task (its caller
    reads it), is not this run's."""
    task = _running_task()
    if task is None:
        return True
    before = _CANCELS_BEFORE.get()
    return task.cancelling() > (before[1] if before is not None and before[0] is task else 0)


# The task a run runs in, and how many cancels it had been asked when the run began (see `own_cancels`).
_CANCELS_BEFORE: contextvars.ContextVar[tuple[asyncio.Task[Any], int] | None] = contextvars.ContextVar(
    "endstate_cancels_before", default=None
)


@contextlib.contextmanager
def own_cancels() -> Iterator[None]:
    """Around a run in its task: `run_cancelled` counts only the cancels asked from here on. A cancelled
    run ends `cancelled` with its task still cancelling (its caller reads that, as `endstate demo` does
    to stop on Ctrl-C): a later run in the same task (a worker going on to its next job) took that for
    its own, and a tool's own `CancelledError` there (a library's cancelled future) ended it
    `cancelled` though nobody cancelled it. Outside any task (a synchronous loop `observe_run` observes):
    no count to keep."""
    task = _running_task()
    token = _CANCELS_BEFORE.set((task, task.cancelling()) if task is not None else None)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # closed in another context (a dropped coroutine): not ours
            _CANCELS_BEFORE.reset(token)


def _running_task() -> asyncio.Task[Any] | None:
    """The task at work, or None outside any (no event loop runs in this thread)."""
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


SAY_SECONDS = 5.0  # seconds an exception's own `__str__` may take where no call's bound is left to give it


def said(exc: BaseException, seconds: float | None = None) -> str:
    """What an exception says, read within `seconds` (None: `SAY_SECONDS`): a plain exception's message at
    once (`plain_error`), another's on a worker thread (its `__str__` is code of its own, which may hang
    or raise), the caller waiting at most `seconds` for it. An exception is still a result, never a run
    held or ended by it."""
    if plain_error(exc) or _threadless():
        return said_now(exc)
    seconds = SAY_SECONDS if seconds is None else seconds
    told: list[str] = []
    read = threading.Event()

    def job() -> Callable[[], object]:
        told.append(said_now(exc))
        read.set()
        return _NOTHING

    _WORKERS.submit(job)
    return told[0] if read.wait(seconds) else unread(seconds)


async def said_within(exc: BaseException, seconds: float | None) -> str:
    """`said(exc)` for a caller on the event loop: the loop goes on while another's message is read on a
    worker thread, for at most `seconds` (None: as long as it takes; the run's cancel still ends it)."""
    if plain_error(exc) or _threadless():
        return said_now(exc)
    if seconds is not None and seconds <= 0:
        return unread(seconds)
    try:
        told: str = await _bounded(_in_daemon_thread(said_now, {"exc": exc}), seconds)
    except _Expired:
        assert seconds is not None  # no deadline otherwise
        return unread(seconds)
    return told


async def said_soon(exc: BaseException) -> str:
    """`said_within(exc, SAY_SECONDS)`: for a caller on the event loop with no call's bound to give."""
    return await said_within(exc, SAY_SECONDS)


def loggable(exc: BaseException) -> BaseException:
    """`exc` to log with its traceback (`exc_info=`): itself when each exception of its chain is plain
    (`plain_error`); else a stand-in with its traceback, saying its type and message read by `said`.
    Formatting a traceback reads each message on the thread that logs: one whose `__str__` hangs held it
    (the event loop, the run) for ever."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if not plain_error(link):
            stand_in = Unsaid(f"{type(exc).__name__}: {said(exc)}")
            return stand_in.with_traceback(exc.__traceback__)
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return exc


class Unsaid(Exception):
    """An exception logged in place of one whose message (or a message in its chain) runs its own code."""


def said_now(exc: BaseException) -> str:
    """What an exception says, read here and now (on a worker thread, or for a plain exception); one whose
    `__str__` raises (even SystemExit) is still said."""
    try:
        return str(exc)
    except BaseException as failure:  # its own code: nothing it raises is the caller's
        return f"(its message could not be read: {type(failure).__name__})"


def unread(seconds: float) -> str:
    """What an exception says whose message was not read within `seconds`."""
    if seconds <= 0:
        return "(its message could not be read in time: the call's time was up)"
    return f"(its message could not be read within {seconds:g} s)"


def _NOTHING() -> None:
    """A worker's delivery when it has nothing to hand to an event loop."""


def _threadless() -> bool:
    """Where no thread may be started: a host's loop that says so (`threadless`: a Temporal workflow's)."""
    return _host is not None and getattr(_host, "threadless", bool)() is True


_SCALAR_ARGS = frozenset({str, int, float, bool, type(None), bytes})
_ARGS = BaseException.__dict__["args"]  # the C field: a subclass's own `args` property never runs
_OS_FIELDS = tuple(OSError.__dict__[f] for f in ("errno", "strerror", "filename", "filename2"))


def plain_error(exc: BaseException) -> bool:
    """Whether `str(exc)` runs no code of the exception's own, so it may be read at once on the event loop:
    built-in `__str__` (BaseException's, KeyError's; OSError's with built-in fields) of built-in scalar
    arguments. Most exceptions are (`class NotFound(Exception): pass` too)."""
    kind = type(exc)
    if not all(type(a) in _SCALAR_ARGS for a in _ARGS.__get__(exc, kind)):
        return False
    if kind.__str__ in _PLAIN_STRS:
        return True
    fields = (f.__get__(exc, kind) for f in _OS_FIELDS)
    return kind.__str__ is OSError.__str__ and all(type(f) in _SCALAR_ARGS for f in fields)


_PLAIN_STRS = (BaseException.__str__, KeyError.__str__)


def _deadline(timeout: float | None, limit: float | None) -> tuple[float | None, bool]:
    """The seconds a call gets, and whether the run's limit (not the tool's timeout) set them."""
    if limit is None or (timeout is not None and timeout <= limit):
        return timeout, False
    return max(0.0, limit), True


class _Expired(Exception):
    """The deadline of `_bounded` passed (unlike a `TimeoutError` the tool raised itself)."""


async def _bounded(work: Awaitable[Any], seconds: float | None) -> Any:
    """Await `work`, for at most `seconds` when given (no timer at all when not)."""
    if seconds is None:
        return await work
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            return await work
    except TimeoutError:
        if deadline.expired():
            raise _Expired from None
        raise


def _outcome(value: Any) -> ToolOutcome:
    """What a tool returned: a string as it is; content blocks (agent.content) as they are, with their
    text; any other value as JSON when it can be (its own `repr` when not: a tuple key, a cycle).
    The tool ran: its value is never an error (but a content block the API would refuse). A host's
    outcome (`ToolHost.outcome`) is taken as it is.

    Writing a value may run the tool's own code (a `__str__`, a dict subclass's `items`), which may
    hang: so, unless `_quick` makes it, it is made on a worker thread within the call's bound."""
    if _host is not None and (hosted := _host.outcome(value)) is not None:
        return hosted
    if isinstance(value, str):  # a subclass as a plain copy: its own methods are never called
        return ToolOutcome(value if type(value) is str else str.__str__(value))
    if (blocks := blocks_of(value)) is not None:
        return ToolOutcome(text_of(blocks), blocks=blocks)
    try:
        return ToolOutcome(json.dumps(value, default=str))
    except Exception:  # not JSON (a tuple key, a cycle), or its `__str__` raised
        return ToolOutcome(written(value))


_SCALARS = frozenset({str, int, float, bool, type(None), bytes})
_CONTAINERS = frozenset({dict, list, tuple})
MOST_QUICK_ITEMS = 1_000  # a plain value with more items is written on a worker thread, off the loop


def _quick(value: Any) -> ToolOutcome | None:
    """`_outcome(value)` when making it runs none of the tool's own code, so the event loop may make
    it: a host's outcome, text, or plain JSON (built-in scalars in built-in dicts, lists and tuples, no
    subclass, up to `MOST_QUICK_ITEMS` items); else None, for `_written` to make on a worker thread."""
    if _host is not None and (hosted := _host.outcome(value)) is not None:
        return hosted
    if isinstance(value, str):  # a subclass as a plain copy: its own methods are never called
        return ToolOutcome(value if type(value) is str else str.__str__(value))
    if type(value) is ToolOutput and all(type(b) in _EXACT_BLOCKS for b in value.blocks):
        return _outcome(value)  # checked when made; a Temporal workflow's tools return them (no threads)
    if not _plain(value):
        return None
    try:
        return ToolOutcome(json.dumps(value, default=str))  # `default` meets bytes only
    except Exception:  # a tuple key, a cycle, an int too long to write: as `_outcome` does
        return ToolOutcome(written(value))


_EXACT_BLOCKS = frozenset({str, Image, Document, SearchResult, ToolReference})


def _plain(value: Any) -> bool:
    """Whether `value` is plain JSON of built-in types only, with at most `MOST_QUICK_ITEMS` items."""
    if type(value) in _SCALARS:
        return True
    left, items = [value], 0
    while left:
        item = left.pop()
        kind = type(item)
        if kind in _SCALARS:
            continue
        if kind not in _CONTAINERS or (items := items + 1 + len(item)) > MOST_QUICK_ITEMS:
            return False
        left.extend(item)
        if kind is dict:
            left.extend(item.values())
    return True


@dataclass(frozen=True, slots=True)
class _Made:
    """A sync tool's outcome, made on its worker thread (see `_made`)."""

    outcome: ToolOutcome


def _made(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """A sync tool's call on its worker thread, with its outcome made there before the call returns:
    its value written, or its error said (an exception's `__str__` is the tool's code too). A
    coroutine (an async def behind a plain def) comes as it is, for the loop to run; what the loop
    must judge (a cancellation, an interrupt, a bad block, a StopIteration) is raised as it was."""
    try:
        value = fn(**kwargs)
    except (Exception, SystemExit) as exc:
        if isinstance(exc, _JUDGED_ON_THE_LOOP):
            raise
        return _Made(_failed(exc))
    return value if inspect.iscoroutine(value) else _Made(_outcome(value))


_JUDGED_ON_THE_LOOP = (StopIteration, ContentError)


async def _outcome_of(work: Awaitable[Any]) -> ToolOutcome:
    """The outcome of `work`'s value, made as `_written` makes it: under the same bound as `work`."""
    value = await work
    quick = _quick(value)
    return quick if quick is not None else await _written(value)


async def _written(value: Any) -> ToolOutcome:
    """`_outcome(value)` made on a worker thread: the event loop goes on meanwhile, and the call's
    bound (around this) cuts a writing that hangs as it cuts a tool."""
    outcome: ToolOutcome = await _in_daemon_thread(_outcome, {"value": value})
    return outcome


def _budget_cut(tool_: Tool, started: bool) -> ToolOutcome:
    what = "was stopped" if started else "was not started"
    text = f"Error: tool {tool_.name!r} {what}: the run's time budget ran out."
    return ToolOutcome(text, True, "budget_cut", budget_cut=True)


def _first_step(
    coro: Coroutine[Any, Any, Any], seconds: float | None, grace: float = CLEANUP_GRACE
) -> tuple[bool, Any]:
    """An async tool's coroutine run up to its first wait when it has a deadline: (True, its value)
    when it returned before it waited on anything (no timer needed: nothing could cut it short),
    else (False, what to await for its outcome, the value's writing too bounded by `seconds`). With
    no deadline, what to await is the coroutine driven so that the run's own cancellation still ends
    it (`driven`)."""
    if seconds is None:
        return False, _outcome_of(driven(coro, grace))
    try:
        waiting = coro.send(None)
    except StopIteration as done:
        return True, done.value
    return False, _bounded(_outcome_of(_Rest(coro, waiting, grace)), seconds)


async def driven(coro: Coroutine[Any, Any, Any], grace: float = CLEANUP_GRACE) -> Any:
    """`await coro`, but a coroutine that goes on after its cancellation is left behind (see `_Rest`):
    an `async def` verifier's, which its deadline must cut as it cuts a tool."""
    try:
        waiting = coro.send(None)
    except StopIteration as done:
        return done.value
    return await _Rest(coro, waiting, grace)


class _Rest:
    """The rest of a coroutine that ran up to its first wait: awaiting it hands the task what
    the coroutine waits on, then drives it on from there, as `await` would have.

    A coroutine that goes on after a cancellation (the deadline's, or the run's) is given `grace`
    seconds (a tool's `cleanup_seconds`) to end; past them it is closed and left, and the cancellation
    goes on up: a tool that swallows it (a bare `except:` in a retry loop) never holds the run past its
    timeout or the time budget, as a hung sync tool's thread is left behind."""

    __slots__ = ("coro", "grace", "waiting")

    def __init__(self, coro: Coroutine[Any, Any, Any], waiting: Any, grace: float = CLEANUP_GRACE) -> None:
        self.coro, self.waiting, self.grace = coro, waiting, grace

    def __await__(self) -> Generator[Any, None, Any]:
        coro, waiting = self.coro, self.waiting
        grace: _Grace | None = None
        while True:
            thrown = None
            try:
                yield waiting
            except BaseException as exc:  # a cancellation (the deadline's, or the run's) goes in
                thrown = exc
            if grace is not None and grace.over(thrown):
                raise grace.abandon(coro)
            try:
                waiting = coro.send(None) if thrown is None else coro.throw(thrown)
            except StopIteration as done:
                if grace is not None:
                    grace.end()
                return done.value
            except BaseException:  # it ended with its exception (the cancellation, say)
                if grace is not None:
                    grace.end()
                raise
            if grace is None and isinstance(thrown, asyncio.CancelledError):  # it goes on: cleanup, or not
                grace = _Grace(thrown, self.grace)


class _Grace:
    """The time a cancelled coroutine has to end: a timer that cancels the task again when it runs
    out, told apart from any other cancellation (and taken back: the task's count stays the run's)."""

    def __init__(self, cause: asyncio.CancelledError, seconds: float) -> None:
        self.cause, self.fired = cause, False
        self.task = asyncio.current_task()
        self.timer = asyncio.get_running_loop().call_later(seconds, self._fire)

    def _fire(self) -> None:
        self.fired = True
        if self.task is not None:
            self.task.cancel()

    def over(self, thrown: BaseException | None) -> bool:
        """Whether `thrown` is this timer's cancellation: the grace ran out."""
        return self.fired and isinstance(thrown, asyncio.CancelledError)

    def end(self) -> None:
        self.timer.cancel()

    def abandon(self, coro: Coroutine[Any, Any, Any]) -> asyncio.CancelledError:
        """Leave the coroutine (closed, whatever it does about it) and give the first cancellation
        to raise: the deadline's becomes the tool's timeout, the run's cancels the run."""
        if self.task is not None:
            self.task.uncancel()
        try:
            coro.close()
        except RuntimeError:  # it ignored GeneratorExit too: kept, or its finalizer complains at exit
            _LEFT_BEHIND.append(coro)
        except Exception:  # its own cleanup failed: it is closed all the same
            pass
        return self.cause


_LEFT_BEHIND: list[Coroutine[Any, Any, Any]] = []  # tools that ignored every way to stop them


async def _in_daemon_thread(
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    call: Callable[[Callable[..., Any], dict[str, Any]], Any] | None = None,
) -> Any:
    """Run a sync tool off the event loop on a daemon worker thread, in a copy of the caller's
    context variables (as `asyncio.to_thread`: the run's span, a request id); `call(fn, kwargs)`,
    when given, makes the call there instead of `fn(**kwargs)` (`_made`: the value's outcome too).

    Daemon threads, not the default executor: a tool that hangs forever must
    not keep the process from exiting once its run has moved on. A host may
    carry the call out itself (`ToolHost.offload`): its value comes as it is, `call` not used.
    """
    if _host is not None and (hosted := _host.offload(fn, kwargs)) is not None:
        return await hosted
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    future: asyncio.Future[Any] = loop.create_future()

    settle = functools.partial(_settle, future)

    def job() -> Callable[[], object]:
        try:
            value = context.run(fn, **kwargs) if call is None else context.run(call, fn, kwargs)
            value = _Handed(value) if inspect.iscoroutine(value) else value
            outcome: tuple[Callable[[Any], None], Any] = (future.set_result, value)
        except BaseException as exc:  # handed to the awaiting coroutine
            exc = _stopped(exc) if isinstance(exc, StopIteration) else exc  # said here, on its thread
            outcome = (future.set_exception, _Carried(exc) if isinstance(exc, _UNCARRIED) else exc)
        return functools.partial(_deliver, loop, settle, outcome)

    _WORKERS.submit(job)
    try:
        return await future
    except asyncio.CancelledError:
        _close_late(future)
        raise
    except _Carried as carried:
        raise carried.exc from None


def _stopped(exc: StopIteration) -> RuntimeError:
    """A StopIteration a function raised, as Python words one that leaves a coroutine (a future refuses
    it): read on the function's worker thread, where its message may take the time it takes."""
    told = said_now(exc) or "no message"
    error = RuntimeError(f"function raised StopIteration ({told}): next() of an empty iterator?")
    error.__cause__ = exc
    return error


def _settle(future: asyncio.Future[Any], setter: Callable[[Any], None], value: Any) -> None:
    """On the event loop: a worker's outcome to the future awaiting it, unless that moved on."""
    if isinstance(value, _Handed):
        value = value.take()
    if not future.done():
        setter(value)
    elif inspect.iscoroutine(value):  # the caller moved on (cancelled): it is never awaited
        value.close()


def _deliver(loop: asyncio.AbstractEventLoop, settle: Callable[..., None], outcome: tuple[Any, Any]) -> None:
    """Hand a worker's outcome to the event loop that awaits it; a coroutine no loop will take (it closed
    while the tool ran: its run ended) is closed, never left to warn "never awaited" in later code."""
    try:
        loop.call_soon_threadsafe(settle, *outcome)
    except RuntimeError:
        if isinstance(outcome[1], _Handed):
            outcome[1].take().close()
        raise


class _Handed:
    """A coroutine on its way from a worker thread to the event loop. A loop that closes after the
    delivery was scheduled drops it unrun (`close()` clears its callbacks): the coroutine is then
    closed as this is collected, never left to warn "never awaited" in later code."""

    __slots__ = ("_coro",)

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro: Coroutine[Any, Any, Any] | None = coro

    def take(self) -> Coroutine[Any, Any, Any]:
        coro, self._coro = self._coro, None
        assert coro is not None, "a handed coroutine is taken once"
        return coro

    def __del__(self) -> None:
        if self._coro is not None:
            self._coro.close()


def _close_late(future: asyncio.Future[Any]) -> None:
    """A coroutine the worker handed back just before its caller was cancelled is never awaited: closed."""
    done = future.done() and not future.cancelled() and future.exception() is None
    if done and inspect.iscoroutine(late := future.result()):
        late.close()


# What a future cannot hand to its awaiting coroutine as itself: a GeneratorExit is thrown into the task's
# outermost coroutine, past every handler of the tool's (it escaped the run): it goes back `_Carried`. (A
# StopIteration, which a future refuses, goes as a RuntimeError: `_stopped`.)
_UNCARRIED = (GeneratorExit,)


class _Carried(Exception):
    """An exception of `_UNCARRIED` that a function run on a daemon thread raised, on its way back."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(exc)
        self.exc = exc


class _DaemonWorkers:
    """Reusable daemon threads; a new one starts only when none is idle.

    A hung tool keeps its thread for good, so the pool grows to the peak
    number of tools running (or hung) at once, and no further. A job returns
    its delivery, which runs after the thread counts itself idle again, so a
    caller that submits as soon as it has a result finds that thread free.
    A process forked from this one starts with an empty pool (the threads
    are not inherited, so their idle count and queue must not be either).
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], Callable[[], object]]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], Callable[[], object]]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                threading.Thread(target=self._work, name="endstate-tool", daemon=True).start()
        self._jobs.put(job)

    def _work(self) -> None:
        while True:
            deliver = self._jobs.get()()
            with self._lock:
                self._idle += 1
            with contextlib.suppress(RuntimeError):  # the loop closed while the tool hung
                deliver()
            del deliver  # what it hands over lives no longer than the loop keeps it (`_Handed`)


_WORKERS = _DaemonWorkers()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORKERS._reset)
