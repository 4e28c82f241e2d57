"""LangGraph static breakpoints in a graph with no checkpointer (probe19a).

LangGraph runs such a graph: it stops at the breakpoint (nothing can resume it) or finishes if
the run never reaches it. The integration asked the checkpointer where the graph stopped, so every
such run, a finished one too, ended `error` with LangGraph's bare "ValueError: No checkpointer
set", counted in the error share. Now a finished run is `success`, and one that stopped at its
breakpoint is the row an `interrupt()` with no checkpointer has: `error`, type
`interrupt_without_checkpointer`, the note saying how to compile one in.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from integrations_support import calls, graph_of, rigged, says

from agent.integrations import langgraph as endstate_lg
from agent.result import RunResult, StopReason

INPUT = {"messages": [("user", "read a")]}


def run(replies: list[Any], mode: str, compiled: bool = False, **kwargs: Any) -> RunResult:
    """One run of the tool-calling graph with no checkpointer, driven the way `mode` names."""
    graph = graph_of(replies)
    if compiled:  # the breakpoint compiled in, not given to the run
        graph = graph.builder.compile(interrupt_before=["tools"], name="lg_agent")
    if mode == "stream":
        return endstate_lg.run(graph, INPUT, **kwargs)
    if mode == "exact":
        return endstate_lg.run(graph, INPUT, exact_counts=True, **kwargs)

    async def read() -> RunResult:
        stream = endstate_lg.astream(graph, INPUT, stream_mode="values", **kwargs)
        chunks = [chunk async for chunk in stream]
        assert chunks and all(isinstance(c, dict) and "__interrupt__" not in c for c in chunks)
        assert stream.result is not None
        return stream.result

    return asyncio.run(read())


MODES = ["stream", "exact", "astream"]


@pytest.mark.parametrize("mode", MODES)
def test_a_run_that_never_reaches_its_breakpoint_is_a_success(mode: str) -> None:
    with rigged() as rig:
        result = run([says("nothing to read")], mode, hooks=rig.hooks, interrupt_before=["tools"])
        assert (result.reason, result.output, result.turns) == (StopReason.SUCCESS, "nothing to read", 1)
        assert rig.stops("lg_agent", "default", "success") == 1
        assert rig.stops("lg_agent", "default", "error") == 0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("compiled", [False, True])
def test_a_run_stopped_at_a_breakpoint_with_no_checkpointer_says_how_to_compile_one(
    mode: str, compiled: bool
) -> None:
    replies = [calls("look", {"path": "a"}, "c1"), says("done")]
    breakpoint_given = {} if compiled else {"interrupt_before": ["tools"]}
    with rigged() as rig:
        result = run(replies, mode, compiled, hooks=rig.hooks, **breakpoint_given)
        assert result.reason is StopReason.ERROR
        assert result.error_type == endstate_lg.NO_CHECKPOINTER
        assert "breakpoint" in result.note and "tools" in result.note
        assert "graph.compile(checkpointer=" in result.note and "No checkpointer set" not in result.note
        assert result.turns == 1 and result.suspension is None  # no wait nobody could answer
        assert rig.stops("lg_agent", "default", "error") == 1


def test_a_breakpoint_after_the_last_node_with_no_checkpointer_cannot_be_told_from_a_stop() -> None:
    """LangGraph reports a stop after an `interrupt_after` node even when nothing comes next; with a
    checkpointer its state says nothing is next (a success), with none nothing can say it: the run
    reads as the stop it may be (the accepted edge; with interrupt_before, a stop is always one)."""
    result = run([says("nothing to read")], "stream", interrupt_after=["model"])
    assert result.reason is StopReason.ERROR and result.error_type == endstate_lg.NO_CHECKPOINTER
