"""Probe 35c: a Pydantic AI run's own `timeout=` is a budget of seconds, not the caller cancelling.

Pydantic AI raises `RunTimedOut` when a run's `timeout=` passes. It subclasses `RunCancelled` (the
application's own `cancel()`), so a mapping by class alone reads the run out of time as
`cancelled`: a resumable non-end that the limit-share alerts never see. The run used up the seconds
it was given: `limit`/`seconds`, with that ceiling shown as `agent_budget_limit`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from integrations_support import Rig, rigged
from pydantic_ai import Agent as PAIAgent
from pydantic_ai import CancellationToken
from pydantic_ai.exceptions import RunCancelled, RunTimedOut
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from agent import LimitKind, StopReason
from agent.integrations import pydantic_ai as pai
from telemetry import names as n

TASK = "probe35c"
TIMEOUT = 0.2  # the tool never returns: the deadline always passes first, wherever the run is then


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


def stalled_agent() -> PAIAgent[None, str]:
    """One model call asking for a tool that waits for good, then (never reached) an answer."""

    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        part = TextPart("done") if len(messages) > 1 else ToolCallPart("wait", {}, "w1")
        return ModelResponse([part], usage=RequestUsage(input_tokens=10, output_tokens=4))

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(play), name="timed")

    @agent.tool_plain
    async def wait() -> str:
        """Wait for something that never comes."""
        await asyncio.Event().wait()
        return "never"

    return agent


def check_seconds_limit(rig: Rig, res: Any) -> None:
    assert isinstance(res.raw, RunTimedOut)
    assert (res.reason, res.limit) == (StopReason.LIMIT, LimitKind.SECONDS), res.note
    assert res.summary.startswith("Stopped: limit (seconds budget used up) after ")
    assert rig.stops("timed", TASK, "limit", "seconds") == 1
    assert rig.stops("timed", TASK, "cancelled") == 0
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_REASON] == "limit"
    assert (span.attributes or {})[n.STOP_LIMIT] == "seconds"


def test_a_run_past_its_timeout_is_a_seconds_limit_with_its_ceiling_shown(rig: Rig) -> None:
    res = pai.run(stalled_agent(), "go", hooks=rig.hooks, task_type=TASK, timeout=TIMEOUT)
    check_seconds_limit(rig, res)
    ceiling = rig.value("agent_budget_limit", agent="timed", task_type=TASK, limit="seconds")
    assert ceiling == TIMEOUT


def test_a_run_driven_node_by_node_past_its_timeout_ends_the_block_as_a_seconds_limit(rig: Rig) -> None:
    async def drive() -> Any:
        async with pai.iter(stalled_agent(), "go", hooks=rig.hooks, task_type=TASK, timeout=TIMEOUT) as run:
            async for _node in run.agent_run:
                pass
        return run.result

    check_seconds_limit(rig, asyncio.run(drive()))


def test_the_applications_own_cancel_is_still_cancelled(rig: Rig) -> None:
    """`RunCancelled` that is no timeout (a `CancellationToken` fired) stays `cancelled`."""
    token = CancellationToken()
    agent = stalled_agent()

    @agent.tool_plain
    async def stop() -> str:
        """Cancel the run, then wait."""
        token.cancel()
        await asyncio.Event().wait()
        return "never"

    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            [ToolCallPart("stop", {}, "s1")], usage=RequestUsage(input_tokens=10, output_tokens=4)
        )

    res = pai.run(
        agent, "go", hooks=rig.hooks, task_type=TASK, model=FunctionModel(play), cancellation_token=token
    )
    assert isinstance(res.raw, RunCancelled) and not isinstance(res.raw, RunTimedOut)
    assert res.reason is StopReason.CANCELLED, res.note
    assert rig.stops("timed", TASK, "cancelled") == 1
