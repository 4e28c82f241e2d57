"""int43: an OpenAI Agents SDK agent run as a tool (`Agent.as_tool`) whose own tool waits for an
approval suspends the outer run; resumed, the SDK runs the approved call and ends the outer tool
call with `on_tool_end` alone (its `on_tool_start` was in the suspended segment). The resumed
segment made no span for that call and counted it in no tool metric: the trace showed the
approval, then the outer model's answer to a call that never ran."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import Usage as OAUsage
from agents import function_tool
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from integrations_support import Rig, rigged

from agent import StopReason
from agent.integrations import openai_agents as oa
from telemetry import names as n


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as r:
        yield r


def usage() -> OAUsage:
    return OAUsage(requests=1, input_tokens=10, output_tokens=4, total_tokens=14)


def outer_agent() -> OAAgent[Any]:
    @function_tool(needs_approval=True)
    def remove(path: str) -> str:
        """Remove a file."""
        return f"removed {path}"

    inner_steps = [
        ModelStep(output=[function_call("remove", {"path": "a"}, call_id="r1")], usage=usage()),
        ModelStep(output=[assistant_message("inner removed a")], usage=usage()),
    ]
    inner = OAAgent(name="inner", model=ScriptedModel(inner_steps), tools=[remove])
    outer_steps = [
        ModelStep(output=[function_call("ask_inner", {"input": "remove a"}, call_id="c1")], usage=usage()),
        ModelStep(output=[assistant_message("done")], usage=usage()),
    ]
    return OAAgent(
        name="outer",
        model=ScriptedModel(outer_steps),
        tools=[inner.as_tool("ask_inner", "Ask the inner agent.")],
    )


def test_the_agent_tool_resumed_after_an_approval_inside_it_has_its_span_and_count(rig: Rig) -> None:
    agent = outer_agent()
    asked = oa.run(agent, "go", hooks=rig.hooks, task_type="t")
    assert asked.reason is StopReason.NEED_HELP and asked.suspension and asked.suspension.pending
    assert asked.suspension.pending.name == "remove"
    rig.exporter.clear()
    done = oa.resume(agent, asked, approved=True, hooks=rig.hooks, task_type="t")
    assert (done.reason, done.output) == (StopReason.SUCCESS, "done")
    [call] = [s for s in rig.spans() if s.name == f"{n.SPAN_EXECUTE_TOOL} ask_inner"]
    attrs = call.attributes or {}
    assert attrs[n.GEN_AI_TOOL_CALL_ID] == "c1" and n.ERROR_TYPE not in attrs
    [continued] = [s for s in rig.spans() if (s.attributes or {}).get(n.AGENT_TURN_CONTINUED)]
    assert call.parent is not None and call.parent.span_id == continued.context.span_id
    labels = {"agent": "outer", "task_type": "t", "tool": "ask_inner", "outcome": "ok"}
    assert rig.value(n.METRIC_TOOL_CALLS + "_total", **labels) == 1  # counted once: the first segment cut it
