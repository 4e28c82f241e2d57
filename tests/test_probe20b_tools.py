"""Tools a user writes: an async tool that swallows its cancellation (a bare `except:` in a retry
loop), a parameter the model cannot pass by name (positional-only), a `functools.partial` and a
callable object."""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

import pytest

from agent import Agent, Budget, ConfigError, LimitKind, RunContext, StopReason, Tool, tool
from agent.models.scripted import ScriptedModel, call, finish
from agent.tools import execute


def ctx() -> RunContext:
    return RunContext("run-1", "agent", "task", "default")


def retrying(timeout: float | None, tries: int = 60) -> object:
    """A tool that retries on any failure, its own cancellation too (a bare `except:`): it gives up
    after `tries` half-second waits, so the old code ends the test late instead of hanging it."""

    @tool(timeout=timeout)
    async def fetch() -> str:
        """Fetch a page, retrying on failure."""
        for _ in range(tries):
            try:
                await asyncio.sleep(0.5)
                raise ConnectionError("refused")
            except:  # noqa: E722  # the mistake under test: it catches CancelledError too
                continue
        return "gave up retrying"

    return fetch


def test_an_async_tool_that_swallows_its_cancellation_still_ends_at_its_timeout() -> None:
    start = time.monotonic()
    outcome = asyncio.run(execute(retrying(0.2), {}, ctx()))  # type: ignore[arg-type]
    took = time.monotonic() - start
    assert (outcome.is_error, outcome.error_type) == (True, "timeout"), outcome
    assert took < 12, f"the tool held the call {took:.1f} s past its 0.2 s timeout"


def test_the_run_goes_on_past_a_tool_that_swallows_its_cancellation() -> None:
    model = ScriptedModel([[call("fetch")], [finish("done", "fetched")]])
    agent = Agent("fetcher", model, tools=[retrying(0.2)], budget=Budget(max_seconds=None))  # type: ignore[list-item]
    start = time.monotonic()
    result = agent.run("Fetch the page.")
    assert result.reason is StopReason.SUCCESS
    assert "Last result (fetch): Error: tool 'fetch' timed out after 0.2 s." in result.summary
    assert time.monotonic() - start < 12  # was: held until its 30 s of retries ended


def test_the_time_budget_cuts_a_tool_that_swallows_its_cancellation() -> None:
    model = ScriptedModel([[call("fetch")], [finish("done", "fetched")]])
    agent = Agent("fetcher", model, tools=[retrying(None)], budget=Budget(max_seconds=0.5))  # type: ignore[list-item]
    start = time.monotonic()
    result = agent.run("Fetch the page.")
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.SECONDS)
    assert time.monotonic() - start < 12  # was: held until its 30 s of retries ended


def test_a_tool_that_cleans_up_after_its_cancellation_still_finishes_its_cleanup() -> None:
    seen = []

    @tool(timeout=0.1)
    async def write() -> str:
        """Write, and roll back when cut off."""
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await asyncio.sleep(0.3)  # a rollback over the network
            seen.append("rolled back")
            raise
        return "never"

    outcome = asyncio.run(execute(write, {}, ctx()))
    assert outcome.error_type == "timeout"
    assert seen == ["rolled back"]


def test_a_positional_only_parameter_is_refused_when_the_tool_is_made() -> None:
    def read(path: str, /) -> str:
        """Read a file."""
        return path

    with pytest.raises(ConfigError, match=r"tool 'read': a model passes named arguments only, so path"):
        tool(read)


def test_the_callers_cancel_ends_a_run_whose_tool_swallows_it() -> None:
    model = ScriptedModel([[call("fetch")], [finish("done", "fetched")]])
    agent = Agent("fetcher", model, tools=[retrying(None)], budget=Budget(max_seconds=None))  # type: ignore[list-item]

    async def main() -> object:
        task = asyncio.ensure_future(agent.arun("Fetch the page."))
        await asyncio.sleep(0.3)
        task.cancel()  # as Ctrl-C under asyncio.run, or a shutdown, does
        return await task

    start = time.monotonic()
    result = asyncio.run(main())
    assert result.reason is StopReason.CANCELLED  # type: ignore[attr-defined]
    assert time.monotonic() - start < 12  # was: held until its 30 s of retries ended


# -- what @tool takes besides a def --------------------------------------------------------------


def read_file(path: str, limit: int = 10) -> str:
    """Read the first lines of a file."""
    return f"{path}: {limit} lines"


class Lookup:
    """Look a customer up by id."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    def __call__(self, customer: str) -> str:
        return self.table.get(customer, "no such customer")


class AsyncLookup(Lookup):
    async def __call__(self, customer: str) -> str:  # type: ignore[override]
        await asyncio.sleep(0)
        return self.table.get(customer, "no such customer")


def test_a_partial_is_a_tool_named_and_described_by_its_function() -> None:
    short = tool(functools.partial(read_file, limit=3))
    assert (short.name, short.description) == ("read_file", "Read the first lines of a file.")
    assert short.parameters["required"] == ["path"]
    assert asyncio.run(execute(short, {"path": "a.txt"}, ctx())).text == "a.txt: 3 lines"


@pytest.mark.parametrize("kind", [Lookup, AsyncLookup])
def test_a_callable_object_is_a_tool_named_by_its_class_and_run_as_it_is(kind: type[Lookup]) -> None:
    found = tool(kind({"c1": "Ada"}), name="lookup")
    assert (found.name, found.description) == ("lookup", "Look a customer up by id.")
    assert found.parameters["properties"] == {"customer": {"type": "string"}}
    assert asyncio.run(execute(found, {"customer": "c1"}, ctx())).text == "Ada"  # awaited, not "<coroutine"
    assert tool(kind({})).name == kind.__name__


def test_a_tool_built_by_hand_on_an_async_callable_object_is_awaited() -> None:
    schema = {"type": "object", "properties": {"customer": {"type": "string"}}}
    by_hand = Tool("lookup", AsyncLookup({"c1": "Ada"}), "Look a customer up.", schema)
    outcome = asyncio.run(execute(by_hand, {"customer": "c1"}, ctx()))
    assert (outcome.text, outcome.is_error) == ("Ada", False)


# -- parameter names the API refuses -------------------------------------------------------------


def test_a_parameter_name_the_api_refuses_is_refused_when_the_tool_is_made() -> None:
    def measure(größe: int, stadt: str) -> str:  # a Python name, not an API one
        """Measure."""
        return ""

    with pytest.raises(
        ConfigError, match=r"tool 'measure': parameter names 'größe' are not ones a model API"
    ):
        tool(measure)
    long_name = "x" * 65
    schema = {
        "type": "object",
        "properties": {long_name: {"type": "string"}, "filter[id]": {"type": "string"}},
    }
    with pytest.raises(ConfigError, match=r"parameter names 'x{65}', 'filter\[id\]' are not"):
        Tool("search", lambda **kw: "", "Search.", schema)


def test_names_the_api_takes_are_kept() -> None:
    schema = {
        "type": "object",
        "properties": {"filter.id": {"type": "string"}, "page-size": {"type": "integer"}},
    }
    assert Tool("search", lambda **kw: "", "Search.", schema).parameters == schema


def test_an_async_def_behind_a_plain_decorator_runs_and_its_value_is_the_result() -> None:
    def logged(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:  # a plain def: the tool looks sync
            return fn(*args, **kwargs)

        return wrapper

    @tool(timeout=0.5)
    @logged
    async def fetch(url: str) -> str:
        """Fetch a page."""
        await asyncio.sleep(0)
        return f"the page at {url}"

    assert asyncio.run(execute(fetch, {"url": "a"}, ctx())).text == "the page at a"  # not "<coroutine ...>"

    @tool(timeout=0.2)
    @logged
    async def hangs(url: str) -> str:
        """Hang."""
        await asyncio.sleep(3600)
        return "never"

    outcome = asyncio.run(execute(hangs, {"url": "a"}, ctx()))
    assert (outcome.is_error, outcome.error_type) == (True, "timeout")
