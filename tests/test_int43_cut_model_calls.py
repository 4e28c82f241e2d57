"""int43: a foreign run cancelled while its model call is open. Endstate's own loop marks that call
`interrupted` (`error.type`, as `names.ERROR_INTERRUPTED` is defined: a call cut off before its
end); a home-grown loop's or Pydantic AI's run marked it `CancelledError`, on the span and in the
chat duration metric's `error_type`, so the same cancellation read as a failed call of another type
in the same dashboards. A CancelledError raised while nobody cancels the run (a library's own) is
still that call's failure, with its type."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from integrations_support import Rig, rigged
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent import Agent, StopReason, observe_run
from agent.integrations import pydantic_ai as pai
from agent.models.scripted import ScriptedModel
from agent.result import RunResult
from telemetry import names as n


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as r:
        yield r


def chat_error(rig: Rig) -> str:
    [chat] = [s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT + " ")]
    return str((chat.attributes or {}).get(n.ERROR_TYPE))


def chat_durations(rig: Rig) -> dict[str, float]:
    """Chat duration observations by `error_type`."""
    found: dict[str, float] = {}
    for metric in rig.registry.collect():
        for s in metric.samples:
            if s.name.endswith("_count") and s.labels.get("gen_ai_operation_name") == "chat" and s.value:
                found[s.labels.get("error_type", "")] = s.value
    return found


async def cancelled_soon(work: Any) -> Any:
    task = asyncio.create_task(work)
    await asyncio.sleep(0.3)
    task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        return None


async def hang(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    await asyncio.sleep(30)
    raise AssertionError("never answered")


def test_native_runs_mark_the_cut_call_interrupted(rig: Rig) -> None:
    """What the foreign runs must match."""

    class Hang(ScriptedModel):
        async def complete(self, request: Any) -> Any:
            await asyncio.sleep(30)

    result = asyncio.run(cancelled_soon(Agent("native", Hang([]), hooks=rig.hooks).arun("go")))
    assert isinstance(result, RunResult) and result.reason is StopReason.CANCELLED
    assert chat_error(rig) == n.ERROR_INTERRUPTED


def test_a_pydantic_ai_run_cancelled_in_its_model_call_marks_it_interrupted(rig: Rig) -> None:
    agent: PAIAgent[None, Any] = PAIAgent(FunctionModel(hang), name="pai")
    result = asyncio.run(cancelled_soon(pai.arun(agent, "go", hooks=rig.hooks, task_type="t")))
    assert isinstance(result, RunResult) and result.reason is StopReason.CANCELLED
    assert chat_error(rig) == n.ERROR_INTERRUPTED
    assert "CancelledError" not in chat_durations(rig)


def test_a_homegrown_run_cancelled_in_its_model_call_marks_it_interrupted(rig: Rig) -> None:
    async def loop() -> None:
        with (
            observe_run(rig.hooks, agent="hg", task_type="t", model="m") as run,
            run.turn(),
            run.model_call(),
        ):
            await asyncio.sleep(30)

    asyncio.run(cancelled_soon(loop()))
    assert chat_error(rig) == n.ERROR_INTERRUPTED
    assert "CancelledError" not in chat_durations(rig)
    [span] = rig.run_spans()
    assert (span.attributes or {})[n.STOP_REASON] == "cancelled"


def test_a_cancelled_error_nobody_asked_for_is_still_the_calls_failure(rig: Rig) -> None:
    """A library's cancelled future raised in the call while the run goes on: a failed call."""

    async def loop() -> None:
        with (
            observe_run(rig.hooks, agent="hg", task_type="t", model="m") as run,
            run.turn(),
            run.model_call(),
        ):
            raise asyncio.CancelledError()

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(loop())
    assert chat_error(rig) == "CancelledError"
