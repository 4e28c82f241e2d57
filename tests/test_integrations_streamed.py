"""Streamed runs (the OpenAI Agents SDK's `Runner.run_streamed`, LangGraph's `graph.astream`,
Pydantic AI's `agent.run_stream`) with
Endstate's stop reasons, spans and metrics: read to the end, stopped by a limit, waiting for an
approval, or abandoned half-read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import (
    GuardrailFunctionOutput,
    InputGuardrail,
    OutputGuardrail,
)
from agents import Usage as OAUsage
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from integrations_support import Rig, calls, graph_of, read, remove, says
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolNode
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ToolReturnPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import UsageLimits

from agent import LimitKind, StopReason
from agent.errors import ConfigError
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from telemetry import names as n

TASK = "streamed"


def usage() -> OAUsage:
    return OAUsage(requests=1, input_tokens=10, output_tokens=4, total_tokens=14)


def reader(*texts: str, calls: int = 1, tool: str = "read") -> OAAgent[Any]:
    steps = [
        ModelStep(output=[function_call(tool, {"path": str(i)}, call_id=f"c{i}")], usage=usage())
        for i in range(calls)
    ]
    steps += [ModelStep(output=[assistant_message(text)], usage=usage()) for text in texts]
    return OAAgent(name="streamer", model=ScriptedModel(steps), tools=[read, remove])


async def read_all(stream: oa.StreamedRun) -> list[Any]:
    return [event async for event in stream.stream_events()]


def test_a_streamed_run_read_to_its_end_is_success_with_its_events_turns_and_spans(rig: Rig) -> None:
    async def go() -> tuple[oa.StreamedRun, list[Any]]:
        stream = oa.run_streamed(reader("read it"), "read 0", hooks=rig.hooks, task_type=TASK)
        return stream, await read_all(stream)

    stream, events = asyncio.run(go())
    res = stream.result
    assert res is not None and (res.reason, res.output, res.turns, res.input_tokens) == (
        StopReason.SUCCESS,
        "read it",
        2,
        20,
    )
    assert res.raw is stream.raw and stream.raw.final_output == "read it"
    assert {"raw_response_event", "run_item_stream_event"} <= {e.type for e in events}
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_REASON] == "success"
    assert [s.name for s in rig.spans() if s.name.startswith(n.SPAN_EXECUTE_TOOL)] == ["execute_tool read"]
    assert rig.stops("streamer", TASK, "success") == 1


def test_a_streamed_run_past_max_turns_ends_the_stream_and_is_a_turns_limit(rig: Rig) -> None:
    async def go() -> oa.StreamedRun:
        stream = oa.run_streamed(reader("never", calls=3), "x", hooks=rig.hooks, task_type=TASK, max_turns=2)
        await read_all(stream)
        return stream

    res = asyncio.run(go()).result
    assert res is not None and (res.reason, res.limit, res.turns) == (StopReason.LIMIT, LimitKind.TURNS, 2)
    assert rig.stops("streamer", TASK, "limit", "turns") == 1


def test_a_streamed_approval_is_need_help_and_resumes(rig: Rig) -> None:
    agent = reader("removed it", tool="remove")

    async def go() -> oa.StreamedRun:
        stream = oa.run_streamed(agent, "remove 0", hooks=rig.hooks, task_type=TASK)
        await read_all(stream)
        return stream

    asked = asyncio.run(go()).result
    assert asked is not None and asked.reason is StopReason.NEED_HELP
    assert asked.suspension is not None and asked.suspension.question == 'Approve remove({"path": "0"})?'
    done = oa.resume(agent, asked, approved=True, hooks=rig.hooks, task_type=TASK)
    assert (done.reason, done.output, done.run_id) == (StopReason.SUCCESS, "removed it", asked.run_id)


def test_a_stream_the_caller_stops_reading_cancels_the_run_and_ends_it_cancelled(rig: Rig) -> None:
    """A caller that breaks out after the first event: the SDK's run goes no further (its second
    model call, which would wait forever, is cut off) and the run ends `cancelled`, its spans
    closed, its stop counted."""
    never = asyncio.Event()

    async def hang(call: Any) -> Any:
        await never.wait()

    steps = [ModelStep(output=[function_call("read", {"path": "a"}, call_id="c1")]), ModelStep.respond(hang)]
    agent = OAAgent(name="streamer", model=ScriptedModel(steps), tools=[read])

    async def go() -> oa.StreamedRun:
        stream = oa.run_streamed(agent, "x", hooks=rig.hooks, task_type=TASK)
        events = stream.stream_events()
        async for _ in events:
            break
        await events.aclose()  # what `async for` leaves to the garbage collector, done now
        await asyncio.gather(stream.raw.run_loop_task, return_exceptions=True)  # waits forever unless cut off
        return stream

    stream = asyncio.run(go())
    res = stream.result
    assert res is not None and res.reason is StopReason.CANCELLED
    assert stream.raw.is_complete and stream.raw.run_loop_task.done()
    assert rig.stops("streamer", TASK, "cancelled") == 1
    assert [(s.attributes or {})[n.STOP_REASON] for s in rig.run_spans()] == ["cancelled"]


@pytest.mark.parametrize("mode", ["immediate", "after_turn"])
def test_a_streamed_run_cancelled_through_the_sdks_own_cancel_ends_cancelled_not_success(
    rig: Rig, mode: str
) -> None:
    """`RunResultStreaming.cancel()` is the SDK's way to stop a streamed run (the caller reads on
    until the stream ends, as its docs say): the run stopped with no final output. It ended as a
    `success` with no output, counted in the success rate."""

    async def go() -> oa.StreamedRun:
        stream = oa.run_streamed(reader("never said", calls=3), "x", hooks=rig.hooks, task_type=TASK)
        async for event in stream.stream_events():
            if event.type == "run_item_stream_event" and event.name == "tool_called":
                stream.raw.cancel(mode=mode)
        return stream

    stream = asyncio.run(go())
    res = stream.result
    assert res is not None and (res.reason, res.output, res.raw) == (StopReason.CANCELLED, "", stream.raw)
    assert stream.raw.final_output is None and res.turns == 1
    assert rig.stops("streamer", TASK, "cancelled") == 1 and rig.stops("streamer", TASK, "success") == 0
    assert [(s.attributes or {})[n.STOP_REASON] for s in rig.run_spans()] == ["cancelled"]


def test_a_streamed_run_whose_reader_is_cancelled_ends_cancelled_and_the_cancellation_goes_on(
    rig: Rig,
) -> None:
    never, asked = asyncio.Event(), asyncio.Event()

    async def hang(call: Any) -> Any:
        asked.set()
        await never.wait()

    agent = OAAgent(name="streamer", model=ScriptedModel([ModelStep.respond(hang)]))

    async def go() -> oa.StreamedRun:
        stream = oa.run_streamed(agent, "x", hooks=rig.hooks, task_type=TASK)
        task = asyncio.create_task(read_all(stream))
        await asked.wait()  # the model call is under way
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return stream

    res = asyncio.run(go()).result
    assert res is not None and res.reason is StopReason.CANCELLED
    assert rig.stops("streamer", TASK, "cancelled") == 1


# -- LangGraph: langgraph.astream ------------------------------------------------------


async def chunks_of(stream: Any) -> list[Any]:
    return [chunk async for chunk in stream]


@pytest.mark.parametrize(
    ("stream_mode", "tool_turn"), [("updates", True), (["updates", "values"], True), ("messages", False)]
)
def test_a_langgraph_stream_gives_what_the_graphs_own_stream_gives_and_ends_in_success(
    rig: Rig, stream_mode: Any, tool_turn: bool
) -> None:
    """(LangChain's fake chat model cannot stream a tool call: the `messages` mode gets a reply alone.)"""
    replies = [calls("look", {"path": "a"}, "c1"), says("looked")] if tool_turn else [says("looked")]
    given = {"messages": [("user", "look")]}
    stream = lg.astream(graph_of(replies), given, stream_mode=stream_mode, hooks=rig.hooks, task_type=TASK)
    got = asyncio.run(chunks_of(stream))
    own = asyncio.run(chunks_of(graph_of(replies).astream(given, stream_mode=stream_mode)))
    assert shapes(got) == shapes(own) and got
    res = stream.result
    assert res is not None and (res.reason, res.output, res.turns) == (
        StopReason.SUCCESS,
        "looked",
        len(replies),
    )
    if tool_turn:  # a streamed reply has the tokens its chunks report: the fake model's report none
        assert res.input_tokens == 22
    assert rig.stops("lg_agent", TASK, "success") == 1


def shapes(chunks: list[Any]) -> list[Any]:
    """What a chunk is, without the message ids each run makes anew."""

    def shape(value: Any) -> Any:
        if isinstance(value, tuple | list):
            return [shape(v) for v in value]
        if isinstance(value, dict):
            return {k: shape(v) for k, v in value.items()}
        return getattr(value, "content", type(value).__name__)

    return [shape(c) for c in chunks]


def test_a_langgraph_stream_past_its_recursion_limit_ends_as_a_turns_limit_without_raising(rig: Rig) -> None:
    looping = graph_of([calls("look", {"path": str(i)}, f"c{i}") for i in range(20)])
    stream = lg.astream(
        looping, {"messages": [("user", "x")]}, {"recursion_limit": 4}, hooks=rig.hooks, task_type=TASK
    )
    asyncio.run(chunks_of(stream))
    assert stream.result is not None and (stream.result.reason, stream.result.limit) == (
        StopReason.LIMIT,
        LimitKind.TURNS,
    )


def test_a_langgraph_stream_that_interrupts_is_need_help_and_resumes(rig: Rig) -> None:
    graph = graph_of([calls("delete", {"path": "a"}, "d1"), says("deleted")], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "streamed-1"}}
    stream = lg.astream(graph, {"messages": [("user", "x")]}, config, hooks=rig.hooks, task_type=TASK)
    asyncio.run(chunks_of(stream))
    asked = stream.result
    assert asked is not None and asked.reason is StopReason.NEED_HELP
    assert asked.suspension is not None and asked.suspension.question == 'Approve delete({"path": "a"})?'
    done = lg.resume(graph, asked, approved=True, hooks=rig.hooks, task_type=TASK)
    assert (done.reason, done.output, done.run_id) == (StopReason.SUCCESS, "deleted", asked.run_id)


def test_a_langgraph_stream_the_caller_stops_reading_stops_the_graph_and_ends_cancelled(rig: Rig) -> None:
    """The caller breaks out after the first update: the graph runs no further node (its tool
    never runs) and the run ends `cancelled`, its spans closed, its stop counted."""
    ran: list[str] = []

    @lc_tool
    def record(path: str) -> str:
        """Record a path."""
        ran.append(path)
        return "recorded"

    graph = graph_of([calls("record", {"path": "a"}, "c1"), says("done")], tools=ToolNode([record]))
    stream = lg.astream(
        graph, {"messages": [("user", "x")]}, stream_mode="updates", hooks=rig.hooks, task_type=TASK
    )

    async def first_only() -> None:
        chunks = aiter(stream)
        async for _ in chunks:
            break
        await chunks.aclose()  # type: ignore[attr-defined]  # what `async for` leaves to the garbage collector

    asyncio.run(first_only())
    assert ran == []
    assert stream.result is not None and stream.result.reason is StopReason.CANCELLED
    assert rig.stops("lg_agent", TASK, "cancelled") == 1
    with pytest.raises(ConfigError, match="read already"):
        asyncio.run(chunks_of(stream))


def test_a_langgraph_stream_refuses_what_it_cannot_stream() -> None:
    graph = graph_of([says("x")])
    with pytest.raises(ConfigError, match=r"leave out \['exact_counts'\]"):
        lg.astream(graph, {"messages": []}, exact_counts=True)
    with pytest.raises(ConfigError, match="stream_mode is a LangGraph stream mode or a list of them"):
        lg.astream(graph, {"messages": []}, stream_mode=[])


# -- Pydantic AI: pydantic_ai.run_stream -----------------------------------------------


def pai_agent(model: Model | None = None, **kwargs: Any) -> PAIAgent[None, Any]:
    agent: PAIAgent[None, Any] = PAIAgent(
        model or TestModel(custom_output_text="all read"), name="pai_streamer", **kwargs
    )

    @agent.tool_plain
    def look(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    return agent


def test_a_pydantic_ai_stream_read_to_its_end_is_success_with_its_turns_and_tokens(rig: Rig) -> None:
    async def go() -> tuple[Any, list[str]]:
        async with pai.run_stream(pai_agent(), "read", hooks=rig.hooks, task_type=TASK) as run:
            texts = [text async for text in run.stream_text()]
        return run, texts

    run, texts = asyncio.run(go())
    res = run.result
    assert texts and texts[-1] == "all read"
    assert res is not None and (res.reason, res.output, res.turns) == (StopReason.SUCCESS, "all read", 2)
    assert (res.input_tokens, res.output_tokens) == (
        run.response.usage.input_tokens,
        run.response.usage.output_tokens,
    )
    assert [s.name for s in rig.spans() if s.name.startswith(n.SPAN_EXECUTE_TOOL)] == ["execute_tool look"]
    assert rig.stops("pai_streamer", TASK, "success") == 1


def test_a_pydantic_ai_stream_past_its_request_limit_ends_the_block_as_a_turns_limit(rig: Rig) -> None:
    async def go() -> Any:
        limits = UsageLimits(request_limit=1)
        async with pai.run_stream(
            pai_agent(), "x", hooks=rig.hooks, task_type=TASK, usage_limits=limits
        ) as run:
            async for _ in run.stream_text():  # the limit stopped the run before its output streamed
                pass
            assert run.response is None and run.result is not None
        return run

    res = asyncio.run(go()).result
    assert res is not None and (res.reason, res.limit) == (StopReason.LIMIT, LimitKind.TURNS)
    assert rig.stops("pai_streamer", TASK, "limit", "turns") == 1


def test_a_pydantic_ai_stream_left_unread_is_cancelled_and_the_callers_own_error_goes_on(rig: Rig) -> None:
    async def left() -> Any:
        async with pai.run_stream(pai_agent(), "x", hooks=rig.hooks, task_type=TASK) as run:
            pass
        return run

    res = asyncio.run(left()).result
    assert res is not None and res.reason is StopReason.CANCELLED

    async def broken() -> Any:
        async with pai.run_stream(pai_agent(), "x", hooks=rig.hooks, task_type=TASK) as run:
            runs.append(run)
            raise KeyError("the caller's own bug")

    runs: list[Any] = []
    with pytest.raises(KeyError, match="the caller's own bug"):
        asyncio.run(broken())
    assert runs[0].result is not None and (runs[0].result.reason, runs[0].result.error_type) == (
        StopReason.ERROR,
        "KeyError",
    )
    assert rig.stops("pai_streamer", TASK, "cancelled") == rig.stops("pai_streamer", TASK, "error") == 1


async def _looks_then_streams_words(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    """A tool call first (a few tokens), then a reply of forty words, one a token: every release the
    pydantic-ai extra allows counts these alike (`TestModel` does not: from 2.78 it counts its tool
    call's tokens, which tripped a limit of 5 as the second reply opened, before any text streamed)."""
    if not any(isinstance(part, ToolReturnPart) for m in messages for part in m.parts):
        yield {0: DeltaToolCall(name="look", json_args='{"path": "a"}', tool_call_id="c1")}
        return
    for i in range(40):
        yield f"word{i} "


def test_a_pydantic_ai_limit_raised_while_the_caller_reads_ends_the_block_not_the_caller(rig: Rig) -> None:
    """Pydantic AI raises `UsageLimitExceeded` from inside the caller's `async for`: the block ends
    there as the run's tokens limit (its second turn, after a tool call), nothing reaches the caller,
    whose own code after the block goes on; the run's span and stop count say `limit`/`tokens`."""
    agent = pai_agent(FunctionModel(_no_reply, stream_function=_looks_then_streams_words))
    read: list[str] = []

    async def go() -> Any:
        limits = UsageLimits(output_tokens_limit=10)
        async with pai.run_stream(agent, "x", hooks=rig.hooks, task_type=TASK, usage_limits=limits) as run:
            assert run.response is not None  # the output began to stream: the limit is not yet reached
            async for text in run.stream_text(delta=True, debounce_by=None):
                read.append(text)
            read.append("after the stream")
        read.append("after the block")
        return run

    res = asyncio.run(go()).result
    assert read[0] == "word0 " and read[-1] == "after the block"  # the caller read, then went on
    assert "after the stream" not in read and "word39 " not in read  # the limit ended it mid-stream
    assert res is not None and (res.reason, res.limit, res.turns) == (StopReason.LIMIT, LimitKind.TOKENS, 2)
    assert res.output_tokens > 10
    (span,) = rig.run_spans()
    assert ((span.attributes or {})[n.STOP_REASON], (span.attributes or {})[n.STOP_LIMIT]) == (
        "limit",
        "tokens",
    )
    assert [s.name for s in rig.spans() if s.name.startswith(n.SPAN_EXECUTE_TOOL)] == ["execute_tool look"]
    assert rig.stops("pai_streamer", TASK, "limit", "tokens") == 1


async def _no_reply(messages: Any, info: Any) -> Any:
    raise AssertionError("the run streams: this model is only streamed from")


async def _hangs_up_at_once(messages: Any, info: Any) -> AsyncIterator[str]:
    raise ConnectionError("the provider hung up")
    yield ""


async def _hangs_up_midway(messages: Any, info: Any) -> AsyncIterator[str]:
    yield "half an "
    raise ConnectionError("the provider hung up")


@pytest.mark.parametrize(
    ("stream", "seen"),
    [(_hangs_up_at_once, ["after the stream"]), (_hangs_up_midway, ["half an "])],
    ids=["before_output", "midway"],
)
def test_a_pydantic_ai_stream_the_provider_fails_ends_the_block_as_an_error_not_an_exception(
    rig: Rig, stream: Any, seen: list[str]
) -> None:
    """As `arun`, the OpenAI Agents SDK's and LangGraph's streams: the run's own failure is its `error`
    stop (the exception at `raw`), never raised at the caller. Before the output began to stream
    (Pydantic AI raises it as the block opens) the block streams nothing, as after a limit there;
    while the caller reads, the block ends there, as a limit raised then ends it."""
    agent: PAIAgent[None, Any] = PAIAgent(
        FunctionModel(_no_reply, stream_function=stream), name="pai_streamer"
    )
    read: list[str] = []

    async def go() -> Any:
        async with pai.run_stream(agent, "x", hooks=rig.hooks, task_type=TASK) as run:
            async for text in run.stream_text(debounce_by=None):
                read.append(text)
            read.append("after the stream")
        return run

    res = asyncio.run(go()).result
    assert read == seen
    assert res is not None and (res.reason, res.error_type, res.turns) == (
        StopReason.ERROR,
        "ConnectionError",
        1,
    )
    assert isinstance(res.raw, ConnectionError) and str(res.raw) == "the provider hung up"
    assert rig.stops("pai_streamer", TASK, "error") == 1
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_REASON] == "error"


async def _counts_slowly(messages: Any, info: Any) -> AsyncIterator[str]:
    for word in ["one ", "two ", "three ", "four"]:
        yield word
        await asyncio.sleep(0.01)


def test_a_pydantic_ai_stream_cancelled_through_its_own_cancel_ends_cancelled_and_raises_nothing(
    rig: Rig,
) -> None:
    """`StreamedRunResult.cancel()` is Pydantic AI's way to stop a streamed output; its own block then
    ends quietly. Through the integration it raised Pydantic AI's UserError ("no settled result") out
    of the block, after the caller's code had finished, and the run ended as an `error`."""
    agent: PAIAgent[None, Any] = PAIAgent(
        FunctionModel(_no_reply, stream_function=_counts_slowly), name="pai_streamer"
    )

    async def go() -> Any:
        async with pai.run_stream(agent, "count", hooks=rig.hooks, task_type=TASK) as run:
            async for text in run.stream_text(debounce_by=None):
                if "two" in text:
                    await run.response.cancel()
        return run

    run = asyncio.run(go())
    assert run.response.cancelled
    assert run.result is not None and (run.result.reason, run.result.turns) == (StopReason.CANCELLED, 1)
    assert rig.stops("pai_streamer", TASK, "cancelled") == 1 and rig.stops("pai_streamer", TASK, "error") == 0


async def tripped(ctx: Any, agent: Any, data: Any) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info="secret", tripwire_triggered=True)


@pytest.mark.parametrize(
    ("options", "reason", "detail"),
    [
        ({"input_guardrails": [InputGuardrail(tripped)]}, StopReason.GAVE_UP, "guardrail"),
        ({"output_guardrails": [OutputGuardrail(tripped)]}, StopReason.GAVE_UP, "guardrail"),
        (
            {"max_turns": 1, "error_handlers": {"max_turns": lambda data: "partial"}},
            StopReason.LIMIT,
            "turns",
        ),
    ],
    ids=["input_guardrail", "output_guardrail", "error_handler"],
)
def test_a_streamed_run_stopped_by_a_guardrail_or_handled_by_an_error_handler_keeps_its_stop(
    rig: Rig, options: dict[str, Any], reason: StopReason, detail: str
) -> None:
    runner = {k: options.pop(k) for k in ("max_turns", "error_handlers") if k in options}
    agent = OAAgent(
        name="streamer",
        model=ScriptedModel(
            [
                ModelStep(output=[function_call("read", {"path": "a"}, call_id="c1")], usage=usage()),
                ModelStep(output=[assistant_message("the password")], usage=usage()),
            ]
        ),
        tools=[read],
        **options,
    )

    async def go() -> oa.StreamedRun:
        stream = oa.run_streamed(agent, "x", hooks=rig.hooks, task_type=TASK, **runner)
        await read_all(stream)
        return stream

    res = asyncio.run(go()).result
    assert res is not None and res.reason is reason
    assert (res.cause if reason is StopReason.GAVE_UP else res.limit) == detail
    if runner:
        assert res.output == "partial"


def test_a_stream_never_read_starts_no_run_and_bad_options_are_refused_at_the_call(rig: Rig) -> None:
    """A stream made and dropped (an early return, say) would leave a run started that never ends:
    the run starts when the stream is first read. Endstate's own options are checked at once."""

    async def made_only() -> None:
        oa.run_streamed(reader("never"), "x", hooks=rig.hooks, task_type=TASK)
        lg.astream(graph_of([says("never")]), {"messages": [("user", "x")]}, hooks=rig.hooks, task_type=TASK)

    asyncio.run(made_only())
    assert rig.spans() == []
    for agent in ("streamer", "lg_agent"):
        assert rig.value(f"{n.METRIC_RUNS_STARTED}_total", agent=agent, task_type=TASK) == 0
    with pytest.raises(ConfigError, match="task_type must be a non-empty string"):
        oa.run_streamed(reader("x"), "x", task_type="")
    with pytest.raises(ConfigError, match="task_type must be a non-empty string"):
        lg.astream(graph_of([says("x")]), {"messages": []}, task_type="")


def test_an_openai_agents_stream_read_twice_is_a_clear_error(rig: Rig) -> None:
    async def twice() -> None:
        stream = oa.run_streamed(reader("done"), "x", hooks=rig.hooks, task_type=TASK)
        await read_all(stream)
        await read_all(stream)

    with pytest.raises(ConfigError, match="read already"):
        asyncio.run(twice())


def test_a_pydantic_ai_stream_ending_in_a_deferred_approval_is_need_help_and_resumes(rig: Rig) -> None:
    agent: PAIAgent[None, Any] = PAIAgent(
        TestModel(custom_output_text="deleted"), name="pai_streamer", output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    async def go() -> Any:
        async with pai.run_stream(agent, "delete a", hooks=rig.hooks, task_type=TASK) as run:
            async for _ in run.stream_output():
                pass
        return run

    asked = asyncio.run(go()).result
    assert asked is not None and asked.reason is StopReason.NEED_HELP
    assert asked.suspension is not None and asked.suspension.question == 'Approve delete({"path": "a"})?'
    done = pai.resume(agent, asked, approved=True, hooks=rig.hooks, task_type=TASK)
    assert (done.reason, done.output, done.run_id) == (StopReason.SUCCESS, "deleted", asked.run_id)


# -- Pydantic AI's Agent.iter: the run driven node by node ---------------------------------


def test_a_pydantic_ai_run_iterated_to_its_end_is_success_with_its_turns_tokens_and_spans(rig: Rig) -> None:
    async def go() -> tuple[Any, list[str]]:
        async with pai.iter(pai_agent(), "read", hooks=rig.hooks, task_type=TASK) as run:
            nodes = [type(node).__name__ async for node in run.agent_run]
        return run, nodes

    run, nodes = asyncio.run(go())
    res = run.result
    assert nodes[-1] == "End" and "CallToolsNode" in nodes
    assert res is not None and (res.reason, res.output, res.turns) == (StopReason.SUCCESS, "all read", 2)
    usage = run.agent_run.usage
    assert (res.input_tokens, res.output_tokens) == (usage.input_tokens, usage.output_tokens)
    assert res.raw.output == run.agent_run.result.output == "all read"
    assert [s.name for s in rig.spans() if s.name.startswith(n.SPAN_EXECUTE_TOOL)] == ["execute_tool look"]
    assert [(s.attributes or {})[n.STOP_REASON] for s in rig.run_spans()] == ["success"]
    assert rig.stops("pai_streamer", TASK, "success") == 1


def test_a_pydantic_ai_run_driven_with_next_past_its_request_limit_ends_the_block(rig: Rig) -> None:
    after: list[str] = []

    async def go() -> Any:
        limits = UsageLimits(request_limit=1)
        async with pai.iter(pai_agent(), "x", hooks=rig.hooks, task_type=TASK, usage_limits=limits) as run:
            node = run.agent_run.next_node
            while type(node).__name__ != "End":
                node = await run.agent_run.next(node)
            after.append("the loop ended")  # never: the limit ends the block
        return run

    res = asyncio.run(go()).result
    assert after == []
    assert res is not None and (res.reason, res.limit) == (StopReason.LIMIT, LimitKind.TURNS)
    assert rig.stops("pai_streamer", TASK, "limit", "turns") == 1


def test_a_pydantic_ai_run_left_half_driven_is_cancelled_and_the_callers_own_error_goes_on(rig: Rig) -> None:
    async def left() -> Any:
        async with pai.iter(pai_agent(), "x", hooks=rig.hooks, task_type=TASK) as run:
            async for _ in run.agent_run:
                break
        return run

    res = asyncio.run(left()).result
    assert res is not None and res.reason is StopReason.CANCELLED

    async def broken() -> Any:
        async with pai.iter(pai_agent(), "x", hooks=rig.hooks, task_type=TASK) as run:
            runs.append(run)
            raise KeyError("the caller's own bug")

    runs: list[Any] = []
    with pytest.raises(KeyError, match="the caller's own bug"):
        asyncio.run(broken())
    assert runs[0].result is not None and runs[0].result.reason is StopReason.ERROR
    assert rig.stops("pai_streamer", TASK, "cancelled") == rig.stops("pai_streamer", TASK, "error") == 1
    assert not [s for s in rig.spans() if s.end_time is None]


def test_pydantic_ai_iter_refuses_what_is_no_agent() -> None:
    async def go() -> None:
        async with pai.iter("an agent", "x"):  # type: ignore[arg-type]
            pass

    with pytest.raises(ConfigError, match=r"pydantic_ai\.iter"):
        asyncio.run(go())
