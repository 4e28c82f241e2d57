"""A direct `resume(...)` of a foreign run after its wait's deadline (`help_seconds`) ends the run
`help_timeout`, the framework not run, as a late answer to Endstate's own run does (`Agent.resume`:
"an answer that comes after the deadline is too late"), and as the store's runner ends it. Before, the
late approval was taken: the approved call ran and the run ended `success` past its deadline."""

from __future__ import annotations

import time
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import set_tracing_disabled
from agents.testing.model import ScriptedModel, assistant_message, function_call
from integrations_support import FakeCLI, assistant, calls, graph_of, remove, result, rigged, says, tool_use
from langgraph.checkpoint.memory import InMemorySaver
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent import StopReason
from agent.integrations import claude_agent_sdk as claude
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai

TASK = "red41b"
WAIT = 0.05  # seconds the person has; the test answers after them


def oa_case(wait: float = WAIT) -> tuple[Any, Any]:
    set_tracing_disabled(True)
    steps = [[function_call("remove", {"path": "a"}, call_id="c1")], [assistant_message("removed")]]
    agent = OAAgent(name="oa_agent", model=ScriptedModel(steps), tools=[remove])
    return (lambda h: oa.run(agent, "go", hooks=h, task_type=TASK, help_seconds=wait)), (
        lambda h, r: oa.resume(agent, r, approved=True, hooks=h, task_type=TASK)
    )


def pai_case(wait: float = WAIT) -> tuple[Any, Any]:
    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = any(isinstance(p, ToolReturnPart) for m in messages for p in getattr(m, "parts", ()))
        return ModelResponse([TextPart("deleted")] if done else [ToolCallPart("delete", {"path": "a"}, "c1")])

    agent: PAIAgent[None, Any] = PAIAgent(
        FunctionModel(play), name="pai_agent", output_type=[str, pai.DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    return (lambda h: pai.run(agent, "go", hooks=h, task_type=TASK, help_seconds=wait)), (
        lambda h, r: pai.resume(agent, r, approved=True, hooks=h, task_type=TASK)
    )


def lg_case(wait: float = WAIT) -> tuple[Any, Any]:
    graph = graph_of([calls("delete", {"path": "a"}, "c1"), says("deleted")], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    return (
        lambda h: lg.run(
            graph, {"messages": [("user", "go")]}, config, hooks=h, task_type=TASK, help_seconds=wait
        )
    ), (lambda h, r: lg.resume(graph, r, approved=True, hooks=h, task_type=TASK))


def claude_case(wait: float = WAIT) -> tuple[Any, Any]:
    deferred = {"id": "c1", "name": "Bash", "input": {"command": "rm a"}}
    asked = [assistant("m1", tool_use("c1", "Bash", {"command": "rm a"})), result(deferred_tool_use=deferred)]
    return (
        lambda h: claude.run("go", transport=FakeCLI(asked), hooks=h, task_type=TASK, help_seconds=wait)
    ), (
        lambda h, r: claude.resume(
            r,
            approved=True,
            transport=FakeCLI([result(result="done")], unprompted=True),
            hooks=h,
            task_type=TASK,
        )
    )


CASES = {"openai_agents": oa_case, "pydantic_ai": pai_case, "langgraph": lg_case, "claude": claude_case}


@pytest.mark.parametrize("framework", list(CASES))
def test_an_answer_after_the_deadline_ends_the_run_help_timeout_and_runs_nothing(framework: str) -> None:
    start, answer = CASES[framework]()
    with rigged() as rig:
        asked = start(rig.hooks)
        assert asked.reason is StopReason.NEED_HELP and asked.suspension is not None
        time.sleep(max(0.0, asked.suspension.deadline - time.time()) + 0.01)  # the deadline passes
        late = answer(rig.hooks, asked)
    assert (late.reason, late.run_id, late.turns) == (StopReason.HELP_TIMEOUT, asked.run_id, asked.turns)
    assert "before the deadline" in late.note
    assert rig.stops(asked.agent, TASK, "help_timeout") == 1 and rig.stops(asked.agent, TASK, "success") == 0


@pytest.mark.parametrize("framework", list(CASES))
def test_an_answer_in_time_is_still_taken(framework: str) -> None:
    start, answer = CASES[framework](3600.0)
    with rigged() as rig:
        asked = start(rig.hooks)
        done = answer(rig.hooks, asked)
    assert done.reason is StopReason.SUCCESS
