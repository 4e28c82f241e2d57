"""A tool's `SystemExit`, `KeyboardInterrupt` or another `BaseException` under another framework: the
framework lets it out of its run, and it goes on up to the caller (the integration does not stand in
the way of a process asked to end), but the run it left still ends with one stop recorded and its
span ended, and the sync entry point's event loop keeps nothing of it for the thread's next run.

Before: the run had no stop and its span never ended when the exception reached `arun` (it let it
by); a `SystemExit` or `KeyboardInterrupt` raised in a task of the framework's own (where each runs
its tools), which asyncio lets out of the loop at once, left the run's task pending on the thread's
kept loop, to go on in the thread's next sync run, raising there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import function_tool
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from integrations_support import Rig, calls, graph_of, rigged, says
from langchain_core.tools import tool as lc_tool
from langgraph.prebuilt import ToolNode
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.test import TestModel

from agent import StopReason
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from agent.integrations._sync import run_sync
from telemetry import names as n

TASK = "exits"


def pydantic_ai(tool: Callable[..., str], hooks: Any) -> Any:
    agent: PAIAgent[None, str] = PAIAgent(TestModel(), name="exiting")
    agent.tool_plain(tool)
    return pai.run(agent, "go", hooks=hooks, task_type=TASK)


def openai_agents(tool: Callable[..., str], hooks: Any) -> Any:
    steps = [
        ModelStep(output=[function_call(tool.__name__, {"path": "a"}, call_id="c1")]),
        ModelStep(output=[assistant_message("done")]),
    ]
    agent = OAAgent(name="exiting", model=ScriptedModel(steps), tools=[function_tool(tool)])
    return oa.run(agent, "go", hooks=hooks, task_type=TASK)


def langgraph(tool: Callable[..., str], hooks: Any) -> Any:
    graph = graph_of(
        [calls(tool.__name__, {"path": "a"}, "c1"), says("done")], tools=ToolNode([lc_tool(tool)])
    )
    graph.name = "exiting"
    return lg.run(graph, {"messages": [("user", "go")]}, hooks=hooks, task_type=TASK)


def cli(path: str) -> str:
    """A wrapped argparse CLI: it exits."""
    raise SystemExit(2)


def interrupted(path: str) -> str:
    """Ctrl-C inside."""
    raise KeyboardInterrupt


class Quit(BaseException):
    """A library's own control flow, not an `Exception` (as `bdb.BdbQuit`, gevent's `GreenletExit`)."""


def quitting(path: str) -> str:
    """A debugger quit inside."""
    raise Quit("quit")


def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def stops(rig: Rig) -> list[str]:
    return [str((s.attributes or {}).get(n.STOP_REASON)) for s in rig.run_spans()]


@pytest.mark.parametrize("tool", [cli, interrupted, quitting])
@pytest.mark.parametrize("framework", [pydantic_ai, openai_agents, langgraph])
def test_a_tools_exit_goes_up_with_the_run_ended_and_nothing_left_for_the_next_run(
    framework: Callable[..., Any], tool: Callable[..., str]
) -> None:
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    exc = {cli: SystemExit, interrupted: KeyboardInterrupt, quitting: Quit}[tool]
    with rigged() as first:
        with pytest.raises(exc):
            framework(tool, first.hooks)
        (stop,) = stops(first)  # one stop, its span ended, before the caller goes on
        assert stop in (str(StopReason.ERROR), str(StopReason.CANCELLED))
        assert sum(first.stops("exiting", TASK, r) for r in ("error", "cancelled")) == 1
    with rigged() as second:  # the same thread's next sync run is its own, and nothing of the first runs
        res = framework(look, second.hooks)
        assert res.reason is StopReason.SUCCESS
        assert stops(second) == [str(StopReason.SUCCESS)]
    assert stops(first) == [stop]


def pydantic_ai_exiting(exc: BaseException, hooks: Any) -> Any:
    def exiting(messages: Any, info: Any) -> Any:
        raise exc

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(exiting), name="exiting")
    return pai.arun(agent, "go", hooks=hooks, task_type=TASK)


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt()])
@pytest.mark.parametrize("sync", [True, False])
def test_an_exit_in_the_runs_own_task_ends_the_run_and_goes_up(
    rig: Rig, exc: BaseException, sync: bool
) -> None:
    """Raised in the run's own task (Pydantic AI calls its model there: a blocking client interrupted
    by Ctrl-C, say), the exception reached `arun`, which let it by: no stop, the run's span never
    ended. Now `error` of its type (a `SystemExit`) or `cancelled` (Ctrl-C), as in Endstate's own
    runs, and the exception goes on up. (The other frameworks run their tools, models and nodes in
    tasks of their own: see the test above.)"""
    with pytest.raises(type(exc)):
        if sync:
            run_sync(pydantic_ai_exiting(exc, rig.hooks))
        else:
            asyncio.run(pydantic_ai_exiting(exc, rig.hooks))
    if isinstance(exc, SystemExit):
        assert stops(rig) == [str(StopReason.ERROR)]
        (span,) = rig.run_spans()
        assert (span.attributes or {})[n.ERROR_TYPE] == "SystemExit"
    else:
        assert stops(rig) == [str(StopReason.CANCELLED)]


async def quitting_async(path: str) -> str:
    """A debugger quit inside."""
    raise Quit("quit")


async def openai_agents_stream(hooks: Any) -> Any:
    steps = [
        ModelStep(output=[function_call("quitting_async", {"path": "a"}, call_id="c1")]),
        ModelStep(output=[assistant_message("done")]),
    ]
    agent = OAAgent(name="exiting", model=ScriptedModel(steps), tools=[function_tool(quitting_async)])
    stream = oa.run_streamed(agent, "go", hooks=hooks, task_type=TASK)
    try:
        async for _ in stream.stream_events():
            pass
    finally:
        ended.append(stream.result)


async def langgraph_stream(hooks: Any) -> Any:
    tools = ToolNode([lc_tool(quitting_async)])
    graph = graph_of([calls("quitting_async", {"path": "a"}, "c1"), says("done")], tools=tools)
    graph.name = "exiting"
    stream = lg.astream(graph, {"messages": [("user", "go")]}, hooks=hooks, task_type=TASK)
    try:
        async for _ in stream:
            pass
    finally:
        ended.append(stream.result)


ended: list[Any] = []  # each stream's result, as its reader's `finally` saw it


@pytest.mark.parametrize("stream", [openai_agents_stream, langgraph_stream])
def test_a_streamed_run_a_tool_quits_ends_as_an_error_of_its_type_not_the_callers_cancel(
    rig: Rig, stream: Callable[..., Any]
) -> None:
    """The stream's own end took any such exception for the caller stopping its reading: `cancelled`,
    "The caller cancelled the run.", though nobody had."""
    ended.clear()
    with pytest.raises(Quit):
        asyncio.run(stream(rig.hooks))
    (res,) = ended
    assert (res.reason, res.error_type) == (StopReason.ERROR, "Quit")
    assert stops(rig) == [str(StopReason.ERROR)]
