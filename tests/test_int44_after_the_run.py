"""int44: an exception in the caller's own code after a streamed run has ended is the caller's, not
the run's: the run's own stop is recorded and the exception goes on up.

An OpenAI Agents SDK stream or a LangGraph stream read to its end and then a bug in the caller's
block: the run stopped `success`, as a native `agent.run(...)` followed by a crash in the caller's
code. A Pydantic AI `run_stream` read to its end (or `iter` driven to its end) and then the same
bug: the run was recorded `error` (the caller's `KeyError`), a finished run counted as failed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents.testing.model import assistant_message
from integrations_support import Rig, graph_of, says
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.models.test import TestModel
from test_integrations import oa_agent

from agent import StopReason
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai

TASK = "int44_after"


def pai_agent() -> PAIAgent[None, Any]:
    return PAIAgent(TestModel(custom_output_text="all read", call_tools=[]), name="pai_after")


def check_success_then_bug(rig: Rig, agent: str, result: Any) -> None:
    assert result is not None and (result.reason, result.output) == (StopReason.SUCCESS, "all read")
    assert rig.stops(agent, TASK, "success") == 1
    assert rig.stops(agent, TASK, "error") == 0


def test_a_bug_after_a_pydantic_ai_stream_read_to_its_end_leaves_the_run_a_success(rig: Rig) -> None:
    runs: list[Any] = []

    async def go() -> None:
        async with pai.run_stream(pai_agent(), "read", hooks=rig.hooks, task_type=TASK) as run:
            runs.append(run)
            assert [t async for t in run.stream_text()]
            raise KeyError("the caller's own bug")

    with pytest.raises(KeyError, match="the caller's own bug"):
        asyncio.run(go())
    check_success_then_bug(rig, "pai_after", runs[0].result)


def test_a_bug_after_a_pydantic_ai_run_driven_to_its_end_leaves_the_run_a_success(rig: Rig) -> None:
    runs: list[Any] = []

    async def go() -> None:
        async with pai.iter(pai_agent(), "read", hooks=rig.hooks, task_type=TASK) as run:
            runs.append(run)
            assert [node async for node in run.agent_run]
            raise KeyError("the caller's own bug")

    with pytest.raises(KeyError, match="the caller's own bug"):
        asyncio.run(go())
    check_success_then_bug(rig, "pai_after", runs[0].result)


def test_a_bug_after_an_openai_agents_stream_read_to_its_end_leaves_the_run_a_success(rig: Rig) -> None:
    stream = oa.run_streamed(
        oa_agent([[assistant_message("all read")]]), "x", hooks=rig.hooks, task_type=TASK
    )

    async def go() -> None:
        async for _ in stream.stream_events():
            pass
        raise KeyError("the caller's own bug")

    with pytest.raises(KeyError):
        asyncio.run(go())
    check_success_then_bug(rig, "oa_agent", stream.result)


def test_a_bug_after_a_langgraph_stream_read_to_its_end_leaves_the_run_a_success(rig: Rig) -> None:
    stream = lg.astream(
        graph_of([says("all read")]), {"messages": [("user", "x")]}, hooks=rig.hooks, task_type=TASK
    )

    async def go() -> None:
        async for _ in stream:
            pass
        raise KeyError("the caller's own bug")

    with pytest.raises(KeyError):
        asyncio.run(go())
    check_success_then_bug(rig, "lg_agent", stream.result)
