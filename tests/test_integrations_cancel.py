"""A foreign run stopped inside a tool: its task cancelled while the tool runs (`cancelled`, the
tool's span closed as interrupted, no failed span, nothing left open), or a tool guardrail tripped
(`gave_up`, cause `guardrail`)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import (
    ToolGuardrailFunctionOutput,
    function_tool,
    tool_input_guardrail,
    tool_output_guardrail,
)
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from integrations_support import Rig, calls, graph_of, says
from langchain_core.tools import tool as lc_tool
from langgraph.prebuilt import ToolNode
from opentelemetry.trace import StatusCode
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.models.test import TestModel

from agent import StopReason
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from agent.integrations._sync import run_sync
from telemetry import names as n

TASK = "cancelled_mid_tool"


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


@tool_input_guardrail
def no_secrets_in(data: Any) -> ToolGuardrailFunctionOutput:
    return ToolGuardrailFunctionOutput.raise_exception(output_info="a secret path")


@tool_output_guardrail
def no_secrets_out(data: Any) -> ToolGuardrailFunctionOutput:
    return ToolGuardrailFunctionOutput.raise_exception(output_info="a secret")


@pytest.mark.parametrize(
    ("guardrails", "name"),
    [
        ({"tool_input_guardrails": [no_secrets_in]}, "no_secrets_in"),
        ({"tool_output_guardrails": [no_secrets_out]}, "no_secrets_out"),
    ],
)
def test_an_openai_agents_tool_guardrail_tripwire_is_gave_up_guardrail_naming_it(
    rig: Rig, guardrails: dict[str, Any], name: str
) -> None:
    @function_tool(**guardrails)
    def read(path: str) -> str:
        """Read a file."""
        return "the secret"

    steps = [
        ModelStep(output=[function_call("read", {"path": "a"}, call_id="c1")]),
        ModelStep(output=[assistant_message("done")]),
    ]
    agent = OAAgent(name="guarded", model=ScriptedModel(steps), tools=[read])
    res = oa.run(agent, "read a", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.cause) == (StopReason.GAVE_UP, "guardrail")
    assert res.note.startswith(f"Guardrail {name} tripped")
    assert rig.stops("guarded", TASK, "gave_up", cause="guardrail") == 1


@pytest.fixture
def ctrl_c_as_python_has_it() -> Iterator[None]:
    """SIGINT handled by Python's default handler, which `asyncio.run` replaces with its own only
    then (another test, or a test runner, may have left another handler)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("ctrl_c_as_python_has_it")
@pytest.mark.parametrize("framework", [pydantic_ai, openai_agents, langgraph])
def test_ctrl_c_during_a_sync_run_ends_it_cancelled(rig: Rig, framework: Callable[..., Any]) -> None:
    """The sync entry points run the framework in an `asyncio.Runner`, which turns Ctrl-C (SIGINT) into
    the cancellation of the run: `cancelled`, as the table says, the tool cut off."""

    async def slow(path: str) -> str:
        """Wait for Ctrl-C."""
        signal.raise_signal(signal.SIGINT)  # what a person's Ctrl-C sends the process
        await asyncio.Event().wait()
        return "never"

    async def run() -> Any:
        return await framework(slow, rig.hooks)

    res = run_sync(run())
    assert res.reason is StopReason.CANCELLED
    assert rig.stops("slow_agent", TASK, "cancelled") == 1
