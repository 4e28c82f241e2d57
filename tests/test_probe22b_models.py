"""Foreign runs' tokens under the model that made them, as the dashboards' model panels read them
(probe22b).

The token metric (`gen_ai_client_token_usage{gen_ai_request_model}`, the "tokens by model" panel,
the only view of spend for frameworks Endstate cannot price) took every call of a foreign run under
the run's model: an OpenAI Agents SDK triage agent on a small model that hands off to a specialist
on a large one had the specialist's tokens shown as the small model's; every LangGraph run's tokens
were under "langgraph", whatever models its nodes called, and a Claude Agent SDK run on the CLI's
default model under "claude"; an SDK agent given no model was labelled "default", not the model the
SDK calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import ModelProvider, RunConfig, function_tool, handoff, set_tracing_disabled
from agents.models import get_default_model
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage as OAUsage
from claude_agent_sdk import ClaudeAgentOptions
from integrations_support import INPUT, FakeCLI, Rig, assistant, result, rigged, two_models

from agent.integrations import claude_agent_sdk as endstate_claude
from agent.integrations import langgraph as endstate_lg
from agent.integrations import openai_agents as endstate_oa
from agent.result import RunResult, StopReason
from telemetry import names as n


@pytest.fixture(autouse=True)
def no_openai_trace_export() -> Iterator[None]:
    """The Agents SDK would export its own traces to OpenAI: nothing leaves this machine."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def tokens(rig: Rig, provider: str, model: str, kind: str = "input") -> float:
    labels = rig.run_labels() | {"gen_ai_operation_name": "chat", "gen_ai_provider_name": provider}
    labels |= {"gen_ai_request_model": model, "gen_ai_token_type": kind}
    return rig.value("gen_ai_client_token_usage_sum", **labels)


def response_models(rig: Rig) -> list[Any]:
    spans = sorted((s for s in rig.spans() if s.name.startswith("chat ")), key=lambda s: s.start_time or 0)
    return [(s.attributes or {}).get(n.GEN_AI_RESPONSE_MODEL) for s in spans]


# -- OpenAI Agents SDK: a handoff to an agent on another model ----------------------------------


class Named(ModelProvider):
    """The models the agents name, as the SDK's provider resolves them: here scripted."""

    def __init__(self) -> None:
        handoff = function_call("transfer_to_specialist", {}, call_id="h1")
        big = OAUsage(requests=1, input_tokens=1000, output_tokens=400, total_tokens=1400)
        self.models = {
            "gpt-4.1-mini": ScriptedModel([ModelStep(output=[handoff], usage=oa_usage())]),
            "gpt-4.1": ScriptedModel([ModelStep(output=[assistant_message("refunded")], usage=big)]),
        }

    def get_model(self, model_name: str | None) -> Any:
        return self.models[str(model_name)]


def oa_usage() -> OAUsage:
    return OAUsage(requests=1, input_tokens=10, output_tokens=4, total_tokens=14)


def triage() -> OAAgent[Any]:
    specialist = OAAgent(name="specialist", model="gpt-4.1")
    return OAAgent(name="triage", model="gpt-4.1-mini", handoffs=[specialist])


@pytest.mark.parametrize("streamed", [False, True])
def test_an_agent_handed_off_to_has_its_tokens_under_its_own_model(streamed: bool) -> None:
    async def read(rig: Rig) -> RunResult:
        stream = endstate_oa.run_streamed(triage(), "refund", hooks=rig.hooks, run_config=config)
        assert [event async for event in stream.stream_events()]
        assert stream.result is not None
        return stream.result

    config = RunConfig(model_provider=Named())
    with rigged() as rig:
        if streamed:
            result = asyncio.run(read(rig))
        else:
            result = endstate_oa.run(triage(), "refund", hooks=rig.hooks, run_config=config)
        assert (result.reason, result.turns, result.input_tokens) == (StopReason.SUCCESS, 2, 1010)
        assert (tokens(rig, "openai", "gpt-4.1-mini"), tokens(rig, "openai", "gpt-4.1")) == (10, 1000)
        assert tokens(rig, "openai", "gpt-4.1", "output") == 400
        assert response_models(rig) == [None, "gpt-4.1"]  # the run's own model's call: as before


def test_an_agent_given_no_model_is_labelled_by_the_model_the_sdk_calls(monkeypatch: Any) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the SDK's client fails before any request
    with rigged() as rig:
        result = endstate_oa.run(OAAgent(name="plain"), "hi", hooks=rig.hooks)
        assert result.reason is StopReason.ERROR
        (span,) = rig.run_spans()
        assert (span.attributes or {})[n.GEN_AI_REQUEST_MODEL] == get_default_model() != "default"


# -- LangGraph: the models a graph's nodes call -------------------------------------------------


@pytest.mark.parametrize("exact", [False, True])
def test_a_graphs_calls_have_their_tokens_under_the_models_their_replies_name(exact: bool) -> None:
    with rigged() as rig:
        result = endstate_lg.run(two_models(), INPUT, hooks=rig.hooks, exact_counts=exact)
        assert (result.reason, result.turns, result.input_tokens) == (StopReason.SUCCESS, 2, 2100)
        assert tokens(rig, "langchain", "claude-haiku-4-5-20251001") == 100
        assert tokens(rig, "langchain", "claude-opus-4-1") == 2000
        assert tokens(rig, "langchain", "langgraph") == 0


def test_a_graph_run_naming_its_model_keeps_its_calls_under_that_model() -> None:
    """`ls_model_name` in the config's metadata names the run's model: its calls stay under it (a
    dated reply of that model is no model of its own); a reply another model served is that
    model's (probe24b: it was counted under the run's model too)."""
    config = {"metadata": {"ls_model_name": "claude-haiku-4-5"}}
    with rigged() as rig:
        endstate_lg.run(two_models(), INPUT, config, hooks=rig.hooks)
        assert tokens(rig, "langchain", "claude-haiku-4-5") == 100
        assert tokens(rig, "langchain", "claude-opus-4-1") == 2000


# -- Claude Agent SDK: the CLI's default model ----------------------------------------------------


def test_a_claude_run_on_the_clis_default_model_has_its_calls_under_the_model_each_names() -> None:
    lines = [assistant("m1", {"type": "text", "text": "done"}), result(result="done")]
    with rigged() as rig:
        res = endstate_claude.run("hi", transport=FakeCLI(lines), hooks=rig.hooks)
        assert res.reason is StopReason.SUCCESS
        assert tokens(rig, "anthropic", "claude-test") == 10  # the model the CLI's message names
        assert tokens(rig, "anthropic", "claude") == 0
    with rigged() as rig:  # a run given its model keeps its calls under it
        options = ClaudeAgentOptions(model="claude-sonnet-4-5")
        endstate_claude.run("hi", options=options, transport=FakeCLI(lines), hooks=rig.hooks)
        assert tokens(rig, "anthropic", "claude-sonnet-4-5") == 10


def test_a_run_config_given_as_a_dict_names_the_runs_model_as_a_run_config_does() -> None:
    """The SDK takes `run_config` as a dict too: its `model` is every agent's, as a `RunConfig`'s is."""
    provider = Named()
    with rigged() as rig:
        config = {"model": "gpt-4.1", "model_provider": provider}
        result = endstate_oa.run(
            OAAgent(name="solo", model="gpt-4.1-mini"), "hi", hooks=rig.hooks, run_config=config
        )
        assert (result.reason, result.output) == (StopReason.SUCCESS, "refunded")  # gpt-4.1 answered
        (span,) = rig.run_spans()
        assert (span.attributes or {})[n.GEN_AI_REQUEST_MODEL] == "gpt-4.1"
        assert (tokens(rig, "openai", "gpt-4.1"), tokens(rig, "openai", "gpt-4.1-mini")) == (1000, 0)


# -- OpenAI Agents SDK: the tools of an agent handed off to through `handoff(...)` --------------


@function_tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def test_the_tools_of_an_agent_handed_off_to_through_handoff_are_labelled_by_name() -> None:
    """README: calls are labelled by name for "its handoff targets'" tools; a target given as a
    `Handoff` (`handoff(agent, tool_name_override=...)`, for a custom name or input filter) had its
    tools' calls counted as `other`, out of the failed-calls-by-tool panel's reach."""
    steps = [[function_call("refund", {"order": "1"}, call_id="r1")], [assistant_message("done")]]
    billing = OAAgent(
        name="billing",
        tools=[refund],
        model=ScriptedModel([ModelStep(output=s, usage=oa_usage()) for s in steps]),
    )
    to_billing = [ModelStep(output=[function_call("to_billing", {}, call_id="h1")], usage=oa_usage())]
    front = OAAgent(
        name="front",
        handoffs=[handoff(billing, tool_name_override="to_billing")],
        model=ScriptedModel(to_billing),
    )
    with rigged() as rig:
        assert endstate_oa.run(front, "refund order 1", hooks=rig.hooks).reason is StopReason.SUCCESS
        calls = {"agent": "front", "task_type": "default", "outcome": "ok"}
        assert rig.value("agent_tool_calls_total", tool="refund", **calls) == 1
        assert rig.value("agent_tool_calls_total", tool="to_billing", **calls) == 1
        assert rig.value("agent_tool_calls_total", tool="other", **calls) == 0
