"""What foreign runs count and how their home-grown reports are checked: cache tokens reach the
spans and metrics, a home-grown stop names what the contract needs, and a run that has ended
takes no more calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import pytest
from agents import Agent as OAAgent
from agents import ToolGuardrailFunctionOutput, function_tool, tool_input_guardrail, tool_output_guardrail
from agents import Usage as OAUsage
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import InputTokensDetails, OutputTokensDetails
from foreign_agents import lg_graph, oa_agent, pai_agent
from integrations_support import Chat, Rig, calls, graph_of, says
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from messages_api import MessagesAPI, message, text
from opentelemetry.trace import StatusCode
from pydantic_ai import Agent as PAIAgent
from pydantic_ai import RunContext as PAIRunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

from agent import LimitKind, StopReason, observe_run
from agent.errors import ConfigError
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from agent.result import RunResult, StopCause
from telemetry import names as n

TASK = "counts"


def home_grown(rig: Rig) -> str:
    reply = message(
        text("done"), input_tokens=100, cache_read_input_tokens=600, cache_creation_input_tokens=300
    )
    with (
        MessagesAPI(reply) as api,
        anthropic.Anthropic(base_url=api.url, api_key="test") as client,
        observe_run(rig.hooks, agent="cached", task_type=TASK, model="claude-x") as run,
        run.turn(),
        run.model_call() as call,
    ):
        call.reply(
            client.messages.create(
                model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
            )
        )
    return "claude-x"


def pydantic_ai(rig: Rig) -> str:
    async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        usage = RequestUsage(
            input_tokens=1000, output_tokens=5, cache_read_tokens=600, cache_write_tokens=300
        )
        return ModelResponse([TextPart("done")], usage=usage)

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(play, model_name="fn"), name="cached")
    pai.run(agent, "x", hooks=rig.hooks, task_type=TASK)
    return "fn"


def openai_agents(rig: Rig) -> str:
    usage = OAUsage(
        requests=1,
        input_tokens=1000,
        output_tokens=5,
        total_tokens=1005,
        input_tokens_details=InputTokensDetails(cached_tokens=600, cache_write_tokens=300),  # type: ignore[call-arg]
        output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
    )
    agent = OAAgent(
        name="cached", model=ScriptedModel([ModelStep(output=[assistant_message("done")], usage=usage)])
    )
    oa.run(agent, "x", hooks=rig.hooks, task_type=TASK)
    return "ScriptedModel"


def langgraph(rig: Rig) -> str:
    details = {"cache_read": 600, "cache_creation": 300}
    usage = {"input_tokens": 1000, "output_tokens": 5, "total_tokens": 1005, "input_token_details": details}
    model = GenericFakeChatModel(messages=iter([AIMessage(content="done", usage_metadata=usage)]))

    async def call_model(state: Chat) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(Chat)
    builder.add_node("model", call_model)
    builder.add_edge(START, "model")
    lg.run(builder.compile(name="cached"), {"messages": [("user", "x")]}, hooks=rig.hooks, task_type=TASK)
    return "langgraph"


@pytest.mark.parametrize("run", [home_grown, pydantic_ai, openai_agents, langgraph])
def test_a_foreign_calls_cache_tokens_reach_its_chat_span_and_the_token_metric(rig: Rig, run: Any) -> None:
    """Endstate's own model calls show their cache reads and writes on the chat span and as
    `gen_ai_client_token_usage` of token type cache_read/cache_creation; a foreign call must too."""
    model = run(rig)
    (chat,) = [s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT + " ")]
    attrs = chat.attributes or {}
    assert (
        attrs[n.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS],
        attrs[n.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS],
    ) == (
        600,
        300,
    )
    (provider,) = {str((s.attributes or {})[n.GEN_AI_PROVIDER_NAME]) for s in rig.run_spans()}
    labels = {
        n.LABEL_AGENT: "cached",  # the run's agent and task type, as native runs' calls are counted
        n.LABEL_TASK_TYPE: TASK,
        n.LABEL_GEN_AI_OPERATION_NAME: n.OP_CHAT,
        n.LABEL_GEN_AI_PROVIDER_NAME: provider,
        n.LABEL_GEN_AI_REQUEST_MODEL: model,
    }
    for token_type, tokens in ((n.TOKEN_CACHE_READ, 600), (n.TOKEN_CACHE_CREATION, 300)):
        typed = {**labels, n.LABEL_GEN_AI_TOKEN_TYPE: token_type}
        assert rig.value(f"{n.METRIC_GEN_AI_TOKEN_USAGE}_sum", **typed) == tokens, token_type


def test_a_home_grown_limit_stop_must_say_which_limit_and_a_give_up_is_the_agents(rig: Rig) -> None:
    """`stop("limit")` named no limit: its stop went uncounted (agent_stops_total has no limit
    series without a kind). It is a clear error, and the run still ends (error, counted)."""
    with (
        pytest.raises(
            ConfigError, match=r"run.stop\('limit'\) does not say which limit: use run.limit\(kind\)"
        ),
        observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as run,
    ):
        run.stop("limit")
    assert run.result and (run.result.reason, run.result.error_type) == (StopReason.ERROR, "ConfigError")
    assert rig.stops("raw_loop", TASK, "error") == 1
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as gave:
        gave.stop("gave_up", "nothing more to try")
    assert gave.result and (gave.result.reason, gave.result.cause) == (StopReason.GAVE_UP, StopCause.AGENT)
    assert rig.stops("raw_loop", TASK, "gave_up", cause="agent") == 1


def tokens_observed(rig: Rig) -> float:
    labels = {
        n.LABEL_AGENT: "raw_loop",
        n.LABEL_TASK_TYPE: TASK,
        n.LABEL_GEN_AI_OPERATION_NAME: n.OP_CHAT,
        n.LABEL_GEN_AI_PROVIDER_NAME: "anthropic",
        n.LABEL_GEN_AI_REQUEST_MODEL: "m",
        n.LABEL_GEN_AI_TOKEN_TYPE: n.TOKEN_INPUT,
    }
    return rig.value(f"{n.METRIC_GEN_AI_TOKEN_USAGE}_sum", **labels)


@pytest.mark.parametrize(
    ("after", "what"),
    [
        (lambda run: run.turn().__enter__(), "turn"),
        (lambda run: run.model_call().__enter__(), "model_call"),
        (lambda run: run.tool("search", {"q": "x"}).__enter__(), "tool"),
    ],
)
def test_a_home_grown_run_that_ended_takes_no_more_calls(rig: Rig, after: Any, what: str) -> None:
    """A loop that goes on after its stop (or after the block) would add calls to a run whose result
    and metrics are final: a clear error, and nothing counted."""
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK, model="m") as run:
        with run.turn(), run.model_call() as call:
            call.reply(input_tokens=5, output_tokens=2, text="over budget")
        run.limit("turns")
        with pytest.raises(ConfigError, match=rf"run.{what}\(\) after the run ended \(limit\)"):
            after(run)
    with pytest.raises(ConfigError, match="start a new observe_run"):
        after(run)
    assert run.result and (run.result.reason, run.result.turns) == (StopReason.LIMIT, 1)
    assert tokens_observed(rig) == 5
    assert rig.stops("raw_loop", TASK, "limit", "turns") == 1


def oa_usage() -> OAUsage:
    return OAUsage(requests=1, input_tokens=10, output_tokens=4, total_tokens=14)


def orchestrator(*outer_steps: Any) -> OAAgent[Any]:
    """An agent whose tool is another agent (`Agent.as_tool`): the SDK adds the inner run's calls
    to the outer run's usage, but runs them without the outer run's hooks."""
    inner_steps = [ModelStep(output=[assistant_message("inner says")], usage=oa_usage())]
    inner = OAAgent(name="inner", model=ScriptedModel(inner_steps))
    steps = [ModelStep(output=[function_call("ask_inner", {"input": "q"}, call_id="c1")], usage=oa_usage())]
    steps += [ModelStep(output=[assistant_message(text)], usage=oa_usage()) for text in outer_steps]
    return OAAgent(name="outer", model=ScriptedModel(steps), tools=[inner.as_tool("ask_inner", "Ask.")])


@pytest.mark.parametrize(
    ("outer", "options", "reason"), [(["done"], {}, "success"), ([], {"max_turns": 1}, "limit")]
)
def test_openai_agents_calls_of_an_agent_run_as_a_tool_count_in_the_runs_tokens_once(
    rig: Rig, outer: list[str], options: dict[str, Any], reason: str
) -> None:
    res = oa.run(orchestrator(*outer), "go", hooks=rig.hooks, task_type=TASK, **options)
    sdk = (res.raw.context_wrapper if reason == "success" else res.raw.run_data.context_wrapper).usage
    assert (res.reason, res.input_tokens, res.output_tokens) == (reason, sdk.input_tokens, sdk.output_tokens)
    assert res.input_tokens == 10 * (2 + len(outer))  # the inner agent's call and each of the outer's
    tokens = rig.value(f"{n.METRIC_RUN_TOKENS}_sum", agent="outer", task_type=TASK, stop_reason=reason)
    assert tokens == res.input_tokens + res.output_tokens


def test_openai_agents_a_resumed_segment_counts_no_earlier_segments_tokens_again(rig: Rig) -> None:
    """A resumed `RunState` carries the SDK's totals of the earlier segments: they are no unseen calls."""

    @function_tool(needs_approval=True)
    def remove(path: str) -> str:
        """Remove a file."""
        return f"removed {path}"

    steps = [
        ModelStep(output=[function_call("remove", {"path": "a"}, call_id="r1")], usage=oa_usage()),
        ModelStep(output=[assistant_message("removed")], usage=oa_usage()),
    ]
    agent = OAAgent(name="remover", model=ScriptedModel(steps), tools=[remove])
    asked = oa.run(agent, "remove a", hooks=rig.hooks, task_type=TASK)
    saved = oa.state_of(asked)
    done = oa.resume(agent, asked, approved=True, hooks=rig.hooks, task_type=TASK)
    assert (asked.input_tokens, done.reason, done.input_tokens) == (10, StopReason.SUCCESS, 20)
    again = OAAgent(name="remover", model=ScriptedModel(steps[1:]), tools=[remove])
    alone = oa.resume(again, saved, approved=True, hooks=rig.hooks, task_type=TASK)
    assert (alone.reason, alone.run_id) == (StopReason.SUCCESS, asked.run_id)  # the same run, from the JSON
    assert alone.input_tokens == 20  # the saved segment's 10 and this one's own call: not 30


@pytest.mark.parametrize("exact", [False, True])
def test_langgraph_tool_calls_are_labelled_by_the_tools_of_the_graphs_tool_nodes(
    rig: Rig, exact: bool
) -> None:
    """A graph run as the README shows (no `tools=`) labels its ToolNode's calls by name, not "other"."""
    graph = graph_of([calls("look", {"path": "a"}, "c1"), says("looked")])
    res = lg.run(graph, {"messages": [("user", "x")]}, hooks=rig.hooks, task_type=TASK, exact_counts=exact)
    assert res.reason is StopReason.SUCCESS
    tool_calls = {"agent": "lg_agent", "task_type": TASK, "outcome": n.TOOL_OK}
    assert rig.value("agent_tool_calls_total", **tool_calls, tool="look") == 1
    assert rig.value("agent_tool_calls_total", **tool_calls, tool=n.TOOL_OTHER) == 0


def tool_spans_by_turn(rig: Rig) -> list[list[tuple[str, str, str]]]:
    """Each turn's tool spans, in order: (tool name, call id, error.type or "")."""
    (run,) = rig.run_spans()
    return [
        [
            (
                str((s.attributes or {})[n.GEN_AI_TOOL_NAME]),
                str((s.attributes or {})[n.GEN_AI_TOOL_CALL_ID]),
                str((s.attributes or {}).get(n.ERROR_TYPE, "")),
            )
            for s in rig.children(turn, n.SPAN_EXECUTE_TOOL)
        ]
        for turn in rig.children(run, n.SPAN_TURN)
    ]


def test_openai_agents_a_handoff_is_a_tool_call_spanned_and_counted_in_the_turn_that_asked(rig: Rig) -> None:
    """A handoff is a tool call in the SDK's own terms (the model calls `transfer_to_refunds`); the
    SDK runs no tool hooks for it, and it had no span and no count: the dashboards missed it."""

    @function_tool
    def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    refunds = OAAgent(
        name="refunds",
        model=ScriptedModel(
            [
                ModelStep(output=[function_call("refund", {"order": "7"}, call_id="r1")]),
                ModelStep(output=[assistant_message("refunded")]),
            ]
        ),
        tools=[refund],
    )
    steps = [ModelStep(output=[function_call("transfer_to_refunds", {}, call_id="h1")])]
    triage = OAAgent(name="triage", model=ScriptedModel(steps), handoffs=[refunds])
    res = oa.run(triage, "refund order 7", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.output, res.turns) == (StopReason.SUCCESS, "refunded", 3)
    assert tool_spans_by_turn(rig) == [[("transfer_to_refunds", "h1", "")], [("refund", "r1", "")], []]
    tool_calls = {"agent": "triage", "task_type": TASK, "outcome": n.TOOL_OK}
    assert rig.value("agent_tool_calls_total", **tool_calls, tool="transfer_to_refunds") == 1  # by name
    assert rig.value("agent_tool_calls_total", **tool_calls, tool="refund") == 1


@tool_input_guardrail
def no_deletes(data: Any) -> ToolGuardrailFunctionOutput:
    return ToolGuardrailFunctionOutput.reject_content("Deleting is not allowed here.")


@pytest.mark.parametrize("max_turns", [10, 1])
def test_openai_agents_a_call_a_tool_input_guardrail_rejected_is_a_failed_tool_call(
    rig: Rig, max_turns: int
) -> None:
    """A tool input guardrail's `reject_content` answers the model in the tool's place: the SDK runs
    no tool hooks for the call, and it had no span and no count. It is a call that failed (the tool
    never ran), in the turn that asked for it, beside the calls that ran; also when the run's turns
    ran out with it (no model call came next)."""
    ran: list[str] = []

    @function_tool(tool_input_guardrails=[no_deletes])
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    @function_tool
    def look(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    steps = [
        ModelStep(
            output=[
                function_call("look", {"path": "a"}, call_id="l1"),
                function_call("delete", {"path": "a"}, call_id="d1"),
            ]
        ),
        ModelStep(output=[assistant_message("could not delete a")]),
    ]
    agent = OAAgent(name="cleaner", model=ScriptedModel(steps), tools=[look, delete])
    res = oa.run(agent, "delete a", hooks=rig.hooks, task_type=TASK, max_turns=max_turns)
    first_turn = [("look", "l1", ""), ("delete", "d1", oa.GUARDRAIL_REJECTED)]
    if max_turns == 1:
        assert (res.reason, res.limit, res.turns, ran) == (StopReason.LIMIT, LimitKind.TURNS, 1, [])
        assert tool_spans_by_turn(rig) == [first_turn]
    else:
        assert (res.reason, res.output, res.turns, ran) == (StopReason.SUCCESS, "could not delete a", 2, [])
        assert tool_spans_by_turn(rig) == [first_turn, []]
    tool_calls = {"agent": "cleaner", "task_type": TASK}
    assert rig.value("agent_tool_calls_total", **tool_calls, tool="delete", outcome=n.TOOL_ERROR) == 1
    assert rig.value("agent_tool_calls_total", **tool_calls, tool="delete", outcome=n.TOOL_OK) == 0
    assert rig.value("agent_tool_calls_total", **tool_calls, tool="look", outcome=n.TOOL_OK) == 1


@tool_output_guardrail
def no_secrets_out(data: Any) -> ToolGuardrailFunctionOutput:
    if "secret" in str(data.output):
        return ToolGuardrailFunctionOutput.reject_content("The output held a secret: withheld.")
    return ToolGuardrailFunctionOutput.allow()


@pytest.mark.parametrize("streamed", [False, True])
def test_openai_agents_a_call_whose_output_a_tool_output_guardrail_rejected_is_a_failed_tool_call(
    rig: Rig, streamed: bool
) -> None:
    """A tool output guardrail's `reject_content` gives the model its message in the tool's output's
    place: the SDK ends the call with its tool hooks as any other, and it counted `ok`. It is a call
    that failed (`guardrail_rejected`, as one a tool input guardrail rejected), in its turn, its span
    failed; a call of the same tool the guardrail let through stays `ok`."""

    @function_tool(tool_output_guardrails=[no_secrets_out])
    def read(path: str) -> str:
        """Read a file."""
        return "the secret is 42" if path == "s" else f"contents of {path}"

    steps = [
        ModelStep(
            output=[
                function_call("read", {"path": "a"}, call_id="r1"),
                function_call("read", {"path": "s"}, call_id="r2"),
            ]
        ),
        ModelStep(output=[assistant_message("read a; s was withheld")]),
    ]
    agent = OAAgent(name="reader", model=ScriptedModel(steps), tools=[read])
    if streamed:
        stream = oa.run_streamed(agent, "read a and s", hooks=rig.hooks, task_type=TASK)

        async def drain() -> None:
            async for _ in stream.stream_events():
                pass

        asyncio.run(drain())
        res = stream.result
    else:
        res = oa.run(agent, "read a and s", hooks=rig.hooks, task_type=TASK)
    assert res is not None and (res.reason, res.turns) == (StopReason.SUCCESS, 2)
    assert tool_spans_by_turn(rig) == [[("read", "r1", ""), ("read", "r2", oa.GUARDRAIL_REJECTED)], []]
    (rejected,) = [s for s in rig.spans() if (s.attributes or {}).get(n.GEN_AI_TOOL_CALL_ID) == "r2"]
    assert rejected.status.status_code is StatusCode.ERROR
    tool_calls = {"agent": "reader", "task_type": TASK, "tool": "read"}
    assert rig.value("agent_tool_calls_total", **tool_calls, outcome=n.TOOL_ERROR) == 1
    assert rig.value("agent_tool_calls_total", **tool_calls, outcome=n.TOOL_OK) == 1


def test_an_openai_agents_tool_output_tripwire_is_gave_up_guardrail_and_its_call_failed(rig: Rig) -> None:
    """A tool output guardrail's tripwire ends the run `gave_up`, cause `guardrail`, as an input one
    does; the call whose output it stopped is a failed call (`guardrail_rejected`), not one cut off."""

    @tool_output_guardrail
    def stop_on_secrets(data: Any) -> ToolGuardrailFunctionOutput:
        return ToolGuardrailFunctionOutput.raise_exception(output_info="a secret")

    @function_tool(tool_output_guardrails=[stop_on_secrets])
    def read(path: str) -> str:
        """Read a file."""
        return "the secret is 42"

    steps = [
        ModelStep(output=[function_call("read", {"path": "s"}, call_id="r1")]),
        ModelStep(output=[assistant_message("done")]),
    ]
    agent = OAAgent(name="reader", model=ScriptedModel(steps), tools=[read])
    res = oa.run(agent, "read s", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.cause) == (StopReason.GAVE_UP, "guardrail")
    assert res.note.startswith("Guardrail stop_on_secrets tripped")
    assert tool_spans_by_turn(rig) == [[("read", "r1", oa.GUARDRAIL_REJECTED)]]
    tool_calls = {"agent": "reader", "task_type": TASK, "tool": "read"}
    assert rig.value("agent_tool_calls_total", **tool_calls, outcome=n.TOOL_ERROR) == 1


def suspended(framework: str, rig: Rig) -> tuple[Any, RunResult, Callable[[str], RunResult]]:
    """A run of `framework` waiting for an approval, and how to approve it from a saved state (with
    the agent built again, as another process would)."""
    options: dict[str, Any] = {"hooks": rig.hooks, "task_type": TASK}
    if framework == "openai_agents":
        asked = oa.run(oa_agent(), "clean up a", **options)
        return oa, asked, lambda saved: oa.resume(oa_agent(), saved, True, **options)
    if framework == "pydantic_ai":
        asked = pai.run(pai_agent(), "clean up a", **options)
        return pai, asked, lambda saved: pai.resume(pai_agent(), saved, approved=True, **options)
    graph, config = lg_graph(InMemorySaver()), {"configurable": {"thread_id": "saved-1"}}
    asked = lg.run(graph, {"messages": [("user", "clean up a")]}, config, **options)
    return lg, asked, lambda saved: lg.resume(graph, saved, True, **options)


@pytest.mark.parametrize(
    ("framework", "agent"),
    [("openai_agents", "oa_remover"), ("pydantic_ai", "pai_deleter"), ("langgraph", "lg_deleter")],
)
def test_a_resume_from_the_saved_json_alone_goes_on_as_the_same_run_counted_once(
    rig: Rig, framework: str, agent: str
) -> None:
    """`state_of(result)` is what a caller keeps of a waiting run (a database row, a queue message);
    a resume from that JSON alone was a new run: another run id, its turns counted from 0, a second
    run started, its span linked to nothing. It goes on as a resume from the `RunResult` does."""
    module, asked, resume = suspended(framework, rig)
    assert asked.reason is StopReason.NEED_HELP
    saved = json.dumps(json.loads(module.state_of(asked)))  # through text, as a store keeps it
    done = resume(saved)
    assert (done.reason, done.run_id, done.turns) == (StopReason.SUCCESS, asked.run_id, 2)
    assert done.input_tokens > asked.input_tokens and done.waiting_seconds > 0
    run = {"agent": agent, "task_type": TASK}
    assert rig.value(f"{n.METRIC_RUNS_STARTED}_total", **run) == 1
    assert rig.value(f"{n.METRIC_RUNS_RESUMED}_total", **run, stop_reason="need_help", stopped_ago="1h") == 1
    assert rig.value(f"{n.METRIC_HUMAN_WAIT_SECONDS}_count", **run, outcome="answered") == 1
    first, second = sorted(rig.run_spans(), key=lambda s: s.start_time or 0)
    assert [(s.attributes or {}).get(n.AGENT_SEGMENT) for s in (first, second)] == [1, 2]
    assert [link.context.span_id for link in second.links] == [first.context.span_id]


def scripted(*parts: Any) -> FunctionModel:
    replies = iter(parts)

    async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse([next(replies)], usage=RequestUsage(input_tokens=10, output_tokens=4))

    return FunctionModel(play)


def delegating(observed_inner: bool, rig: Rig) -> tuple[PAIAgent[None, str], list[Any]]:
    """Pydantic AI's agent delegation: a tool runs another agent with `usage=ctx.usage`, so
    Pydantic AI counts the delegate's calls in the run; here the delegate runs plainly, or as a
    run of its own observed through the integration."""
    inner: PAIAgent[None, str] = PAIAgent(scripted(TextPart("a joke")), name="delegate")
    outer: PAIAgent[None, str] = PAIAgent(
        scripted(ToolCallPart("delegate", {"q": "joke"}, "c1"), TextPart("done")), name="outer"
    )
    nested: list[Any] = []

    @outer.tool
    async def delegate(ctx: PAIRunContext[None], q: str) -> str:
        """Ask the delegate."""
        if not observed_inner:
            return (await inner.run(q, usage=ctx.usage)).output
        res = await pai.arun(inner, q, usage=ctx.usage, hooks=rig.hooks, task_type=TASK)
        nested.append(res)
        return res.output

    return outer, nested


@pytest.mark.parametrize("hooked", [False, True], ids=["nodes", "capability"])
def test_pydantic_ai_a_delegate_agents_calls_count_in_the_run_once(rig: Rig, hooked: bool) -> None:
    """Read node by node, or by Endstate's capability (a capability of the caller's hooks node runs)."""
    outer, _ = delegating(False, rig)
    options: dict[str, Any] = {"capabilities": [NodeWatcher()]} if hooked else {}
    res = pai.run(outer, "tell a joke", hooks=rig.hooks, task_type=TASK, **options)
    assert (res.reason, res.turns) == (StopReason.SUCCESS, 2)
    assert (
        (res.input_tokens, res.output_tokens)
        == (res.raw.usage.input_tokens, res.raw.usage.output_tokens)
        == (30, 12)
    )
    assert res.cost_usd is None  # the delegate's calls have no price the run could see


def test_pydantic_ai_a_delegate_observed_as_its_own_run_is_counted_there_not_twice(rig: Rig) -> None:
    outer, nested = delegating(True, rig)
    res = pai.run(outer, "tell a joke", hooks=rig.hooks, task_type=TASK)
    (inner,) = nested
    assert (res.input_tokens, inner.input_tokens) == (20, 10)  # Pydantic AI's 30, each call in one run
    assert rig.value(f"{n.METRIC_RUN_TOKENS}_sum", agent="outer", task_type=TASK, stop_reason="success") == 28


class NodeWatcher(AbstractCapability[Any]):
    async def before_node_run(self, ctx: Any, *, node: Any) -> Any:
        return node


@pytest.mark.parametrize("exact", [False, True])
def test_langgraph_a_subgraph_interrupted_counts_its_calls_in_the_segment_that_made_them(
    rig: Rig, exact: bool
) -> None:
    """An agent in a subgraph node asks for approval: the reply asking is this segment's call (a
    run that is never answered ends with it counted), and the resumed segment does not count it
    again."""
    inner = graph_of([calls("delete", {"path": "a"}, "d1"), says("deleted")])
    outer = StateGraph(Chat)
    outer.add_node("agent", inner)
    outer.add_edge(START, "agent")
    outer.add_edge("agent", END)
    graph = outer.compile(checkpointer=InMemorySaver(), name="outer")
    config = {"configurable": {"thread_id": f"sub-{exact}"}}
    options: dict[str, Any] = {"hooks": rig.hooks, "task_type": TASK, "exact_counts": exact}
    asked = lg.run(graph, {"messages": [("user", "delete a")]}, config, **options)
    assert (asked.reason, asked.turns, asked.input_tokens) == (StopReason.NEED_HELP, 1, 10)
    assert asked.suspension is not None and asked.suspension.question == 'Approve delete({"path": "a"})?'
    done = lg.resume(graph, asked, approved=True, **options)
    assert (done.reason, done.output, done.turns, done.input_tokens) == (StopReason.SUCCESS, "deleted", 2, 22)
    assert (
        rig.value(f"{n.METRIC_RUN_TOKENS}_sum", agent="outer", task_type=TASK, stop_reason="success")
        == 22 + 7
    )


def test_pydantic_ai_a_cost_limit_is_a_cost_limit_with_the_cost_spent(rig: Rig) -> None:
    async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        usage = RequestUsage(input_tokens=100_000, output_tokens=200)
        return ModelResponse([ToolCallPart("look", {"path": "a"}, "c1")], usage=usage, provider_name="openai")

    agent: PAIAgent[None, str] = PAIAgent(FunctionModel(play, model_name="gpt-4o"), name="priced")

    @agent.tool_plain
    def look(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    res = pai.run(agent, "x", hooks=rig.hooks, task_type=TASK, usage_limits=UsageLimits(cost_limit=0.1))
    assert (res.reason, res.limit, res.turns) == (StopReason.LIMIT, LimitKind.COST, 1)
    assert res.cost_usd is not None and res.cost_usd > 0.1  # the call that crossed it is counted
    assert rig.stops("priced", TASK, "limit", "cost") == 1


def test_a_home_grown_generator_the_caller_stops_reading_ends_cancelled(rig: Rig) -> None:
    """A loop that streams its replies as a generator: a caller that stops reading closes it
    (`GeneratorExit` at the `yield`), which is the caller cancelling, not an error of the run."""

    runs: list[Any] = []

    def answer() -> Iterator[str]:
        with observe_run(rig.hooks, agent="streaming_loop", task_type=TASK) as run:
            runs.append(run)
            for chunk in ("one", "two", "three"):
                with run.turn(), run.model_call() as call:
                    call.reply(input_tokens=3, output_tokens=1, text=chunk)
                yield chunk

    chunks = answer()
    assert next(chunks) == "one"
    chunks.close()
    (run,) = runs
    assert run.result is not None and (run.result.reason, run.result.turns) == (StopReason.CANCELLED, 1)
    assert rig.stops("streaming_loop", TASK, "cancelled") == 1
    assert rig.stops("streaming_loop", TASK, "error") == 0


def test_a_home_grown_run_that_waited_goes_on_as_the_same_run(rig: Rig) -> None:
    """A loop that asked a person resumes with `resumed=` its result: one run (counted started once,
    resumed once), its turns and tokens going on, the person's wait recorded."""
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK, model="m") as first:
        with first.turn(), first.model_call() as call:
            call.reply(input_tokens=5, output_tokens=2, text="May I delete it?")
        first.need_help("May I delete it?", state={"messages": ["..."]})
    asked = first.result
    assert asked is not None and asked.reason is StopReason.NEED_HELP
    with (
        observe_run(rig.hooks, agent="raw_loop", task_type=TASK, model="m", resumed=asked) as then,
        then.turn(),
        then.model_call() as call,
    ):
        call.reply(input_tokens=7, output_tokens=3, text="deleted")
    done = then.result
    assert done is not None and (done.reason, done.run_id, done.turns, done.input_tokens) == (
        StopReason.SUCCESS,
        asked.run_id,
        2,
        12,
    )
    run = {"agent": "raw_loop", "task_type": TASK}
    assert rig.value(f"{n.METRIC_RUNS_STARTED}_total", **run) == 1
    assert rig.value(f"{n.METRIC_RUNS_RESUMED}_total", **run, stop_reason="need_help", stopped_ago="1h") == 1
    assert rig.value(f"{n.METRIC_HUMAN_WAIT_SECONDS}_count", **run, outcome="answered") == 1
    with (
        pytest.raises(ConfigError, match=r"takes a need_help RunResult to go on from, not success"),
        observe_run(rig.hooks, agent="raw_loop", task_type=TASK, resumed=done),
    ):
        pass


@pytest.mark.parametrize("other", [{"agent": "another_loop"}, {"task_type": "another_task"}])
def test_a_home_grown_run_goes_on_only_under_its_own_agent_and_task_type(
    rig: Rig, other: dict[str, str]
) -> None:
    """Resumed under another agent, the run was counted started for one and ended for the other: a
    start that never ends in one share, an end that never started in the other."""
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as first:
        first.need_help("May I delete it?")
    named = {"agent": "raw_loop", "task_type": TASK} | other
    with (
        pytest.raises(ConfigError, match=rf"pass agent='raw_loop', task_type='{TASK}'"),
        observe_run(rig.hooks, **named, resumed=first.result),
    ):
        pass
    assert rig.stops(named["agent"], named["task_type"], "success") == 0
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK, resumed=first.result):
        pass
    assert rig.stops("raw_loop", TASK, "success") == 1


def test_a_home_grown_run_resumed_again_and_again_counts_its_segments_on(rig: Rig) -> None:
    """Each resume from a `need_help` result (no store, no snapshot of the caller's) is the next
    segment, linked to the one it resumes, as Endstate's own runs are: not segment 2 every time."""
    waited = None
    for _ in range(3):
        with observe_run(rig.hooks, agent="raw_loop", task_type=TASK, model="m", resumed=waited) as run:
            with run.turn(), run.model_call() as call:
                call.reply(input_tokens=5, output_tokens=2, text="Which disk?")
            run.need_help("Which disk?")
        waited = run.result
    assert waited is not None and (waited.turns, waited.input_tokens) == (3, 15)
    spans = sorted(rig.run_spans(), key=lambda s: s.start_time or 0)
    assert [(s.attributes or {}).get(n.AGENT_SEGMENT) for s in spans] == [1, 2, 3]
    assert [[link.context.span_id for link in s.links] for s in spans] == [
        [],
        [spans[0].context.span_id],
        [spans[1].context.span_id],
    ]
    run_labels = {"agent": "raw_loop", "task_type": TASK}
    assert rig.value(f"{n.METRIC_RUNS_STARTED}_total", **run_labels) == 1
    assert (
        rig.value(f"{n.METRIC_RUNS_RESUMED}_total", **run_labels, stop_reason="need_help", stopped_ago="1h")
        == 2
    )


def test_runs_at_once_each_with_an_observed_delegate_count_their_own_calls(rig: Rig) -> None:
    """Many runs in one event loop, each delegating to a run of its own: each delegate is nested in
    the run that started it (a context variable per task), never in another one running beside it."""
    pairs = [delegating(True, rig) for _ in range(8)]

    async def all_at_once() -> list[Any]:
        return await asyncio.gather(
            *(pai.arun(outer, "joke", hooks=rig.hooks, task_type=TASK) for outer, _ in pairs)
        )

    results = asyncio.run(all_at_once())
    assert [(r.reason, r.input_tokens) for r in results] == [(StopReason.SUCCESS, 20)] * 8
    assert [[inner.input_tokens for inner in nested] for _, nested in pairs] == [[10]] * 8
