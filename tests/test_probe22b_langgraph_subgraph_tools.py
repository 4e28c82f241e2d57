"""The tools of a LangGraph subgraph's `ToolNode`s are labelled by name (probe22b).

A multi-agent graph (agents of their own as nodes: a researcher, a writer, each LangGraph's
prebuilt agent) had every tool call of its agents counted as `other` in `agent_tool_calls_total`:
the integration named only the tools of the top graph's own `ToolNode`s, so the failed-calls-by-tool
panel could not say which tool of which agent failed.
"""

from __future__ import annotations

from typing import Any

import pytest
from integrations_support import calls, rigged, says
from langgraph.graph import END, START, MessagesState, StateGraph
from test_probe22b_langgraph_steps import react_agent

from agent.integrations import langgraph as endstate_lg
from agent.result import StopReason


def team() -> Any:
    researcher = react_agent([calls("look", {"path": "a"}, "c1"), says("a is read")])
    writer = react_agent([says("wrote it up")])
    graph = StateGraph(MessagesState)
    graph.add_node("researcher", researcher)
    graph.add_node("writer", writer)
    graph.add_edge(START, "researcher")
    graph.add_edge("researcher", "writer")
    graph.add_edge("writer", END)
    return graph.compile(name="team")


@pytest.mark.parametrize("exact", [False, True])
def test_a_subgraph_agents_tool_calls_are_labelled_by_their_tools_name(exact: bool) -> None:
    with rigged() as rig:
        result = endstate_lg.run(
            team(), {"messages": [("user", "write up a")]}, hooks=rig.hooks, exact_counts=exact
        )
        assert (result.reason, result.turns) == (StopReason.SUCCESS, 3)
        labels = {"agent": "team", "task_type": "default", "outcome": "ok"}
        assert rig.value("agent_tool_calls_total", tool="look", **labels) == 1
        assert rig.value("agent_tool_calls_total", tool="other", **labels) == 0
