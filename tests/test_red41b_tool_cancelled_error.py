"""A `CancelledError` a tool raises of its own (a library's cancelled future) while nobody cancels the
run, that the framework lets out of its run, ends the run `error` (type `CancelledError`), as such an
error out of Endstate's own loop is the tool's failure and not the caller's cancel (`tools.run_cancelled`).
Before, the OpenAI Agents SDK's run (a tool with `failure_error_function=None`) and Pydantic AI's ended
`cancelled`, "The caller cancelled the run.", though no caller had; a task the caller does cancel still
ends `cancelled`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import function_tool, set_tracing_disabled
from agents.testing.model import ScriptedModel, assistant_message, function_call
from integrations_support import rigged
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent import StopReason
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai

TASK = "red41b"


def oa_agent(gate: asyncio.Event | None) -> OAAgent[Any]:
    @function_tool(failure_error_function=None)
    async def fetch(path: str) -> str:
        """Fetch a file."""
        if gate is not None:
            gate.set()
            await asyncio.Event().wait()  # until the caller cancels
        raise asyncio.CancelledError("the library's future was cancelled")

    steps = [[function_call("fetch", {"path": "a"}, call_id="c1")], [assistant_message("done")]]
    set_tracing_disabled(True)
    return OAAgent(name="oa_agent", model=ScriptedModel(steps), tools=[fetch])


def pai_agent(gate: asyncio.Event | None) -> PAIAgent[None, str]:
    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse([ToolCallPart("fetch", {"path": "a"}, tool_call_id="c1")])
        return ModelResponse([TextPart("done")])

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(play), name="pai_agent")

    @agent.tool_plain
    async def fetch(path: str) -> str:
        """Fetch a file."""
        if gate is not None:
            gate.set()
            await asyncio.Event().wait()
        raise asyncio.CancelledError("the library's future was cancelled")

    return agent


FRAMEWORKS = {"openai_agents": (oa, oa_agent), "pydantic_ai": (pai, pai_agent)}


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_a_tools_own_cancelled_error_out_of_the_run_is_an_error_not_a_cancel(
    framework: str,
) -> None:
    module, build = FRAMEWORKS[framework]
    with rigged() as rig:
        res = module.run(build(None), "go", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "CancelledError")
    assert "cancelled" not in res.note.split(":")[0] and "caller" not in res.note
    assert rig.stops(res.agent, TASK, "error") == 1


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_a_run_the_caller_cancels_still_ends_cancelled(framework: str) -> None:
    module, build = FRAMEWORKS[framework]

    async def cancelled(hooks: Any) -> Any:
        gate = asyncio.Event()
        task = asyncio.create_task(module.arun(build(gate), "go", hooks=hooks, task_type=TASK))
        await gate.wait()
        task.cancel()
        return await task

    with rigged() as rig:
        res = asyncio.run(cancelled(rig.hooks))
    assert res.reason is StopReason.CANCELLED


def test_a_streamed_run_ended_by_a_tools_own_cancelled_error_is_read_to_its_end() -> None:
    """The stream never raises for a stop: the caller's `async for` ends, and `result` is the error."""

    async def read(hooks: Any) -> Any:
        stream = oa.run_streamed(oa_agent(None), "go", hooks=hooks, task_type=TASK)
        async for _ in stream.stream_events():
            pass
        return stream.result

    with rigged() as rig:
        res = asyncio.run(read(rig.hooks))
    assert (res.reason, res.error_type) == (StopReason.ERROR, "CancelledError")
