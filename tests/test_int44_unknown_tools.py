"""int44: a model's call to a tool its agent does not have is a failed tool call (`unknown_tool`).

Endstate's own runs on Temporal record it with its span (`execute_tool NAME`, an error) and count it
(`agent_tool_calls_total{tool="other",outcome="error"}`), as LangGraph runs did. Under the OpenAI
Agents SDK the call had no span and no count: with the SDK's default `tool_not_found_behavior` the
run stopped `error` (`ModelBehaviorError`) with nothing saying which call, and with
`"return_error_to_model"` the model got "Tool 'x' not found." while the trace showed no call at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import RunConfig, function_tool
from agents import Usage as OAUsage
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from integrations_support import Rig, rigged
from opentelemetry.trace import StatusCode

from agent import StopReason
from agent.integrations import openai_agents as oa
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
        ModelStep(output=[function_call("delete_everything", {"confirm": True}, "u1")], usage=usage()),
        ModelStep(output=[assistant_message("done")], usage=usage()),
    ]
    return OAAgent(name=AGENT, model=ScriptedModel(steps), tools=[search])


def check_unknown_call(rig: Rig) -> None:
    (span,) = [s for s in rig.spans() if s.name == "execute_tool delete_everything"]
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {}).get("error.type") == "unknown_tool"
    labels = {"agent": AGENT, "task_type": TASK, "tool": n.TOOL_OTHER}
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
