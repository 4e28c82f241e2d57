"""Probe 35c: a Pydantic AI tool that ran past its timeout is a timed-out call, not a failed one.

Pydantic AI's `tool_timeout=` (or a tool's own `timeout=`) ends a call that runs too long with a
retry prompt, "Timed out after N seconds.", which the run reads as a retried call: counted as an
`error` of type `ToolRetryError`, as a tool that asked the model to try again. It is the call
timing out, as Endstate's own tool timeouts are: outcome `timeout`. Read node by node (`run`) or by
the capability (`iter`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from integrations_support import Rig, rigged
from pydantic_ai import Agent as PAIAgent
from pydantic_ai import ModelRetry
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


def agent_calling(tool: str) -> PAIAgent[None, str]:
    """Calls `tool` once, then answers; `fetch` never returns within the agent's `tool_timeout`."""

    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        part = TextPart("done") if len(messages) > 1 else ToolCallPart(tool, {}, "t1")
        return ModelResponse([part], usage=RequestUsage(input_tokens=10, output_tokens=4))

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(play), name="pai_timeout", tool_timeout=0.05)

    @agent.tool_plain
    async def fetch() -> str:
        """Fetch a page (it never answers)."""
        await asyncio.Event().wait()
        return "never"

    @agent.tool_plain
    def again() -> str:
        """Ask the model to try again."""
        raise ModelRetry("try another page")

    return agent


async def iterated(agent: PAIAgent[None, str], rig: Rig) -> Any:
    async with pai.iter(agent, "go", hooks=rig.hooks, task_type=TASK) as run:
        async for _node in run.agent_run:
            pass
    return run.result


RUNS = {
    "run": lambda agent, rig: pai.run(agent, "go", hooks=rig.hooks, task_type=TASK),
    "iter": lambda agent, rig: asyncio.run(iterated(agent, rig)),
}


def outcomes(rig: Rig, tool: str) -> dict[str, float]:
    found = {}
    for outcome in ("ok", "error", "timeout"):
        labels = {"agent": "pai_timeout", "task_type": TASK, "tool": tool, "outcome": outcome}
        found[outcome] = rig.value("agent_tool_calls_total", **labels)
    return found


@pytest.mark.parametrize("entry", sorted(RUNS))
def test_a_tool_past_its_timeout_is_a_timed_out_call(rig: Rig, entry: str) -> None:
    res = RUNS[entry](agent_calling("fetch"), rig)
    assert (res.reason, res.output) == (StopReason.SUCCESS, "done")
    assert outcomes(rig, "fetch") == {"ok": 0, "error": 0, "timeout": 1}


@pytest.mark.parametrize("entry", sorted(RUNS))
def test_a_tool_asking_for_a_retry_is_still_a_failed_call(rig: Rig, entry: str) -> None:
    RUNS[entry](agent_calling("again"), rig)
    assert outcomes(rig, "again") == {"ok": 0, "error": 1, "timeout": 0}
