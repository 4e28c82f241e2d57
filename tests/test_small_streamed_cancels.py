"""A streamed run of another framework counts only the cancels asked since it began.

A run whose task is cancelled ends `cancelled` and leaves the cancel counted on the task
(`Task.cancelling()`: its caller reads it). The non-streamed entry points of the integrations count
cancels from their own start (`own_cancels`); the streamed ones did not: LangGraph's `astream` and
Pydantic AI's `run_stream` and `iter`, run in a task after a cancelled run, took a call's own
`CancelledError` (a library's cancelled future: the call's failure) for a cancel of the run, and ended
`cancelled` though nobody cancelled them (the graph's stream raised that CancelledError on to its
reader too). The OpenAI Agents SDK's `run_streamed` ended such a run `success`, with no output."""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent as OAAgent
from agents import set_tracing_disabled
from agents.testing.model import ModelStep, ScriptedModel
from integrations_support import Rig, graph_of, says
from langchain_core.messages import AIMessage
from test_integrations import pai_agent
from test_iso_cancel_counted import cancelled_then

from agent import StopReason
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai


def own_cancelled_error() -> asyncio.CancelledError:
    return asyncio.CancelledError("a library's cancelled future")


async def failing_node(state: Any) -> dict[str, Any]:
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    await future  # the node's own failure: the graph fails with it, nobody cancelled the run
    return {"messages": [AIMessage("never")]}


async def streamed_graph() -> Any:
    stream = lg.astream(graph_of([says("unused")], model_node=failing_node), {"messages": [("user", "go")]})
    async for _ in stream:
        pass
    return stream.result


def test_a_graph_streamed_after_a_cancelled_run_in_its_task_is_not_cancelled() -> None:
    alone = asyncio.run(streamed_graph())
    first, then, cancelling = cancelled_then(streamed_graph)
    assert first.reason is StopReason.CANCELLED and cancelling
    assert alone.reason is then.reason is StopReason.ERROR, then.note  # the node's failure, not a cancel


async def iterated_pai() -> Any:
    try:
        async with pai.iter(pai_agent([own_cancelled_error()]), "go") as run:
            async for _ in run.agent_run:
                pass
    except asyncio.CancelledError:
        pass
    return run.result


def test_a_pydantic_ai_run_iterated_after_a_cancelled_run_in_its_task_is_not_cancelled() -> None:
    alone = asyncio.run(iterated_pai())
    first, then, cancelling = cancelled_then(iterated_pai)
    assert first.reason is StopReason.CANCELLED and cancelling
    assert alone.reason is then.reason is StopReason.ERROR, then.note


async def streamed_pai(hooks: Any) -> None:
    """A stream whose second model call fails at the block's start: the block raises, its stop is counted."""
    agent = pai_agent([("look", {"path": "a"}, "c1"), own_cancelled_error()])
    try:
        async with pai.run_stream(agent, "go", hooks=hooks, task_type="streamed") as run:
            async for _ in run.stream_text():
                pass
    except asyncio.CancelledError:
        pass


def test_a_pydantic_ai_run_streamed_after_a_cancelled_run_in_its_task_is_not_cancelled(rig: Rig) -> None:
    asyncio.run(streamed_pai(rig.hooks))
    assert rig.stops("pai_agent", "streamed", "error") == 1  # alone: the call's failure
    first, _, cancelling = cancelled_then(lambda: streamed_pai(rig.hooks))
    assert first.reason is StopReason.CANCELLED and cancelling
    assert rig.stops("pai_agent", "streamed", "cancelled") == 0
    assert rig.stops("pai_agent", "streamed", "error") == 2


def fails(call: Any) -> Any:
    raise own_cancelled_error()


async def streamed_oa() -> Any:
    stream = oa.run_streamed(OAAgent(name="oa_agent", model=ScriptedModel([ModelStep.respond(fails)])), "go")
    async for _ in stream.stream_events():
        pass
    return stream.result


def test_an_openai_agents_run_streamed_whose_model_call_raises_its_own_cancelled_error_is_an_error() -> None:
    """As `arun`: the SDK ends its run task on that CancelledError and its stream quietly, with no
    output and no cancel asked, which read as `success` with no output."""
    set_tracing_disabled(True)
    try:
        alone = asyncio.run(streamed_oa())
        first, then, cancelling = cancelled_then(streamed_oa)
    finally:
        set_tracing_disabled(False)
    assert (alone.reason, alone.error_type) == (StopReason.ERROR, "CancelledError"), alone.note
    assert first.reason is StopReason.CANCELLED and cancelling
    assert (then.reason, then.error_type) == (StopReason.ERROR, "CancelledError"), then.note
