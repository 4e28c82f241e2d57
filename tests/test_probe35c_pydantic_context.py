"""Probe 35c: a Pydantic AI run whose request outgrew the model's context window ends `limit`/`context`.

Pydantic AI raises `ModelContextWindowExceededError` when the provider rejects a request for not
fitting the model's context window (its Anthropic model maps the API's "prompt is too long" 400 to
it). Nothing in the run could shrink it: DESIGN's `limit`/`context`, as Endstate's own runs end
there and as the Claude Agent SDK's `prompt_too_long` does, counted with the limit stops the alerts
watch, not as an `error`. Like the other limits it ends an `iter` block as its result.

Pydantic AI's real `AnthropicModel`, through the `anthropic` SDK, against the local Messages API.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from integrations_support import Rig, rigged
from messages_api import MessagesAPI, Response, error
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from agent import LimitKind, StopReason
from agent.integrations import pydantic_ai as pai
from telemetry import names as n

TASK = "probe35c"
TOO_LONG = "prompt is too long: 250000 tokens > 200000 maximum"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


@asynccontextmanager
async def agent_answered(reply: Response) -> AsyncIterator[PAIAgent[None, str]]:
    """An agent on Pydantic AI's Anthropic model, whose one request the API answers with `reply`."""
    with MessagesAPI(reply) as api:
        async with httpx2.AsyncClient() as client:  # closed on the loop it ran on
            provider = AnthropicProvider(api_key="test", base_url=api.url, http_client=client)
            yield PAIAgent(AnthropicModel("claude-sonnet-4-5", provider=provider), name="ctx")


def too_long() -> Response:
    return error(400, TOO_LONG, type="invalid_request_error")


def check_context_limit(rig: Rig, res: Any) -> None:
    assert isinstance(res.raw, ModelContextWindowExceededError)
    assert (res.reason, res.limit) == (StopReason.LIMIT, LimitKind.CONTEXT), (res.reason, res.note)
    assert rig.stops("ctx", TASK, "limit", "context") == 1
    assert rig.stops("ctx", TASK, "error") == 0
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_LIMIT] == "context"


def test_a_request_too_long_for_the_context_window_is_a_context_limit(rig: Rig) -> None:
    async def run() -> Any:
        async with agent_answered(too_long()) as agent:
            return await pai.arun(agent, "summarise everything", hooks=rig.hooks, task_type=TASK)

    check_context_limit(rig, asyncio.run(run()))


def test_an_iter_block_ends_on_the_context_limit_without_raising(rig: Rig) -> None:
    async def drive() -> Any:
        async with (
            agent_answered(too_long()) as agent,
            pai.iter(agent, "summarise", hooks=rig.hooks, task_type=TASK) as run,
        ):
            async for _node in run.agent_run:
                pass
        return run.result

    check_context_limit(rig, asyncio.run(drive()))


def test_another_rejected_request_is_still_an_error(rig: Rig) -> None:
    async def run() -> Any:
        async with agent_answered(
            error(400, "tools.0: unknown field", type="invalid_request_error")
        ) as agent:
            return await pai.arun(agent, "x", hooks=rig.hooks, task_type=TASK)

    res = asyncio.run(run())
    assert res.reason is StopReason.ERROR, (res.reason, res.note)
    assert rig.stops("ctx", TASK, "error") == 1
