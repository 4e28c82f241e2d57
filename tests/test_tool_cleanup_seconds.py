"""`@tool(cleanup_seconds=...)`: how long an async tool cut short may go on cleaning up.

A cut tool (its timeout, the time budget, a cancellation) was given a fixed 2 s (`CLEANUP_GRACE`) to
end before it was left behind: a rollback that takes longer was abandoned half done, and nothing
let the tool's author say it needs more. Each tool now says so itself.
"""

from __future__ import annotations

import asyncio

import pytest

from agent import ConfigError, RunContext, tool
from agent.tools import CLEANUP_GRACE, execute


def ctx() -> RunContext:
    return RunContext("run-1", "agent", "task", "default")


def writer(cleanup_seconds: float, seen: list[str]) -> object:
    @tool(timeout=0.05, cleanup_seconds=cleanup_seconds)
    async def write() -> str:
        """Write, and roll back when cut off (the rollback takes 0.4 s)."""
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            seen.append("rolling back")
            await asyncio.sleep(0.4)  # a rollback over the network
            seen.append("rolled back")
            raise
        return "never"

    return write


def test_a_tool_given_the_time_finishes_its_rollback() -> None:
    seen: list[str] = []
    outcome = asyncio.run(execute(writer(5, seen), {}, ctx()))  # type: ignore[arg-type]
    assert outcome.error_type == "timeout"
    assert seen == ["rolling back", "rolled back"]


def test_a_tool_given_less_is_left_behind_mid_rollback() -> None:
    seen: list[str] = []
    outcome = asyncio.run(execute(writer(0.05, seen), {}, ctx()))  # type: ignore[arg-type]
    assert outcome.error_type == "timeout"
    assert seen == ["rolling back"]  # closed at its cleanup's first wait past the 0.05 s


def test_the_default_is_the_old_grace() -> None:
    @tool
    async def read() -> str:
        """Read."""
        return "x"

    assert read.cleanup_seconds == CLEANUP_GRACE == 2.0


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), 3601, "5", True, None])
def test_a_bad_cleanup_seconds_is_refused_when_the_tool_is_made(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"cleanup_seconds must be a number of seconds from 0 to 3600"):

        @tool(cleanup_seconds=bad)  # type: ignore[arg-type]
        async def read() -> str:
            """Read."""
            return "x"
