"""Probe 35c: of Pydantic AI tool calls running at once, the one whose tool raised is a failed call.

A tool raising (not `ModelRetry`) ends a Pydantic AI run, its siblings cancelled. Read node by node,
the run knew only that one of the calls running at once raised: none was counted failed, the
failure missing from the tool-call metrics (read by the capability, as under `iter`, it was
counted). The raising call is the one Pydantic AI's tool execution was running when it raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from integrations_support import Rig, rigged
from opentelemetry.trace import StatusCode
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from agent import StopReason
from agent.integrations import pydantic_ai as pai

TASK = "probe35c"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


def agent_calling_both() -> PAIAgent[None, str]:
    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            return ModelResponse([TextPart("done")])
        calls = [ToolCallPart("wait", {}, "w1"), ToolCallPart("parse", {}, "p1")]
        return ModelResponse(calls, usage=RequestUsage(input_tokens=10, output_tokens=4))

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(play), name="pai_parallel")

    @agent.tool_plain
    async def wait() -> str:
        """Wait for good (cancelled when its sibling fails)."""
        await asyncio.Event().wait()
        return "never"

    @agent.tool_plain
    async def parse() -> str:
        """Fail."""
        await asyncio.sleep(0)
        raise ValueError("unparseable")

    return agent


def counted(rig: Rig, tool: str, outcome: str) -> float:
    labels = {"agent": "pai_parallel", "task_type": TASK, "tool": tool, "outcome": outcome}
    return rig.value("agent_tool_calls_total", **labels)


def test_the_call_that_raised_among_others_is_the_failed_one(rig: Rig) -> None:
    res = pai.run(agent_calling_both(), "go", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "ValueError")
    assert counted(rig, "parse", "error") == 1
    assert counted(rig, "wait", "error") == counted(rig, "wait", "ok") == 0  # cut off, not failed
    (span,) = [s for s in rig.spans() if s.name == "execute_tool parse"]
    assert span.status.status_code is StatusCode.ERROR
