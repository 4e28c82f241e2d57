"""With content capture on, a foreign run's first model call records the run's task as its input
(`gen_ai.input.messages`), as a native run's first call does; the framework keeps the rest of each
request. Before, every foreign call's input was an empty list: the task was captured nowhere."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import set_tracing_disabled
from agents.testing.model import ScriptedModel, assistant_message, function_call
from integrations_support import calls, graph_of, read, says
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.models.test import TestModel

from agent import observe_run
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from telemetry import TracingHooks
from telemetry import names as n

TASK = "Summarise the quarterly numbers"


def oa_run(hooks: Any) -> None:
    set_tracing_disabled(True)
    steps = [[function_call("read", {"path": "a"}, call_id="c1")], [assistant_message("done")]]
    oa.run(
        OAAgent(name="oa_agent", model=ScriptedModel(steps), tools=[read]), TASK, hooks=hooks, task_type="t"
    )


def pai_run(hooks: Any) -> None:
    agent: PAIAgent[None, str] = PAIAgent(TestModel(), name="pai_agent")

    @agent.tool_plain
    def look(path: str) -> str:
        """Read a file."""
        return path

    pai.run(agent, TASK, hooks=hooks, task_type="t")


def lg_run(hooks: Any) -> None:
    graph = graph_of([calls("look", {"path": "a"}, "c1"), says("done")])
    lg.run(graph, {"messages": [("user", TASK)]}, hooks=hooks, task_type="t")


def homegrown_run(hooks: Any) -> None:
    with observe_run(hooks, agent="hg_agent", task_type="t", task=TASK) as run:
        for _ in range(2):
            with run.turn(), run.model_call(100) as call:
                call.reply(text="done", input_tokens=1, output_tokens=1)


RUNS = [oa_run, pai_run, lg_run, homegrown_run]


@pytest.mark.parametrize("run", RUNS, ids=[r.__name__ for r in RUNS])
def test_the_first_call_records_the_task_as_its_input_and_later_calls_do_not_repeat_it(run: Any) -> None:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run(TracingHooks(provider, capture_content=True))
    chats = sorted(
        (s for s in exporter.get_finished_spans() if s.name.startswith(n.SPAN_CHAT)),
        key=lambda s: s.start_time or 0,
    )
    inputs = [json.loads(str((s.attributes or {})[n.GEN_AI_INPUT_MESSAGES])) for s in chats]
    assert inputs[0] == [{"role": "user", "parts": [{"type": "text", "content": TASK}]}]
    # a later call records the history the framework sent (its first message the task, as a native
    # run's later call) where the framework exposes it (probe41g: Pydantic AI), else nothing
    assert len(inputs) >= 2
    assert all(later == [] or later[0] == inputs[0][0] for later in inputs[1:])
    assert all(json.dumps(later).count(TASK) <= 1 for later in inputs[1:])  # never repeated in one
