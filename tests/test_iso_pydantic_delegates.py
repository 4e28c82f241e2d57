"""Isolation between Pydantic AI delegate runs that share their caller's usage.

Pydantic AI's agent delegation gives a delegate run `usage=ctx.usage`: the caller's `RunUsage`,
which every delegate adds its calls to. A delegate observed as a run of its own counts in its
totals the calls of that usage no observed run saw (a delegate's delegate run plainly). Two
delegates run at once (the model asked for both tools in one reply: Pydantic AI runs them
concurrently) each saw the other's calls added meanwhile, and counted them as its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

from integrations_support import Rig
from pydantic_ai import Agent as PAIAgent
from pydantic_ai import RunContext as PAIRunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from agent import StopReason
from agent.integrations import pydantic_ai as pai
from telemetry import names as n

TASK = "iso"


def answering(text: str, input_tokens: int, delay: float) -> FunctionModel:
    async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(delay)
        return ModelResponse([TextPart(text)], usage=RequestUsage(input_tokens=input_tokens, output_tokens=1))

    return FunctionModel(play)


def outer_model() -> FunctionModel:
    replies = iter(
        [
            [
                ToolCallPart("delegate", {"who": "slow"}, "c1"),
                ToolCallPart("delegate", {"who": "quick"}, "c2"),
            ],
            [TextPart("both answered")],
        ]
    )

    async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(next(replies), usage=RequestUsage(input_tokens=10, output_tokens=1))

    return FunctionModel(play)


def test_delegates_run_at_once_each_count_only_their_own_calls(rig: Rig) -> None:
    delegates = {
        "slow": PAIAgent(answering("slow answer", 100, 0.2), name="slow_delegate"),
        "quick": PAIAgent(answering("quick answer", 1000, 0.0), name="quick_delegate"),
    }
    outer: PAIAgent[None, str] = PAIAgent(outer_model(), name="outer")
    nested: dict[str, Any] = {}

    @outer.tool
    async def delegate(ctx: PAIRunContext[None], who: str) -> str:
        """Ask a delegate."""
        res = await pai.arun(delegates[who], "answer", usage=ctx.usage, hooks=rig.hooks, task_type=TASK)
        nested[who] = res
        return res.output

    res = pai.run(outer, "ask both", hooks=rig.hooks, task_type=TASK)
    assert res.reason is StopReason.SUCCESS, res.note
    assert (nested["slow"].input_tokens, nested["quick"].input_tokens) == (100, 1000)
    assert res.input_tokens == 20  # its own two calls; Pydantic AI's 1,120 holds the delegates' too
    tokens = f"{n.METRIC_RUN_TOKENS}_sum"
    assert rig.value(tokens, agent="slow_delegate", task_type=TASK, stop_reason="success") == 101
