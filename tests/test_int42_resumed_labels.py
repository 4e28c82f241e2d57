"""int42: a foreign run resumed without repeating its `task_type=` (and `agent_name=`) went on under
the integration's defaults: the run started and waited as agent "named", task type "tt", and its
resumed segment ended as the framework agent's own name under task type "default". Its stop counted
in another series than its start, so each series' stop shares were wrong (one run started with no
end, another ended that never started). A resumed segment is now the run's: its agent and task
type, as a late answer's already was; a task type given that is not the run's is a ConfigError."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from agents import set_tracing_disabled
from agents.testing.model import assistant_message, function_call
from integrations_support import (
    FakeCLI,
    Rig,
    assistant,
    calls,
    graph_of,
    result,
    rigged,
    says,
    tool_result,
    tool_use,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic_ai.tools import DeferredToolRequests
from test_integrations import oa_agent, pai_agent

from agent import StopReason
from agent.errors import ConfigError
from agent.integrations import claude_agent_sdk as claude
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from agent.result import RunResult

NAMED = {"agent_name": "named", "task_type": "tt"}
Resume = Callable[..., RunResult]  # the waiting run, and the resume's own keywords: its result


@pytest.fixture
def rig() -> Iterator[Rig]:
    set_tracing_disabled(True)  # the Agents SDK would export its own traces to OpenAI
    with rigged() as r:
        yield r
    set_tracing_disabled(False)


def pydantic_ai(hooks: Any) -> tuple[RunResult, Resume]:
    agent = pai_agent([("delete", {"path": "a"}, "d1"), "deleted"], output_type=[str, DeferredToolRequests])
    waiting = pai.run(agent, "delete a", hooks=hooks, **NAMED)
    return waiting, lambda **kw: pai.resume(agent, waiting, approved=True, hooks=hooks, **kw)


def openai_agents(hooks: Any) -> tuple[RunResult, Resume]:
    agent = oa_agent([[function_call("remove", {"path": "a"}, call_id="r1")], [assistant_message("removed")]])
    waiting = oa.run(agent, "remove a", hooks=hooks, **NAMED)
    return waiting, lambda **kw: oa.resume(agent, waiting, approved=True, hooks=hooks, **kw)


def langgraph(hooks: Any, own_command: bool = False) -> tuple[RunResult, Resume]:
    graph = graph_of([calls("delete", {"path": "a"}, "d1"), says("gone")], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    waiting = lg.run(graph, {"messages": [("user", "delete a")]}, config, hooks=hooks, **NAMED)
    if own_command:  # LangGraph's own resume, the run named by the thread's checkpoint
        return waiting, lambda **kw: lg.run(graph, Command(resume=True), config, hooks=hooks, **kw)
    return waiting, lambda **kw: lg.resume(graph, waiting, True, hooks=hooks, **kw)


def langgraph_command(hooks: Any) -> tuple[RunResult, Resume]:
    return langgraph(hooks, own_command=True)


def claude_agent_sdk(hooks: Any) -> tuple[RunResult, Resume]:
    deferred = {"id": "t9", "name": "Bash", "input": {"command": "rm a"}}
    lines = [assistant("m1", tool_use("t9", "Bash", {"command": "rm a"})), result(deferred_tool_use=deferred)]
    waiting = claude.run("clean up", transport=FakeCLI(lines), hooks=hooks, **NAMED)
    answered = [tool_result("t9", "removed a"), assistant("m2", {"type": "text", "text": "ok"}), result()]
    return waiting, lambda **kw: claude.resume(
        waiting, True, transport=FakeCLI(answered, unprompted=True), hooks=hooks, **kw
    )


FRAMEWORKS = [pydantic_ai, openai_agents, langgraph, langgraph_command, claude_agent_sdk]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_run_resumed_without_its_labels_ends_under_its_own_agent_and_task_type(
    rig: Rig, framework: Callable[[Any], tuple[RunResult, Resume]]
) -> None:
    waiting, resume = framework(rig.hooks)
    assert waiting.reason is StopReason.NEED_HELP
    done = resume()
    assert (done.reason, done.run_id) == (StopReason.SUCCESS, waiting.run_id)
    assert (done.agent, done.task_type) == ("named", "tt")
    assert rig.stops("named", "tt", "need_help") == 1
    assert rig.stops("named", "tt", "success") == 1  # the run's stop, in the series it started in
    assert rig.value("agent_runs_started_total", agent="named", task_type="tt") == 1
    started = [s for m in rig.registry.collect() if m.name == "agent_runs_started" for s in m.samples]
    assert {(s.labels["agent"], s.labels["task_type"]) for s in started} == {("named", "tt")}


@pytest.mark.parametrize("framework", [pydantic_ai, openai_agents, langgraph, claude_agent_sdk])
def test_a_resume_naming_another_task_type_is_refused_and_runs_nothing(
    rig: Rig, framework: Callable[[Any], tuple[RunResult, Resume]]
) -> None:
    waiting, resume = framework(rig.hooks)
    with pytest.raises(ConfigError, match=r"task type 'tt', not 'other'.*task_type='tt'"):
        resume(task_type="other")
    assert rig.stops("named", "tt", "success") == 0
    done = resume(task_type="tt")  # still waiting: the right answer goes on
    assert (done.reason, done.run_id, done.task_type) == (StopReason.SUCCESS, waiting.run_id, "tt")
