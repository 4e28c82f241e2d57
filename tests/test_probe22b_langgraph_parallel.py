"""LangGraph model nodes running at once, read from the graph's stream (probe22b).

A graph whose branches each call a model in the same step (parallel edges, `Send`: LangGraph's
"parallelization" and map-reduce workflows) was read right the first time a process ran it. From
then on its nodes are known to call the model, so each task's start opens a model call; the second
one opened while the first was open, which began a new turn and ended the first call's span as
`interrupted`: every later run counted a turn too many and showed a failed model call that never
failed, and the first call's span carried the second's tokens. A call that starts while another
is open is now timed at its end and reported once none is open, as `exact_counts` does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from integrations_support import Rig, rigged, usage
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from agent.integrations import langgraph as endstate_lg
from agent.result import RunResult, StopReason
from telemetry import names as n

INPUT = {"messages": [("user", "summarise both")]}


def two_branches(a_seconds: float, b_seconds: float) -> Any:
    """START -> a and START -> b, each node one model call (100 and 1000 input tokens)."""
    model_a = GenericFakeChatModel(messages=iter([AIMessage("A", usage_metadata=usage(100, 1))]))
    model_b = GenericFakeChatModel(messages=iter([AIMessage("B", usage_metadata=usage(1000, 1))]))

    async def a(state: MessagesState) -> dict[str, Any]:
        await asyncio.sleep(a_seconds)
        return {"messages": [await model_a.ainvoke(state["messages"])]}

    async def b(state: MessagesState) -> dict[str, Any]:
        await asyncio.sleep(b_seconds)
        return {"messages": [await model_b.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("a", a)
    graph.add_node("b", b)
    graph.add_edge(START, "a")
    graph.add_edge(START, "b")
    graph.add_edge("a", END)
    graph.add_edge("b", END)
    return graph.compile(name="branches")


def chats(rig: Rig) -> list[tuple[Any, Any]]:
    """Each model call's span, in the order they began: its input tokens and error type."""
    spans = [s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT + " ")]
    attrs = [s.attributes or {} for s in sorted(spans, key=lambda s: s.start_time or 0)]
    return [(a.get(n.GEN_AI_USAGE_INPUT_TOKENS), a.get(n.ERROR_TYPE)) for a in attrs]


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("seconds", [(0.05, 0.15), (0.15, 0.05)], ids=["a_first", "b_first"])
def test_model_calls_at_once_are_two_turns_each_span_its_own_call_run_after_run(
    exact: bool, seconds: tuple[float, float]
) -> None:
    for _ in range(3):  # the first run teaches which nodes call the model; the later ones use it
        with rigged() as rig:
            result = endstate_lg.run(two_branches(*seconds), INPUT, hooks=rig.hooks, exact_counts=exact)
            assert (result.reason, result.turns, result.input_tokens) == (StopReason.SUCCESS, 2, 1100)
            assert sorted(chats(rig), key=str) == [(100, None), (1000, None)]  # no call cut, none mixed up
            (run_span,) = rig.run_spans()
            assert (run_span.attributes or {})[n.AGENT_TURNS] == 2
            assert len(rig.children(run_span, n.SPAN_TURN)) == 2


def test_a_stream_of_model_calls_at_once_reads_as_the_run_does() -> None:
    async def read() -> RunResult:
        stream = endstate_lg.astream(two_branches(0.05, 0.15), INPUT, hooks=rig.hooks, stream_mode="updates")
        assert len([chunk async for chunk in stream]) == 2
        assert stream.result is not None
        return stream.result

    endstate_lg.run(two_branches(0.05, 0.15), INPUT)  # the nodes are known to call the model
    with rigged() as rig:
        result = asyncio.run(read())
        assert (result.turns, result.input_tokens, chats(rig)) == (2, 1100, [(100, None), (1000, None)])


def test_a_run_cancelled_while_one_call_is_open_counts_the_call_that_ended_beside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def cancelled() -> RunResult:
        read_b = asyncio.Event()
        read = endstate_lg._Reader.read

        def reading(reader: Any, task: Mapping[str, Any], inner: bool = False) -> None:
            read(reader, task, inner)
            if task.get("name") == "b" and "result" in task:
                read_b.set()

        monkeypatch.setattr(endstate_lg._Reader, "read", reading)
        task = asyncio.create_task(endstate_lg.arun(two_branches(3600, 0.05), INPUT, hooks=rig.hooks))
        await asyncio.wait_for(read_b.wait(), 60)  # b has replied (its result read); a's call is still open
        task.cancel()
        return await task

    # a watched run teaches that the nodes call the model (an unwatched one teaches nothing)
    with rigged() as teacher:
        endstate_lg.run(two_branches(0.05, 0.1), INPUT, hooks=teacher.hooks)
    with rigged() as rig:
        result = asyncio.run(cancelled())
        assert (result.reason, result.turns, result.input_tokens) == (StopReason.CANCELLED, 2, 1000)
        assert chats(rig) == [(None, "interrupted"), (1000, None)]  # a's call cut, b's counted
