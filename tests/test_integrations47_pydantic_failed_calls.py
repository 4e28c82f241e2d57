"""A Pydantic AI model call that fails mid-run, in a run read by Endstate's capability (a streamed
run, or one with an `event_stream_handler`): its span and its model metrics carry the failure's type,
as in a run read node by node. Pydantic AI runs a streamed request in a task of its own and cancels
that task when the stream fails: the call was taken for one the caller cut off (`interrupted`), and
the provider's failure was counted nowhere among the run's model calls."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from integrations_support import Rig
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from agent import StopReason
from agent.integrations import pydantic_ai as pai
from telemetry import names as n


class ProviderDown(Exception):
    """The model provider failing mid-run."""


def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def failing_second_call() -> PAIAgent[None, str]:
    """A model whose first call asks for `look` and whose second raises, streamed or not."""
    calls = 0

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise ProviderDown("the provider is down")
        return ModelResponse(parts=[ToolCallPart("look", {"path": "a"}, tool_call_id="c1")])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise ProviderDown("the provider is down")
        yield {0: DeltaToolCall(name="look", json_args='{"path": "a"}', tool_call_id="c1")}

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(answer, stream_function=stream), name="flaky")
    agent.tool_plain(look)
    return agent


async def streamed(hooks: Any) -> Any:
    async with pai.run_stream(failing_second_call(), "go", hooks=hooks) as run:
        async for _ in run.stream_text():
            pass
    return run.result


async def with_event_handler(hooks: Any) -> Any:
    async def read(ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    return await pai.arun(failing_second_call(), "go", hooks=hooks, event_stream_handler=read)


async def by_nodes(hooks: Any) -> Any:
    return await pai.arun(failing_second_call(), "go", hooks=hooks)


@pytest.mark.parametrize("run", [streamed, with_event_handler, by_nodes])
def test_a_model_call_that_fails_mid_run_carries_its_failures_type(rig: Rig, run: Callable[..., Any]) -> None:
    res = asyncio.run(run(rig.hooks))
    assert (res.reason, res.error_type) == (StopReason.ERROR, "ProviderDown")
    chats = [s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT + " ")]
    chats.sort(key=lambda s: s.start_time or 0)
    assert [(s.attributes or {}).get(n.ERROR_TYPE) for s in chats] == [None, "ProviderDown"]
    failed = {**rig.run_labels(), "error_type": "ProviderDown"}
    samples = [
        s
        for metric in rig.registry.collect()
        for s in metric.samples
        if s.name == "gen_ai_client_operation_duration_seconds_count" and s.labels.items() >= failed.items()
    ]
    assert [s.value for s in samples] == [1.0]
