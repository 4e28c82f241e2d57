"""int44: a model's call to a tool its agent does not have is a failed tool call (`unknown_tool`):
its span (`execute_tool NAME`, an error, `error.type` `unknown_tool`) and its count
(`agent_tool_calls_total{tool="other",outcome="error"}`), the same in every kind of run.

Before, only LangGraph runs showed the call, typed `tool_error` like a tool that raised. Under the
OpenAI Agents SDK the call had no span and no count: with the SDK's default `tool_not_found_behavior`
the run stopped `error` (`ModelBehaviorError`) with nothing saying which call, and with
`"return_error_to_model"` the model got "Tool 'x' not found." while the trace showed no call at all.
Endstate's own local runs and Pydantic AI runs showed none either; Claude Agent SDK runs typed it
`tool_error`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import RunConfig, function_tool
from agents import Usage as OAUsage
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from integrations_support import FakeCLI, Rig, assistant, calls, graph_of, result, rigged, says, tool_result
from integrations_support import tool_use as claude_tool_use
from opentelemetry.trace import StatusCode
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent import Agent, Budget, StopReason, tool
from agent.integrations import claude_agent_sdk as claude
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from agent.models.scripted import ScriptedModel as EndstateScripted
from agent.models.scripted import call as asks
from agent.models.scripted import finish
from telemetry import names as n

AGENT, TASK = "int44_unknown", "int44"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as r:
        yield r


def usage() -> OAUsage:
    return OAUsage(requests=1, input_tokens=10, output_tokens=4, total_tokens=14)


@function_tool
def search(query: str) -> str:
    """Search the notes."""
    return f"found {query}"


def oa_agent() -> OAAgent[Any]:
    steps = [
        ModelStep(
            output=[function_call("delete_everything", {"confirm": True}, call_id="u1")], usage=usage()
        ),
        ModelStep(output=[assistant_message("done")], usage=usage()),
    ]
    return OAAgent(name=AGENT, model=ScriptedModel(steps), tools=[search])


def check_unknown_call(rig: Rig, agent: str = AGENT) -> None:
    (span,) = [s for s in rig.spans() if s.name == "execute_tool delete_everything"]
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {}).get("error.type") == "unknown_tool"
    labels = {"agent": agent, "task_type": TASK, "tool": n.TOOL_OTHER}
    assert rig.value("agent_tool_calls_total", **labels, outcome="error") == 1
    (turn,) = [s for s in rig.spans() if s.context.span_id == (span.parent and span.parent.span_id)]
    assert turn.name == n.SPAN_TURN


def test_an_unknown_tool_the_sdk_stops_on_is_a_failed_call_and_an_error_stop(rig: Rig) -> None:
    res = oa.run(oa_agent(), "clean up", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "ModelBehaviorError")
    check_unknown_call(rig)


def test_an_unknown_tool_the_sdk_answers_is_a_failed_call(rig: Rig) -> None:
    config = RunConfig(tool_not_found_behavior="return_error_to_model")
    res = oa.run(oa_agent(), "clean up", hooks=rig.hooks, task_type=TASK, run_config=config)
    assert (res.reason, res.output) == (StopReason.SUCCESS, "done")
    check_unknown_call(rig)
    assert rig.value("agent_tool_calls_total", agent=AGENT, task_type=TASK, tool="search", outcome="ok") == 0


def test_an_unknown_tool_in_endstates_own_run_is_a_failed_call(rig: Rig) -> None:
    @tool
    def look(path: str) -> str:
        """Look at a file."""
        return path

    steps = [[asks("delete_everything", confirm=True)], [finish("done", "done")]]
    agent = Agent(
        name=AGENT,
        model=EndstateScripted(steps),
        tools=[look],
        hooks=rig.hooks,
        task_type=TASK,
        budget=Budget(max_turns=5, max_seconds=60),
    )
    res = agent.run("clean up")
    assert res.reason is StopReason.SUCCESS
    check_unknown_call(rig)


def test_an_unknown_tool_under_pydantic_ai_is_a_failed_call(rig: Rig) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("delete_everything", {"confirm": True}, "u1")])
        return ModelResponse(parts=[TextPart("done")])

    agent = PAIAgent(FunctionModel(model), name=AGENT)

    @agent.tool_plain
    def look(path: str) -> str:
        """Look at a file."""
        return path

    res = pai.run(agent, "clean up", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.output) == (StopReason.SUCCESS, "done")
    check_unknown_call(rig)


@pytest.mark.parametrize("exact_counts", [False, True])
def test_an_unknown_tool_under_langgraph_is_an_unknown_call(rig: Rig, exact_counts: bool) -> None:
    graph = graph_of([calls("delete_everything", {"confirm": True}, "u1"), says("done")])
    res = lg.run(
        graph,
        {"messages": [("user", "clean up")]},
        hooks=rig.hooks,
        task_type=TASK,
        agent_name=AGENT,
        exact_counts=exact_counts,
    )
    assert res.reason is StopReason.SUCCESS
    check_unknown_call(rig)


def test_an_unknown_tool_under_the_claude_agent_sdk_is_an_unknown_call(rig: Rig) -> None:
    refused = "<tool_use_error>Error: No such tool available: delete_everything</tool_use_error>"
    lines = [
        assistant("m1", claude_tool_use("u1", "delete_everything", {"confirm": True})),
        tool_result("u1", refused, is_error=True),
        assistant("m2", {"type": "text", "text": "done"}),
        result(result="done"),
    ]
    res = claude.run("clean up", transport=FakeCLI(lines), hooks=rig.hooks, task_type=TASK, agent_name=AGENT)
    assert res.reason is StopReason.SUCCESS
    check_unknown_call(rig)
