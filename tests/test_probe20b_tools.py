"""Tools a user writes with common mistakes: an async tool that swallows its cancellation (a bare
`except:` in a retry loop) and a parameter the model cannot pass by name (positional-only)."""

from __future__ import annotations

import asyncio
import time

import pytest

from agent import Agent, Budget, ConfigError, LimitKind, RunContext, StopReason, tool
from agent.models.scripted import ScriptedModel, call, finish
from agent.tools import execute


def ctx() -> RunContext:
    return RunContext("run-1", "agent", "task", "default")


def retrying(timeout: float | None, tries: int = 20) -> object:
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
    assert took < 4, f"the tool held the call {took:.1f} s past its 0.2 s timeout"


def test_the_run_goes_on_past_a_tool_that_swallows_its_cancellation() -> None:
    model = ScriptedModel([[call("fetch")], [finish("done", "fetched")]])
    agent = Agent("fetcher", model, tools=[retrying(0.2)], budget=Budget(max_seconds=None))  # type: ignore[list-item]
    start = time.monotonic()
    result = agent.run("Fetch the page.")
    assert result.reason is StopReason.SUCCESS
    assert "Last result (fetch): Error: tool 'fetch' timed out after 0.2 s." in result.summary
    assert time.monotonic() - start < 4


def test_the_time_budget_cuts_a_tool_that_swallows_its_cancellation() -> None:
    model = ScriptedModel([[call("fetch")], [finish("done", "fetched")]])
    agent = Agent("fetcher", model, tools=[retrying(None)], budget=Budget(max_seconds=0.5))  # type: ignore[list-item]
    start = time.monotonic()
    result = agent.run("Fetch the page.")
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.SECONDS)
    assert time.monotonic() - start < 4


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
    assert time.monotonic() - start < 4
