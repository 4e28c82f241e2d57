"""Probe 35c: of a LangGraph `ToolNode`'s calls at once, the one whose tool raised is the failed one.

With `handle_tool_errors=False` a tool's exception fails its `ToolNode` task, and the graph's stream
says only that the task failed: each call of it was counted failed, the ones that returned too (a
`good` call counted as an error). The call that raised is the one the `ToolNode` was running where
it raised; its siblings were cut off, neither ok nor failed. (`exact_counts=True` sees each call's
own end from LangChain's callbacks, and always told them apart.)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from integrations_support import INPUT, Rig, graph_of, rigged, says, usage
from langchain_core.messages import AIMessage
from langchain_core.tools import tool as lc_tool
from langgraph.prebuilt import ToolNode
from opentelemetry.trace import StatusCode

from agent import StopReason
from agent.integrations import langgraph as lg

TASK = "probe35c"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


@lc_tool
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@lc_tool
def parse(path: str) -> str:
    """Parse a file."""
    raise ValueError(f"cannot parse {path}")


def counted(rig: Rig, tool: str, outcome: str) -> float:
    labels = {"agent": "lg_agent", "task_type": TASK, "tool": tool, "outcome": outcome}
    return rig.value("agent_tool_calls_total", **labels)


def test_only_the_call_that_raised_is_counted_failed(rig: Rig) -> None:
    both = [
        {"name": "look", "args": {"path": "a"}, "id": "l1"},
        {"name": "parse", "args": {"path": "b"}, "id": "p1"},
    ]
    asked = AIMessage(content="", tool_calls=both, usage_metadata=usage())
    graph = graph_of([asked, says("done")], tools=ToolNode([look, parse], handle_tool_errors=False))
    res = lg.run(graph, INPUT, hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "ValueError")
    assert counted(rig, "parse", "error") == 1
    assert counted(rig, "look", "error") == 0
    (span,) = [s for s in rig.spans() if s.name == "execute_tool parse"]
    assert span.status.status_code is StatusCode.ERROR
