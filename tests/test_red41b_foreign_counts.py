"""A model call's usage that a framework reports with a count that is no whole number >= 0 (a provider's
negative count, Pydantic AI's float) counts as 0, and a cost that is no finite amount >= 0 is unknown,
as the Anthropic adapter reads the API's usage for Endstate's own runs. Before, the count went into the
run's totals, the `chat` span and `agent_run_tokens` as it was: a run of -3 input tokens, whose histogram
sum went down (read by `rate()` as a counter reset), or a 1e300 float token count."""

from __future__ import annotations

from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import Usage as OAUsage
from agents import set_tracing_disabled
from agents.testing.model import ModelStep, ScriptedModel, assistant_message
from integrations_support import graph_of, rigged
from langchain_core.messages import AIMessage
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from agent import StopReason
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from agent.prices import PriceTable
from telemetry import names as n

TASK = "red41b"


def oa_run(hooks: Any, count: Any) -> Any:
    set_tracing_disabled(True)
    usage = OAUsage(requests=1, input_tokens=count, output_tokens=4, total_tokens=4)
    agent = OAAgent(
        name="oa_agent", model=ScriptedModel([ModelStep(output=[assistant_message("done")], usage=usage)])
    )
    return oa.run(agent, "go", hooks=hooks, task_type=TASK)


def pai_run(hooks: Any, count: Any) -> Any:
    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse([TextPart("done")], usage=RequestUsage(input_tokens=count, output_tokens=4))

    return pai.run(PAIAgent(FunctionModel(play), name="pai_agent"), "go", hooks=hooks, task_type=TASK)


def lg_run(hooks: Any, count: Any) -> Any:
    usage: Any = {"input_tokens": count, "output_tokens": 4, "total_tokens": 4}
    reply = AIMessage(
        content="done", usage_metadata=usage, response_metadata={"model_name": "claude-sonnet-4-5"}
    )
    graph = graph_of([reply])
    return lg.run(graph, {"messages": [("user", "go")]}, hooks=hooks, task_type=TASK, prices=PriceTable())


CASES = [(oa_run, -3), (pai_run, -3), (pai_run, 2.5), (pai_run, 1e300), (lg_run, -3), (lg_run, -(10**9))]


@pytest.mark.parametrize(("run", "count"), CASES, ids=[f"{r.__name__}-{c}" for r, c in CASES])
def test_a_count_that_is_no_whole_number_from_zero_counts_as_none(run: Any, count: Any) -> None:
    with rigged() as rig:
        res = run(rig.hooks, count)
    assert (res.reason, res.input_tokens, res.output_tokens) == (StopReason.SUCCESS, 0, 4)
    assert res.cost_usd is None or res.cost_usd >= 0
    (chat,) = [s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT)]
    assert (chat.attributes or {})[n.GEN_AI_USAGE_INPUT_TOKENS] == 0
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.GEN_AI_USAGE_INPUT_TOKENS] == 0
    assert rig.registry.get_sample_value(
        f"{n.METRIC_RUN_TOKENS}_sum", {"agent": res.agent, "task_type": TASK}
    ) in (4, None)
