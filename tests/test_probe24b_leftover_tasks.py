"""What a sync run leaves on the thread's kept event loop when it stops early (probe24b).

The integrations' sync `run` keeps its thread's event loop between runs (as the frameworks' own
`run_sync` do), so a task a run left pending would sleep until the thread's next sync run and then
go on inside it: a tool finishing after its run ended, a checkpoint written late, a stop counted in
another run's time. On every early stop probed here (a parallel tool or node raising while another
still runs, a LangGraph interrupt or error with a checkpointer that writes slowly, a Claude Agent
SDK limit) each framework awaits or cancels its own work before its run returns: nothing is left,
and the sibling's side effect never happens later. Tasks a user's own code starts and never awaits
stay on the loop, as with the frameworks' own `run_sync` (cancelling them would break what the
kept loop is for: pools and clients a run opened lazily, used again by the next run).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any, TypedDict

import pytest
from agents import Agent as OAAgent
from agents import function_tool, set_tracing_disabled
from agents.testing.model import ModelStep, ScriptedModel, function_call
from integrations_support import FakeCLI, assistant, result
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent.integrations import _sync
from agent.integrations import claude_agent_sdk as endstate_claude
from agent.integrations import langgraph as endstate_lg
from agent.integrations import openai_agents as endstate_oa
from agent.integrations import pydantic_ai as endstate_pai
from agent.result import RunResult, StopReason

DONE: list[str] = []  # what the slow sibling did after its run's stop, if it ever ran on


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    set_tracing_disabled(True)
    DONE.clear()
    yield
    set_tracing_disabled(False)


async def boom() -> str:
    """Fail at once."""
    raise RuntimeError("boom")


async def slow() -> str:
    """Finish later."""
    await asyncio.sleep(0.2)
    DONE.append("slow finished")
    return "ok"


def pydantic_ai() -> RunResult:
    def both(messages: Any, info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[ToolCallPart("boom", {}, tool_call_id="a"), ToolCallPart("slow", {}, tool_call_id="b")]
        )

    agent = PAIAgent(FunctionModel(both), name="parallel")
    agent.tool_plain(boom)
    agent.tool_plain(slow)
    return endstate_pai.run(agent, "go")


def openai_agents() -> RunResult:
    both = [function_call("boom", {}, call_id="a"), function_call("slow", {}, call_id="b")]
    tools = [function_tool(boom, failure_error_function=None), function_tool(slow)]
    return endstate_oa.run(
        OAAgent(name="parallel", tools=tools, model=ScriptedModel([ModelStep(output=both)])), "go"
    )


class State(TypedDict):
    x: int


async def failing_node(state: State) -> dict[str, Any]:
    await boom()
    return {}


async def slow_node(state: State) -> dict[str, Any]:
    await slow()
    return {"x": 1}


def langgraph_parallel() -> RunResult:
    graph = StateGraph(State)
    graph.add_node("a", failing_node)
    graph.add_node("b", slow_node)
    graph.add_edge(START, "a")
    graph.add_edge(START, "b")
    graph.add_edge("a", END)
    graph.add_edge("b", END)
    return endstate_lg.run(graph.compile(), {"x": 0})


class SlowSaver(InMemorySaver):
    """A checkpointer whose writes take a while, as a database's do."""

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        await asyncio.sleep(0.05)
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        await asyncio.sleep(0.05)
        self.put_writes(config, writes, task_id, task_path)


SAVER = SlowSaver()


def langgraph_interrupt() -> RunResult:
    def step(state: State) -> dict[str, Any]:
        return {"x": state["x"] + 1}

    def ask(state: State) -> dict[str, Any]:
        interrupt("go on?")
        return {"x": 100}

    graph = StateGraph(State)
    graph.add_node("step", step)
    graph.add_node("ask", ask)
    graph.add_edge(START, "step")
    graph.add_edge("step", "ask")
    graph.add_edge("ask", END)
    config = {"configurable": {"thread_id": "left-over"}}
    res = endstate_lg.run(graph.compile(checkpointer=SAVER), {"x": 0}, config, durability="async")
    saved = SAVER.get_tuple(config)
    assert saved is not None and saved.checkpoint["channel_values"]["x"] == 1  # written before the return
    return res


def claude_agent_sdk() -> RunResult:
    lines = [assistant("m1", {"type": "text", "text": "working"}), result("error_max_turns")]
    return endstate_claude.run("hi", transport=FakeCLI(lines))


@pytest.mark.parametrize(
    ("framework", "stop"),
    [
        (pydantic_ai, StopReason.ERROR),
        (openai_agents, StopReason.ERROR),
        (langgraph_parallel, StopReason.ERROR),
        (langgraph_interrupt, StopReason.NEED_HELP),
        (claude_agent_sdk, StopReason.LIMIT),
    ],
)
def test_a_sync_run_that_stops_early_leaves_no_task_on_the_kept_loop(
    framework: Callable[[], RunResult], stop: StopReason
) -> None:
    assert framework().reason is stop
    kept = _sync._RUNNERS.kept
    assert kept is not None
    loop = kept.runner.get_loop()
    assert [t for t in asyncio.all_tasks(loop) if not t.done()] == []
    later = endstate_pai.run(PAIAgent(FunctionModel(lambda m, i: ModelResponse(parts=[])), name="next"), "x")
    assert later.run_id  # the thread's next sync run: nothing of the last one goes on inside it
    assert DONE == []
