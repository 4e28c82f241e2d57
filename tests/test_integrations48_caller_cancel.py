"""The caller's cancel of a foreign run is met as Endstate's own `arun` meets it: the result comes back
`cancelled` (recorded once, in the metrics and on the run span), no `CancelledError` and no
`TimeoutError` (issue 1's resolution: "never an exception out of run" wins over asyncio convention;
`tests/test_probe17b_inner_cancel.py` holds Endstate's own to it). The cancel is not taken back
(`uncancel`): the caller's task is still cancelling after the run, as `endstate demo` reads it to stop
on Ctrl-C; an `asyncio.timeout` around the run takes its own cancel back, and code after the block
goes on. Each case runs Endstate's own `arun` too, so the two cannot drift apart."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from integrations_support import Rig
from test_integrations_cancel import TASK, langgraph, openai_agents, pydantic_ai

from agent import Agent, StopReason, tool
from agent.models.scripted import ScriptedModel, call
from telemetry import names as n


def endstate(slow: Callable[..., Any], hooks: Any) -> Any:
    model = ScriptedModel([[call("slow", path="a")]])
    return Agent("slow_agent", model, tools=[tool(slow)], hooks=hooks, task_type=TASK).arun("go")


FRAMEWORKS = [endstate, pydantic_ai, openai_agents, langgraph]


def recorded_once_as_cancelled(rig: Rig) -> None:
    assert rig.stops("slow_agent", TASK, "cancelled") == 1
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_REASON] == "cancelled"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_timeout_around_a_run_gives_its_cancelled_result_and_the_code_after_goes_on(
    rig: Rig, framework: Callable[..., Any]
) -> None:
    seen: dict[str, Any] = {}

    async def go() -> Any:
        async with asyncio.timeout(None) as deadline:

            async def slow(path: str) -> str:
                """Take forever."""
                deadline.reschedule(asyncio.get_running_loop().time())  # the caller's timeout, now
                await asyncio.Event().wait()
                return "never"

            res = await framework(slow, rig.hooks)
        seen["expired"] = deadline.expired()
        seen["cancelling"] = asyncio.current_task().cancelling()  # type: ignore[union-attr]
        await asyncio.sleep(0)  # no cancel left pending: the code after the block awaits
        return res

    res = asyncio.run(go())  # a TimeoutError here would fail the test
    assert res.reason is StopReason.CANCELLED
    assert seen == {"expired": True, "cancelling": 0}
    recorded_once_as_cancelled(rig)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_cancelled_run_returns_its_result_and_leaves_the_callers_task_cancelling(
    rig: Rig, framework: Callable[..., Any]
) -> None:
    seen: dict[str, Any] = {}

    async def go() -> Any:
        started = asyncio.Event()

        async def slow(path: str) -> str:
            """Take forever."""
            started.set()
            await asyncio.Event().wait()
            return "never"

        async def caller() -> Any:
            res = await framework(slow, rig.hooks)
            seen["cancelling"] = asyncio.current_task().cancelling()  # type: ignore[union-attr]
            return res

        task = asyncio.create_task(caller())
        await started.wait()
        task.cancel()
        return await task

    res = asyncio.run(go())
    assert res.reason is StopReason.CANCELLED
    assert seen == {"cancelling": 1}  # as `endstate demo`'s `_interrupted` reads a Ctrl-C
    recorded_once_as_cancelled(rig)
