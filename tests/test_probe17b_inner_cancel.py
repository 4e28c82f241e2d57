"""A `CancelledError` a tool or a verifier raises itself (a library's cancelled future, a sync
function raising it) is their failure, not the caller's cancellation: the tool's is an error result
for the model and the run goes on; the verifier's ends the run as error, as any verifier that raises.
Before, both ended the run `cancelled` ("The run was cancelled."), which no caller had asked for
(probe17b). The run's own cancellation is still `cancelled`."""

from __future__ import annotations

import asyncio

from agent import Agent, StopReason, tool
from agent.models.scripted import ScriptedModel, call, finish


@tool
async def fetch(url: str) -> str:
    """Fetch a page."""
    inner = asyncio.get_running_loop().create_future()
    inner.cancel()  # as a client library's own cancelled request
    return await inner


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    raise asyncio.CancelledError("pool closed")


def test_a_tool_that_raises_cancelled_error_is_an_error_result_and_the_run_goes_on(make_agent) -> None:
    steps = [[call("fetch", url="u"), call("lookup", key="k")], [finish("done", "worked around it")]]
    agent = make_agent(*steps, tools=[fetch, lookup])
    result = agent.run("t")
    assert (result.reason, result.turns) == (StopReason.SUCCESS, 2), result.note
    answers = agent.model.requests[1].messages[-1]["content"]
    assert [a["is_error"] for a in answers] == [True, True]
    assert "CancelledError raised inside the tool (no message)" in answers[0]["content"]
    assert "CancelledError raised inside the tool (pool closed)" in answers[1]["content"]


def test_a_verifier_that_raises_cancelled_error_ends_the_run_as_error(make_agent) -> None:
    def check(ctx) -> list[str]:
        raise asyncio.CancelledError()

    result = make_agent([finish("done", "ok")], verifiers=[check]).run("t")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "CancelledError raised inside the verifier" in result.note


def test_the_callers_cancellation_during_a_tool_is_still_cancelled() -> None:
    started = asyncio.Event()

    @tool
    async def slow(url: str) -> str:
        """Fetch slowly."""
        started.set()
        await asyncio.sleep(60)
        return "late"

    agent = Agent("p", ScriptedModel([[call("slow", url="u")]]), tools=[slow])

    async def cancelled():
        task = asyncio.create_task(agent.arun("t"))
        await started.wait()
        task.cancel()
        return await task

    result = asyncio.run(cancelled())
    assert result.reason is StopReason.CANCELLED


def test_a_timeout_around_the_run_during_a_tool_is_still_cancelled() -> None:
    @tool
    async def slow(url: str) -> str:
        """Fetch slowly."""
        await asyncio.sleep(60)
        return "late"

    agent = Agent("p", ScriptedModel([[call("slow", url="u")]]), tools=[slow])

    async def timed():
        async with asyncio.timeout(0.5):
            return await agent.arun("t")

    assert asyncio.run(timed()).reason is StopReason.CANCELLED
