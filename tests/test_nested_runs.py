"""A run's span is the current span while the run goes on: what its tools do joins its trace.

An agent used as a tool by another (a nested run), and a tool's own spans (an instrumented
HTTP client, a database driver), land in the outer run's trace, under its run span, whether the
tool is async (run in the loop's task) or sync (run on a worker thread). Once the run ends, the
caller's own context is current again.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent import Agent, tool
from agent.models.scripted import ScriptedModel, call, finish
from telemetry import TracingHooks
from telemetry import names as n

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


def tracing() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def runs(exporter: InMemorySpanExporter, agent: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == f"{n.SPAN_INVOKE_AGENT} {agent}"]


def outer_and_inner(provider: TracerProvider, sync_tool: bool) -> Agent:
    """An outer agent whose tool `ask` runs an inner agent to completion."""
    hooks = TracingHooks(provider)
    inner = Agent("inner", ScriptedModel([[finish("done", "42")]]), hooks=hooks)

    if sync_tool:

        @tool
        def ask(question: str) -> str:
            """Ask the inner agent."""
            return inner.run(question).output

    else:

        @tool
        async def ask(question: str) -> str:
            """Ask the inner agent."""
            return (await inner.arun(question)).output

    steps = [[call("ask", question="six times seven?")], [finish("done", "asked")]]
    return Agent("outer", ScriptedModel(steps), tools=[ask], hooks=hooks)


def check_nested(exporter: InMemorySpanExporter) -> None:
    (outer,) = runs(exporter, "outer")
    (inner,) = runs(exporter, "inner")
    assert inner.context.trace_id == outer.context.trace_id, "the nested run is in another trace"
    assert inner.parent is not None and inner.parent.span_id == outer.context.span_id


def test_a_run_used_by_an_async_tool_is_a_child_of_the_outer_run() -> None:
    provider, exporter = tracing()
    result = outer_and_inner(provider, sync_tool=False).run("go")
    assert result.reason == "success", result
    check_nested(exporter)


def test_a_run_used_by_a_sync_tool_is_a_child_of_the_outer_run() -> None:
    provider, exporter = tracing()
    result = outer_and_inner(provider, sync_tool=True).run("go")
    assert result.reason == "success", result
    check_nested(exporter)


def test_a_tools_own_spans_join_the_runs_trace_and_the_callers_context_comes_back() -> None:
    provider, exporter = tracing()
    theirs = provider.get_tracer("a-client-library")

    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        with theirs.start_as_current_span("GET"):
            return "page"

    agent = Agent(
        "outer",
        ScriptedModel([[call("fetch", url="https://x")], [finish("done", "fetched")]]),
        tools=[fetch],
        hooks=TracingHooks(provider),
    )
    with theirs.start_as_current_span("caller") as caller:
        assert agent.run("go").reason == "success"
        assert trace.get_current_span() is caller, "the run left its span current"
    (run,) = runs(exporter, "outer")
    (get,) = [s for s in exporter.get_finished_spans() if s.name == "GET"]
    assert get.context.trace_id == run.context.trace_id
    assert get.parent is not None and get.parent.span_id == run.context.span_id
    assert run.parent is not None and run.parent.span_id == caller.get_span_context().span_id


def test_a_sync_tool_sees_the_callers_context_variables() -> None:
    seen: list[str] = []

    @tool
    def look() -> str:
        """Look around."""
        seen.append(REQUEST_ID.get())
        return "ok"

    agent = Agent("a", ScriptedModel([[call("look")], [finish("done", "ok")]]), tools=[look])
    REQUEST_ID.set("req-7")
    try:
        assert agent.run("go").reason == "success"
    finally:
        REQUEST_ID.set("none")
    assert seen == ["req-7"]


def test_after_an_async_run_the_callers_context_is_current_again() -> None:
    provider, _ = tracing()
    agent = Agent("a", ScriptedModel([[finish("done", "ok")]]), hooks=TracingHooks(provider))

    async def caller() -> None:
        before: Any = otel_context.get_current()
        assert (await agent.arun("go")).reason == "success"
        assert otel_context.get_current() is before

    asyncio.run(caller())


def test_a_foreign_delegate_observed_as_its_own_run_is_a_child_of_the_outer_run() -> None:
    """Pydantic AI's delegation, both runs observed through the integration."""
    from pydantic_ai import Agent as PAIAgent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agent.integrations import pydantic_ai as pai

    def scripted(*parts: Any) -> FunctionModel:
        replies = iter(parts)

        async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            return ModelResponse([next(replies)])

        return FunctionModel(play)

    provider, exporter = tracing()
    hooks = TracingHooks(provider)
    inner: PAIAgent[None, str] = PAIAgent(scripted(TextPart("a joke")), name="inner")
    outer: PAIAgent[None, str] = PAIAgent(
        scripted(ToolCallPart("delegate", {"q": "joke"}, "c1"), TextPart("done")), name="outer"
    )

    @outer.tool_plain
    async def delegate(q: str) -> str:
        """Ask the delegate."""
        return (await pai.arun(inner, q, hooks=hooks)).output

    assert pai.run(outer, "tell a joke", hooks=hooks).reason == "success"
    check_nested(exporter)
