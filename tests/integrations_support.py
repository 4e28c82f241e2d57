"""Test doubles and a telemetry rig for the framework integrations' tests.

Each framework is driven by its own test model: Pydantic AI's `FunctionModel`,
the OpenAI Agents SDK's `ScriptedModel`, a LangChain `GenericFakeChatModel`
in a real LangGraph graph, and for the Claude Agent SDK a `Transport` that
plays the CLI's JSON stream to the SDK's own `query` for the rows a model reply
cannot reach, and the real bundled CLI against `StreamingMessagesAPI` (the
local Messages API server, answering streamed requests as server-sent events).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Annotated, Any, TypedDict

from agents import function_tool
from claude_agent_sdk._internal.transport import Transport
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.tools import tool as lc_tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt
from messages_api import MessagesAPI, Received, _Handler, _Server
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from test_telemetry import OpenSpans, bad_attributes

from telemetry import MetricsHooks, TelemetryHooks, TracingHooks
from telemetry import names as n


@dataclass
class Rig:
    """Tracing and metrics hooks writing to an in-memory exporter and a fresh registry."""

    exporter: InMemorySpanExporter
    registry: CollectorRegistry
    hooks: TelemetryHooks
    provider: TracerProvider | None = None  # the hooks' own, for the spans of code around a run

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def run_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(n.SPAN_INVOKE_AGENT + " ")]

    def children(self, parent: ReadableSpan, prefix: str = "") -> list[ReadableSpan]:
        kids = [s for s in self.spans() if s.parent and s.parent.span_id == parent.context.span_id]
        return sorted((s for s in kids if s.name.startswith(prefix)), key=lambda s: s.start_time or 0)

    def value(self, metric: str, **labels: str) -> float:
        return self.registry.get_sample_value(metric, labels) or 0.0

    def run_labels(self) -> dict[str, str]:
        """The `agent` and `task_type` labels of the one agent and task type whose runs the rig saw
        (from their spans): the labels its model metrics carry, as its stops do."""
        seen = {
            (str(a.get(n.GEN_AI_AGENT_NAME)), str(a.get(n.AGENT_TASK_TYPE)))
            for a in (s.attributes or {} for s in self.run_spans())
        }
        assert len(seen) == 1, f"runs of one agent and task type expected, saw {seen}"
        ((agent, task_type),) = seen
        return {n.LABEL_AGENT: agent, n.LABEL_TASK_TYPE: task_type}

    def stops(
        self, agent: str, task_type: str, reason: str, limit: str = n.NO_LIMIT, cause: str = ""
    ) -> float:
        """`agent_stops_total` of one series (`cause` is the `stop_cause` label: gave_up only)."""
        labels = {"agent": agent, "task_type": task_type, "stop_reason": reason, "stop_limit": limit}
        return self.value("agent_stops_total", **labels, stop_cause=cause)


@contextlib.contextmanager
def rigged() -> Iterator[Rig]:
    """The hooks `Telemetry.from_env` builds, to an in-memory exporter and a fresh registry; fails the
    test when a span is left open or carries a value OTLP drops."""
    exporter, open_spans = InMemorySpanExporter(), OpenSpans()
    provider = TracerProvider()
    provider.add_span_processor(open_spans)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    registry = CollectorRegistry()
    rig = Rig(exporter, registry, TelemetryHooks(MetricsHooks(registry), TracingHooks(provider)), provider)
    yield rig
    provider.shutdown()
    assert not open_spans.open, f"spans never ended: {sorted(open_spans.open.values())}"
    assert not bad_attributes(rig.spans()), bad_attributes(rig.spans())


# -- LangGraph: a tool-calling graph around a fake chat model ---------------------


@lc_tool
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@lc_tool
def delete(path: str) -> str:
    """Delete a file, once a person approves."""
    approved = interrupt({"tool": "delete", "args": {"path": path}})
    return "deleted" if approved else "not deleted"


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def usage(input_tokens: int = 10, output_tokens: int = 4) -> Any:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def calls(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id}], usage_metadata=usage()
    )


def says(text: str) -> AIMessage:
    return AIMessage(content=text, usage_metadata=usage(12, 3))


def graph_of(replies: list[Any], checkpointer: Any = None, model_node: Any = None, tools: Any = None) -> Any:
    """model -> tools -> model ... until a reply calls no tool; `replies` are the fake model's messages,
    `tools` the tools node (`look` and `delete` in a `ToolNode` unless given)."""
    model = GenericFakeChatModel(messages=iter(replies))

    async def call_model(state: Chat) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    def route(state: Chat) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    graph = StateGraph(Chat)
    graph.add_node("model", model_node or call_model)
    graph.add_node("tools", tools or ToolNode([look, delete]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer, name="lg_agent")


# -- Claude Agent SDK: the CLI's stream, played to the SDK's own query -----------


class FakeCLI(Transport):
    """Answers the SDK's control requests and plays `lines` once the prompt is written."""

    def __init__(self, lines: list[dict[str, Any]], hang: bool = False, unprompted: bool = False) -> None:
        self.lines, self.hang, self.unprompted = lines, hang, unprompted
        self.inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.prompts: list[Any] = []
        self.prompted = asyncio.Event()  # set once the SDK wrote the prompt

    async def connect(self) -> None:
        pass

    async def write(self, data: str) -> None:
        message = json.loads(data)
        if message.get("type") == "control_request":
            response = {"subtype": "success", "request_id": message["request_id"], "response": {}}
            await self.inbox.put({"type": "control_response", "response": response})
            if self.unprompted:  # a resumed session goes on without a new prompt
                await self._play()
        elif message.get("type") == "user":
            self.prompts.append(message["message"]["content"])
            self.prompted.set()
            await self._play()

    async def _play(self) -> None:
        for line in self.lines:
            await self.inbox.put(line)
        if not self.hang:
            await self.inbox.put(None)

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        while (message := await self.inbox.get()) is not None:
            yield message

    async def close(self) -> None:
        pass

    def is_ready(self) -> bool:
        return True

    async def end_input(self) -> None:
        pass


def assistant(message_id: str, *blocks: dict[str, Any], stop_reason: str | None = None) -> dict[str, Any]:
    message = {"id": message_id, "model": "claude-test", "content": list(blocks), "stop_reason": stop_reason}
    return {"type": "assistant", "message": message | {"usage": {"input_tokens": 10, "output_tokens": 5}}}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def tool_result(call_id: str, text: str, is_error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": is_error}
    return {"type": "user", "message": {"role": "user", "content": [block]}}


def result(subtype: str = "success", **fields: Any) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": subtype,
        "duration_ms": 5,
        "duration_api_ms": 4,
        "is_error": subtype != "success",
        "num_turns": 2,
        "session_id": "session-1",
        "total_cost_usd": 0.02,
        "usage": {"input_tokens": 20, "output_tokens": 10},
        **fields,
    }


# -- the real Claude Code CLI against a local streaming Messages API ----------------


class StreamingMessagesAPI(MessagesAPI):
    """`MessagesAPI` that answers `"stream": true` requests as the API does: server-sent events.

    The Claude Code CLI (which the Claude Agent SDK runs) streams every model call.
    """

    def start(self) -> StreamingMessagesAPI:
        server = self._server = _StreamingServer(self)
        serve = threading.Thread(target=server.serve_forever, args=(0.05,), name="messages-sse", daemon=True)
        self._thread = serve
        serve.start()
        return self


class _StreamingHandler(_Handler):
    def do_POST(self) -> None:
        api = self.server.api
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw or b"null")
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        response = api._answer(Received(self.path.split("?")[0], headers, body))
        finished = api._finished(response, body)
        streaming = isinstance(body, dict) and body.get("stream") and response.status == 200
        if streaming and finished is not None and finished.get("type") == "message":
            self._stream(finished)
        else:
            self._send(response.status, finished, response.headers)

    def _stream(self, message: dict[str, Any]) -> None:
        payload = "".join(
            f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in sse_events(message)
        ).encode()
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            self.close_connection = True


class _StreamingServer(_Server):
    def __init__(self, api: MessagesAPI) -> None:
        ThreadingHTTPServer.__init__(self, ("127.0.0.1", 0), _StreamingHandler)
        self.api = api


def sse_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A whole message as the Messages API streams it."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opened, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        events += [
            {"type": "content_block_start", "index": i, "content_block": opened},
            {"type": "content_block_delta", "index": i, "delta": delta},
            {"type": "content_block_stop", "index": i},
        ]
    end = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events += [
        {"type": "message_delta", "delta": end, "usage": {"output_tokens": usage["output_tokens"]}},
        {"type": "message_stop"},
    ]
    return events


# OpenAI Agents SDK tools of the integration tests


@function_tool
def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@function_tool(needs_approval=True)
def remove(path: str) -> str:
    """Remove a file."""
    return f"removed {path}"


def two_models() -> Any:
    """A LangGraph graph whose nodes hold different models: a cheap model drafts, a large one reviews;
    each reply names its model, as LangChain's do."""

    def reply(text: str, model: str, input_tokens: int) -> AIMessage:
        meta = {"model_name": model}
        return AIMessage(text, usage_metadata=usage(input_tokens, 2), response_metadata=meta)

    draft = GenericFakeChatModel(messages=iter([reply("draft", "claude-haiku-4-5-20251001", 100)]))
    review = GenericFakeChatModel(messages=iter([reply("reviewed", "claude-opus-4-1", 2000)]))

    async def drafter(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await draft.ainvoke(state["messages"])]}

    async def reviewer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await review.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("drafter", drafter)
    graph.add_node("reviewer", reviewer)
    graph.add_edge(START, "drafter")
    graph.add_edge("drafter", "reviewer")
    graph.add_edge("reviewer", END)
    return graph.compile(name="writer")


INPUT = {"messages": [("user", "write it")]}
