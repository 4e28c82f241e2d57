"""A foreign model call's captured input (`gen_ai.input.messages`) is the history the framework sent
with it, in the layout a native run's call records (user text, the assistant's tool calls, the tool
results), where the framework exposes it (Pydantic AI, the OpenAI Agents SDK, LangGraph). Before,
every call after the first recorded no input messages at all, though the framework kept the history."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import set_tracing_disabled
from agents.testing.model import ScriptedModel, assistant_message, function_call
from integrations_support import calls, graph_of, read, says
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from telemetry import TracingHooks
from telemetry import names as n

TASK = "probe41g"


def pai_agent(seen: list[int]) -> PAIAgent[None, str]:
    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(len(messages))
        if len(messages) == 1:
            return ModelResponse(
                [TextPart("Reading a."), ToolCallPart("read", {"path": "a"}, tool_call_id="c1")]
            )
        return ModelResponse([TextPart("done")])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        seen.append(len(messages))
        if len(messages) == 1:
            yield "Reading a."
            yield {1: DeltaToolCall("read", json.dumps({"path": "a"}), tool_call_id="c1")}
        else:
            yield "done"

    model = FunctionModel(play, stream_function=stream)
    agent: PAIAgent[None, str] = PAIAgent(model, name="pai_agent", instructions="Be brief.")

    @agent.tool_plain
    def read(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    return agent


@pytest.mark.parametrize("streamed", [False, True], ids=["iter", "capability"])
def test_a_later_calls_input_is_the_history_the_framework_sent(streamed: bool) -> None:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    seen: list[int] = []
    extra: dict[str, Any] = {"event_stream_handler": _ignore} if streamed else {}
    res = pai.run(
        pai_agent(seen), "go", hooks=TracingHooks(provider, capture_content=True), task_type=TASK, **extra
    )
    assert res.output == "done" and seen == [1, 3]
    chats = sorted(
        (s for s in exporter.get_finished_spans() if s.name.startswith(n.SPAN_CHAT)),
        key=lambda s: s.start_time or 0,
    )
    first, second = (json.loads(str((s.attributes or {})[n.GEN_AI_INPUT_MESSAGES])) for s in chats)
    assert first == [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["parts"] == [
        {"type": "text", "content": "Reading a."},
        {"type": "tool_call", "id": "c1", "name": "read", "arguments": json.dumps({"path": "a"})},
    ]
    (answer,) = second[2]["parts"]
    assert (answer["type"], answer["id"], answer["response"]) == ("tool_call_response", "c1", "contents of a")


async def _ignore(ctx: Any, events: Any) -> None:
    async for _ in events:
        pass


def inputs(spans: list[ReadableSpan]) -> list[Any]:
    chats = sorted((s for s in spans if s.name.startswith(n.SPAN_CHAT)), key=lambda s: s.start_time or 0)
    return [json.loads(str((s.attributes or {})[n.GEN_AI_INPUT_MESSAGES])) for s in chats]


def test_an_openai_agents_calls_input_is_the_items_the_sdk_sent() -> None:
    set_tracing_disabled(True)
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    steps = [
        [assistant_message("Reading a."), function_call("read", {"path": "a"}, call_id="c1")],
        [assistant_message("done")],
    ]
    agent = OAAgent(name="oa_agent", model=ScriptedModel(steps), tools=[read], instructions="Be brief.")
    res = oa.run(agent, "go", hooks=TracingHooks(provider, capture_content=True), task_type=TASK)
    assert res.output == "done"
    first, second = inputs(list(exporter.get_finished_spans()))
    assert first == [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    assert second == [
        first[0],
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Reading a."},
                {"type": "tool_call", "id": "c1", "name": "read", "arguments": json.dumps({"path": "a"})},
            ],
        },
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "c1", "response": "contents of a"}]},
    ]


@pytest.mark.parametrize("exact", [False, True], ids=["stream", "callbacks"])
def test_a_langgraph_calls_input_is_the_state_messages_it_sent(exact: bool) -> None:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reply = calls("look", {"path": "a"}, "c1")
    reply.content = "Reading a."
    graph = graph_of([reply, says("done")])
    hooks = TracingHooks(provider, capture_content=True)
    res = lg.run(graph, {"messages": [("user", "go")]}, hooks=hooks, task_type=TASK, exact_counts=exact)
    assert res.output == "done"
    first, second = inputs(list(exporter.get_finished_spans()))
    assert first == [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    assert second[:2] == [
        first[0],
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Reading a."},
                {"type": "tool_call", "id": "c1", "name": "look", "arguments": json.dumps({"path": "a"})},
            ],
        },
    ]
    assert second[2]["parts"][0]["type"] == "tool_call_response" and second[2]["parts"][0]["id"] == "c1"
