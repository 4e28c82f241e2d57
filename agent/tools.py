"""Tools: plain Python functions with JSON-schema parameters and a timeout."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import queue
import threading
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from agent.context import RunContext
from agent.errors import ConfigError

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    dict: "object",
}


@dataclass(frozen=True)
class Tool:
    """A function the model may call.

    A parameter named `ctx` receives the `RunContext` and is not shown to the
    model. `needs_approval` tools never run before a person approves them.
    """

    name: str
    fn: Callable[..., Any]
    description: str
    parameters: dict[str, Any]
    timeout: float = 30.0
    needs_approval: bool = False
    wants_ctx: bool = field(default=False, repr=False)

    @cached_property
    def signature(self) -> inspect.Signature:
        return inspect.signature(self.fn)

    def spec(self) -> dict[str, Any]:
        """The tool as the model is told of it."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call gave back to the model."""

    text: str
    is_error: bool = False
    error_type: str | None = None


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float = 30.0,
    needs_approval: bool = False,
) -> Any:
    """Make a `Tool` from a function; its type hints give the JSON schema.

    Use bare (`@tool`) or with options (`@tool(timeout=5, needs_approval=True)`).
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        doc = inspect.getdoc(f) or ""
        if not (description or doc):
            raise ConfigError(f"tool {f.__name__!r} needs a description: add a docstring")
        params, wants_ctx = _schema_of(f)
        return Tool(
            name=name or f.__name__,
            fn=f,
            description=description or doc,
            parameters=params,
            timeout=timeout,
            needs_approval=needs_approval,
            wants_ctx=wants_ctx,
        )

    return wrap(fn) if fn is not None else wrap


def _schema_of(fn: Callable[..., Any]) -> tuple[dict[str, Any], bool]:
    hints = typing.get_type_hints(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    wants_ctx = False
    for param in inspect.signature(fn).parameters.values():
        if param.name == "ctx":
            wants_ctx = True
            continue
        properties[param.name] = {"type": _json_type(fn, param.name, hints.get(param.name, str))}
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    schema = {"type": "object", "properties": properties, "required": required}
    return schema | {"additionalProperties": False}, wants_ctx


def _json_type(fn: Callable[..., Any], param: str, hint: Any) -> str:
    origin = typing.get_origin(hint) or hint
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        origin = typing.get_origin(args[0]) or args[0]
    if origin not in _JSON_TYPES:
        raise ConfigError(
            f"tool {fn.__name__!r}: parameter {param!r} has type {hint!r}; "
            f"use one of str, int, float, bool, list, dict or build a Tool with a schema"
        )
    return _JSON_TYPES[origin]


async def execute(tool_: Tool, arguments: dict[str, Any], ctx: RunContext) -> ToolOutcome:
    """Run one tool call; an exception or a timeout becomes an error result."""
    kwargs = dict(arguments)
    if tool_.wants_ctx:
        kwargs["ctx"] = ctx
    try:
        tool_.signature.bind(**kwargs)
    except TypeError as exc:
        return ToolOutcome(f"Error: bad arguments for {tool_.name!r}: {exc}", True, "bad_arguments")
    deadline = asyncio.timeout(tool_.timeout)
    try:
        async with deadline:
            value = await _call(tool_.fn, kwargs)
    except TimeoutError as exc:
        if not deadline.expired():  # the tool raised TimeoutError itself
            return ToolOutcome(f"Error: TimeoutError: {exc}", True, "TimeoutError")
        return ToolOutcome(
            f"Error: tool {tool_.name!r} timed out after {tool_.timeout:g} s.", True, "timeout"
        )
    except Exception as exc:  # a tool's failure is data for the model, not a crash
        return ToolOutcome(f"Error: {type(exc).__name__}: {exc}", True, type(exc).__name__)
    return ToolOutcome(value if isinstance(value, str) else json.dumps(value, default=str))


async def _call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(**kwargs)
    return await _in_daemon_thread(fn, kwargs)


async def _in_daemon_thread(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Run a sync tool off the event loop on a daemon worker thread.

    Daemon threads, not the default executor: a tool that hangs forever must
    not keep the process from exiting once its run has moved on.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():
            setter(value)

    def job() -> None:
        try:
            outcome: tuple[Callable[[Any], None], Any] = (future.set_result, fn(**kwargs))
        except BaseException as exc:  # handed to the awaiting coroutine
            outcome = (future.set_exception, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed while the tool hung
            loop.call_soon_threadsafe(settle, *outcome)

    _WORKERS.submit(job)
    return await future


class _DaemonWorkers:
    """Reusable daemon threads; a new one starts only when none is idle.

    A hung tool keeps its thread for good, so the pool grows to the peak
    number of tools running (or hung) at once, and no further.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                threading.Thread(target=self._work, name="endstate-tool", daemon=True).start()
        self._jobs.put(job)

    def _work(self) -> None:
        while True:
            self._jobs.get()()
            with self._lock:
                self._idle += 1


_WORKERS = _DaemonWorkers()
