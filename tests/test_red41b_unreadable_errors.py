"""An exception whose `str()` itself raises, out of a framework's run: the run still ends `error`
with the exception's own type, its spans end, and nothing but the framework's own error reaches
the caller (before, the integration raised the `str()` failure out of `run`, left the run's span
open and recorded no stop; Pydantic AI's and the SDK's runs were labelled with that failure's type)."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import set_tracing_disabled
from agents.testing.model import ModelStep, ScriptedModel, function_call
from integrations_support import calls, graph_of, read, rigged, says
from langchain_core.tools import tool as lc_tool
from langgraph.prebuilt import ToolNode
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent import StopReason, observe_run
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from telemetry import names as n

TASK = "red41b"


class Unreadable(Exception):
    """An exception whose message cannot be read (a library's broken `__str__`)."""

    def __str__(self) -> str:
        raise RuntimeError("this __str__ is broken")


def pai_run(hooks: Any) -> Any:
    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse([ToolCallPart("fails", {"path": "a"}, tool_call_id="c1")])
        return ModelResponse([TextPart("done")])

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(play), name="pai_agent")

    @agent.tool_plain
    def fails(path: str) -> str:
        """Always fails."""
        raise Unreadable()

    return pai.run(agent, "go", hooks=hooks, task_type=TASK)


def oa_run(hooks: Any) -> Any:
    """The model call raises (the SDK itself reads the message of a tool's error, and fails on it)."""
    steps = [[function_call("read", {"path": "a"}, call_id="c1")], ModelStep(error=Unreadable())]
    set_tracing_disabled(True)
    agent = OAAgent(name="oa_agent", model=ScriptedModel(steps), tools=[read])
    return oa.run(agent, "go", hooks=hooks, task_type=TASK)


def lg_run(hooks: Any) -> Any:
    @lc_tool
    def fails(path: str) -> str:
        """Always fails."""
        raise Unreadable()

    graph = graph_of([calls("fails", {"path": "a"}, "c1"), says("done")], tools=ToolNode([fails]))
    return lg.run(graph, {"messages": [("user", "go")]}, hooks=hooks, task_type=TASK)


@pytest.mark.parametrize("run", [pai_run, oa_run, lg_run], ids=["pydantic_ai", "openai_agents", "langgraph"])
def test_a_framework_error_whose_str_raises_is_an_error_stop_of_its_own_type(run: Any) -> None:
    with rigged() as rig:  # fails on a span left open
        res = run(rig.hooks)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "Unreadable")
    assert res.note.startswith("Unreadable: ") and "could not be read" in res.note
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_REASON] == "error"


@pytest.mark.parametrize("where", ["tool", "turn"])
def test_an_unreadable_error_out_of_an_observed_block_is_raised_as_it_is_and_the_run_ends(where: str) -> None:
    with (
        rigged() as rig,
        pytest.raises(Unreadable),
        observe_run(rig.hooks, agent="hg_agent", task_type=TASK) as run,
        run.turn(),
    ):
        if where == "tool":
            with run.tool("fails", {"path": "a"}, "c1"):
                raise Unreadable()
        raise Unreadable()
    assert run.result is not None and (run.result.reason, run.result.error_type) == (
        StopReason.ERROR,
        "Unreadable",
    )
    tools = [s for s in rig.spans() if s.name.startswith(n.SPAN_EXECUTE_TOOL)]
    assert len(tools) == (where == "tool")
