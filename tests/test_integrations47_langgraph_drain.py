"""A LangGraph run drained for a shutdown (`RunControl.request_drain()`, LangGraph's cooperative stop
at a step's end: the checkpoint saved, the run resumable) is `cancelled`, as DESIGN.md has a run the
process stopped while shutting down, not an `error` (`GraphDrained`): every deploy that drained its
graphs counted each one in the error rate, and the error alert fired on it."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest
from integrations_support import Rig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import RunControl
from opentelemetry.trace import StatusCode

from agent import StopReason
from agent.integrations import langgraph as lg
from telemetry import names as n


class State(TypedDict):
    x: int


def drained_graph(control: RunControl) -> Any:
    """Two steps; the first asks for a drain (as a SIGTERM handler would), so the second never runs."""

    def first(state: State) -> dict[str, Any]:
        control.request_drain("sigterm")
        return {"x": state["x"] + 1}

    def second(state: State) -> dict[str, Any]:
        return {"x": state["x"] + 10}

    graph = StateGraph(State)
    graph.add_node("first", first)
    graph.add_node("second", second)
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", END)
    return graph.compile(checkpointer=InMemorySaver(), name="drained")


async def streamed(graph: Any, config: Any, **kwargs: Any) -> Any:
    stream = lg.astream(graph, {"x": 0}, config, **kwargs)
    async for _ in stream:
        pass
    return stream.result


@pytest.mark.parametrize("mode", ["run", "astream"])
def test_a_drained_graph_run_is_cancelled_not_an_error(rig: Rig, mode: str) -> None:
    control = RunControl()
    graph, config = drained_graph(control), {"configurable": {"thread_id": f"drain-{mode}"}}
    kwargs: dict[str, Any] = {"hooks": rig.hooks, "task_type": "drain", "control": control}
    if mode == "run":
        res = lg.run(graph, {"x": 0}, config, **kwargs)
    else:
        res = asyncio.run(streamed(graph, config, **kwargs))
    assert res.reason is StopReason.CANCELLED
    assert "drained" in res.note and "sigterm" in res.note
    assert rig.stops("drained", "drain", "cancelled") == 1
    assert rig.stops("drained", "drain", "error") == 0
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_REASON] == "cancelled"
    assert span.status.status_code is not StatusCode.ERROR
    assert graph.get_state(config).next == ("second",)  # LangGraph kept its checkpoint: it can go on
