"""What an integration is given that no run can take is refused before the run begins: a run begun
and left by the exception has no stop, and its span never ends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from integrations_support import Rig
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from agent import StopReason
from agent.errors import ConfigError
from agent.integrations import pydantic_ai as pai


async def streamed(agent: Any, **kwargs: Any) -> None:
    async with pai.run_stream(agent, "go", **kwargs) as run:
        await run.stream_text()


async def iterated(agent: Any, **kwargs: Any) -> None:
    async with pai.iter(agent, "go", **kwargs) as run:
        async for _ in run.agent_run:
            pass


ENTRIES = {
    "run": lambda agent, **kw: pai.run(agent, "go", **kw),
    "run_stream": lambda agent, **kw: asyncio.run(streamed(agent, **kw)),
    "iter": lambda agent, **kw: asyncio.run(iterated(agent, **kw)),
}


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("usage", [{"input_tokens": 5}, 5])
def test_a_pydantic_ai_usage_that_is_no_run_usage_is_refused_before_the_run(
    rig: Rig, entry: str, usage: Any
) -> None:
    """It was read once the run had begun: an `AttributeError` out of the integration, the run with
    no stop and its span open."""
    agent: PAIAgent[None, str] = PAIAgent(TestModel(), name="delegate")
    with pytest.raises(ConfigError, match="usage= is Pydantic AI's RunUsage"):
        ENTRIES[entry](agent, hooks=rig.hooks, usage=usage)
    assert rig.run_spans() == []


def test_a_pydantic_ai_run_usage_is_still_taken(rig: Rig) -> None:
    agent: PAIAgent[None, str] = PAIAgent(TestModel(), name="delegate")
    res = pai.run(agent, "go", hooks=rig.hooks, usage=RunUsage(input_tokens=7, output_tokens=1))
    assert res.reason is StopReason.SUCCESS
    assert res.usage.input_tokens > 0
