"""A Pydantic AI usage limit raised while the caller reads a stream ends the block, on every release
the pydantic-ai extra allows (deps53).

tests/test_integrations_streamed.py asks this with `TestModel` and `output_tokens_limit=5`: from
Pydantic AI 2.78 `TestModel` counts a tool call's tokens, the limit trips as the second reply opens,
before the block begins, and that test's premise (a limit while the caller reads) no longer holds.
Here the model streams its reply word by word, which every tested release counts alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from agent.integrations import pydantic_ai as endstate_pai
from agent.result import LimitKind, StopReason


async def words(messages: list[Any], info: AgentInfo) -> AsyncIterator[str]:
    for i in range(20):
        yield f"word{i} "


def test_a_limit_raised_while_the_caller_reads_ends_the_block_as_the_runs_limit() -> None:
    read: list[str] = []
    agent: Agent[None, str] = Agent(FunctionModel(stream_function=words), name="wordy")

    async def go() -> Any:
        limits = UsageLimits(output_tokens_limit=5)
        async with endstate_pai.run_stream(agent, "x", usage_limits=limits) as run:
            assert run.response is not None  # the stream opened: the limit is not yet reached
            async for text in run.stream_text(delta=True):
                read.append(text)
            read.append("after the stream")
        return run

    res = asyncio.run(go()).result
    assert "after the stream" not in read  # the limit ended the block where the caller read
    assert res is not None and (res.reason, res.limit, res.turns) == (StopReason.LIMIT, LimitKind.TOKENS, 1)
    assert res.output_tokens > 5
