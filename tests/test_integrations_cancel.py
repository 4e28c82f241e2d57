"""A foreign run whose task is cancelled while a tool runs ends `cancelled`: the tool's span is
closed as interrupted (no failed span), the stop counted, and nothing of the run left open."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import function_tool, set_tracing_disabled
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from integrations_support import Rig, calls, graph_of, rigged, says
from langchain_core.tools import tool as lc_tool
from langgraph.prebuilt import ToolNode
from opentelemetry.trace import StatusCode
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.models.test import TestModel

from agent import StopReason
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from telemetry import names as n

TASK = "cancelled_mid_tool"


@pytest.fixture
def rig() -> Iterator[Rig]:
    set_tracing_disabled(True)
    with rigged() as rig:
        yield rig
    set_tracing_disabled(False)


def pydantic_ai(slow: Callable[..., Any], hooks: Any) -> Any:
    agent: PAIAgent[None, str] = PAIAgent(TestModel(), name="slow_agent")
    agent.tool_plain(slow)
    return pai.arun(agent, "go", hooks=hooks, task_type=TASK)


def openai_agents(slow: Callable[..., Any], hooks: Any) -> Any:
    steps = [
        ModelStep(output=[function_call("slow", {"path": "a"}, call_id="c1")]),
        ModelStep(output=[assistant_message("done")]),
    ]
    agent = OAAgent(name="slow_agent", model=ScriptedModel(steps), tools=[function_tool(slow)])
    return oa.arun(agent, "go", hooks=hooks, task_type=TASK)


def langgraph(slow: Callable[..., Any], hooks: Any) -> Any:
    graph = graph_of([calls("slow", {"path": "a"}, "c1"), says("done")], tools=ToolNode([lc_tool(slow)]))
    graph.name = "slow_agent"
    return lg.arun(graph, {"messages": [("user", "go")]}, hooks=hooks, task_type=TASK)


@pytest.mark.parametrize("framework", [pydantic_ai, openai_agents, langgraph])
def test_a_run_cancelled_while_its_tool_runs_ends_cancelled_with_the_tool_cut_off(
    rig: Rig, framework: Callable[..., Any]
) -> None:
    async def go() -> Any:
        started, never = asyncio.Event(), asyncio.Event()

        async def slow(path: str) -> str:
            """Take forever."""
            started.set()
            await never.wait()
            return "never"

        task = asyncio.create_task(framework(slow, rig.hooks))
        await started.wait()
        task.cancel()
        return await task

    res = asyncio.run(go())
    assert res.reason is StopReason.CANCELLED
    (tool,) = [s for s in rig.spans() if s.name == f"{n.SPAN_EXECUTE_TOOL} slow"]
    assert (tool.attributes or {})[n.ERROR_TYPE] == n.ERROR_INTERRUPTED
    assert tool.status.status_code is not StatusCode.ERROR  # cut off by the caller: no failure
    assert rig.stops("slow_agent", TASK, "cancelled") == 1
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_REASON] == "cancelled"
