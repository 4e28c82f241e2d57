"""A foreign model call's captured output (`gen_ai.output.messages`, on its `chat` span or its content
event) holds the tool calls the reply asked for, each with its name and arguments, as a native run's
does. Before, it held the reply's text alone: under `EVENT_ONLY` a foreign run's tool calls were
recorded nowhere, and under `SPAN_ONLY` the chat span did not say which calls the model made."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import set_tracing_disabled
from agents.testing.model import ScriptedModel, assistant_message, function_call
from integrations_support import (
    FakeCLI,
    assistant,
    calls,
    graph_of,
    read,
    result,
    says,
    tool_result,
    tool_use,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent import observe_run
from agent.integrations import claude_agent_sdk as claude
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from telemetry import TracingHooks
from telemetry import names as n

TASK = "red41b"


def oa_run(hooks: Any) -> None:
    set_tracing_disabled(True)
    steps = [[function_call("read", {"path": "a"}, call_id="c1")], [assistant_message("done")]]
    oa.run(
        OAAgent(name="oa_agent", model=ScriptedModel(steps), tools=[read]), "go", hooks=hooks, task_type=TASK
    )


def pai_run(hooks: Any) -> None:
    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse([ToolCallPart("read", {"path": "a"}, tool_call_id="c1")])
        return ModelResponse([TextPart("done")])

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(play), name="pai_agent")

    @agent.tool_plain
    def read(path: str) -> str:
        """Read a file."""
        return path

    pai.run(agent, "go", hooks=hooks, task_type=TASK)


def lg_run(hooks: Any) -> None:
    graph = graph_of([calls("look", {"path": "a"}, "c1"), says("done")])
    lg.run(graph, {"messages": [("user", "go")]}, hooks=hooks, task_type=TASK)


def lg_exact_run(hooks: Any) -> None:
    graph = graph_of([calls("look", {"path": "a"}, "c1"), says("done")])
    lg.run(graph, {"messages": [("user", "go")]}, hooks=hooks, task_type=TASK, exact_counts=True)


def claude_run(hooks: Any) -> None:
    lines = [
        assistant("m1", tool_use("c1", "Read", {"path": "a"})),
        tool_result("c1", "text"),
        assistant("m2", {"type": "text", "text": "done"}),
        result(result="done"),
    ]
    claude.run("go", transport=FakeCLI(lines), hooks=hooks, task_type=TASK)


class Message:
    """What `anthropic` returns: a reply asking for one tool call."""

    def __init__(self) -> None:
        self.content = [
            type("Block", (), {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a"}})()
        ]
        self.stop_reason, self.model, self.id, self.usage = "tool_use", "claude-x", "msg_1", None


def homegrown_run(hooks: Any) -> None:
    with observe_run(hooks, agent="hg_agent", task_type=TASK, tools=["read"]) as run, run.turn():
        with run.model_call(100) as call:
            call.reply(Message())
        with run.tool("read", {"path": "a"}, "c1") as t:
            t.result("text")


RUNS = [oa_run, pai_run, lg_run, lg_exact_run, claude_run, homegrown_run]


@pytest.mark.parametrize("run", RUNS, ids=[r.__name__ for r in RUNS])
def test_the_first_calls_captured_output_holds_the_tool_call_it_asked_for(run: Any) -> None:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run(TracingHooks(provider, capture_content=True))
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith(n.SPAN_CHAT)]
    first = min(chats, key=lambda s: s.start_time or 0)
    (message,) = json.loads(str((first.attributes or {})[n.GEN_AI_OUTPUT_MESSAGES]))
    (part,) = [p for p in message["parts"] if p["type"] == "tool_call"]
    assert part["id"] == "c1" and part["name"].lower() in ("read", "look")
    assert json.loads(part["arguments"]) == {"path": "a"}
