"""Each model call of a foreign run shown as the model it asked for (probe24b).

A native Endstate run calls one model: its chat spans are `chat {model}` with `gen_ai.request.model`
that model, and `gen_ai_client_operation_duration_seconds` and the token metric are labelled by it
(GenAI conventions: the request model names the span and the series; the response model is an
attribute). A foreign run may call several: an OpenAI Agents SDK handoff to an agent on another
model, a LangGraph graph whose nodes hold different models, a Pydantic AI model selector or
`FallbackModel`, a Claude Agent SDK run falling back to its `fallback_model`. Every such call's span
was named after the run's model and its duration (and, for most, its tokens) counted under it: a
latency or cost panel by model showed one model. Each framework is driven by its own test model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import ModelProvider, RunConfig, set_tracing_disabled
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from agents.usage import Usage as OAUsage
from claude_agent_sdk import ClaudeAgentOptions
from integrations_support import INPUT, FakeCLI, Rig, assistant, result, rigged, two_models, usage
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from messages_api import MessagesAPI, message, text
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.concurrency import ConcurrencyLimitedModel
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.usage import RequestUsage

from agent import observe_run
from agent.errors import ConfigError
from agent.integrations import claude_agent_sdk as endstate_claude
from agent.integrations import langgraph as endstate_lg
from agent.integrations import openai_agents as endstate_oa
from agent.integrations import pydantic_ai as endstate_pai
from agent.result import StopReason
from telemetry import names as n


@pytest.fixture(autouse=True)
def no_openai_trace_export() -> Iterator[None]:
    """The Agents SDK would export its own traces to OpenAI: nothing leaves this machine."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def chats(rig: Rig) -> list[tuple[str, Any, Any]]:
    """Each chat span's name, request model and response model, in the order the calls began."""
    spans = sorted((s for s in rig.spans() if s.name.startswith("chat ")), key=lambda s: s.start_time or 0)
    attributes = [s.attributes or {} for s in spans]
    return [
        (s.name, a.get(n.GEN_AI_REQUEST_MODEL), a.get(n.GEN_AI_RESPONSE_MODEL))
        for s, a in zip(spans, attributes, strict=True)
    ]


def calls(rig: Rig, provider: str, model: str, error: str = n.NO_ERROR) -> float:
    """How many model calls `gen_ai_client_operation_duration_seconds` timed under `model`."""
    labels = rig.run_labels() | {"gen_ai_operation_name": "chat", "gen_ai_provider_name": provider}
    labels |= {"gen_ai_request_model": model, "error_type": error}
    return rig.value("gen_ai_client_operation_duration_seconds_count", **labels)


def tokens(rig: Rig, provider: str, model: str, kind: str = "input") -> float:
    labels = rig.run_labels() | {"gen_ai_operation_name": "chat", "gen_ai_provider_name": provider}
    labels |= {"gen_ai_request_model": model, "gen_ai_token_type": kind}
    return rig.value("gen_ai_client_token_usage_sum", **labels)


# -- OpenAI Agents SDK: a handoff to an agent on another model ---------------------------------


def oa_usage(input_tokens: int) -> OAUsage:
    return OAUsage(requests=1, input_tokens=input_tokens, output_tokens=4, total_tokens=input_tokens + 4)


class Named(ModelProvider):
    """The models the agents name, as the SDK's provider resolves them: here scripted."""

    def __init__(self, specialist: list[ModelStep]) -> None:
        handoff = function_call("transfer_to_specialist", {}, call_id="h1")
        self.models = {
            "gpt-4.1-mini": ScriptedModel([ModelStep(output=[handoff], usage=oa_usage(10))]),
            "gpt-4.1": ScriptedModel(specialist),
        }

    def get_model(self, model_name: str | None) -> Any:
        return self.models[str(model_name)]


def triage() -> OAAgent[Any]:
    specialist = OAAgent(name="specialist", model="gpt-4.1")
    return OAAgent(name="triage", model="gpt-4.1-mini", handoffs=[specialist])


def test_an_agent_handed_off_to_has_its_calls_spanned_and_timed_as_its_own_model() -> None:
    config = RunConfig(
        model_provider=Named([ModelStep(output=[assistant_message("ok")], usage=oa_usage(900))])
    )
    with rigged() as rig:
        res = endstate_oa.run(triage(), "refund", hooks=rig.hooks, run_config=config)
        assert (res.reason, res.turns) == (StopReason.SUCCESS, 2)
        assert [(name, asked) for name, asked, _ in chats(rig)] == [
            ("chat gpt-4.1-mini", "gpt-4.1-mini"),
            ("chat gpt-4.1", "gpt-4.1"),  # before: "chat gpt-4.1-mini", the run's model
        ]
        assert (calls(rig, "openai", "gpt-4.1-mini"), calls(rig, "openai", "gpt-4.1")) == (1, 1)
        assert (tokens(rig, "openai", "gpt-4.1-mini"), tokens(rig, "openai", "gpt-4.1")) == (10, 900)
        (run,) = rig.run_spans()
        assert (run.attributes or {})[n.GEN_AI_REQUEST_MODEL] == "gpt-4.1-mini"  # the run's model


def test_a_failed_call_of_an_agent_handed_off_to_is_timed_as_its_own_model() -> None:
    failing = [ModelStep(error=ConnectionError("reset by peer"))]
    with rigged() as rig:
        res = endstate_oa.run(
            triage(), "refund", hooks=rig.hooks, run_config=RunConfig(model_provider=Named(failing))
        )
        assert res.reason is StopReason.ERROR
        assert calls(rig, "openai", "gpt-4.1", "ConnectionError") == 1
        assert calls(rig, "openai", "gpt-4.1-mini", "ConnectionError") == 0
        assert [name for name, _, _ in chats(rig)] == ["chat gpt-4.1-mini", "chat gpt-4.1"]


# -- LangGraph: a graph whose nodes hold different models --------------------------------------


@pytest.mark.parametrize("exact", [False, True])
def test_a_graphs_calls_are_spanned_and_timed_as_the_models_their_replies_name(exact: bool) -> None:
    with rigged() as rig:
        res = endstate_lg.run(two_models(), INPUT, hooks=rig.hooks, exact_counts=exact)
        assert (res.reason, res.turns) == (StopReason.SUCCESS, 2)
        assert chats(rig) == [
            ("chat claude-haiku-4-5-20251001", "claude-haiku-4-5-20251001", "claude-haiku-4-5-20251001"),
            ("chat claude-opus-4-1", "claude-opus-4-1", "claude-opus-4-1"),  # before: "chat langgraph"
        ]
        assert calls(rig, "langchain", "claude-haiku-4-5-20251001") == 1
        assert calls(rig, "langchain", "claude-opus-4-1") == 1
        assert calls(rig, "langchain", "langgraph") == 0


@pytest.mark.parametrize("exact", [False, True])
def test_a_graph_naming_its_model_keeps_a_dated_reply_of_it_and_shows_another_as_its_own(exact: bool) -> None:
    config = {"metadata": {"ls_model_name": "claude-haiku-4-5"}}
    with rigged() as rig:
        endstate_lg.run(two_models(), INPUT, config, hooks=rig.hooks, exact_counts=exact)
        assert [(name, asked) for name, asked, _ in chats(rig)] == [
            ("chat claude-haiku-4-5", "claude-haiku-4-5"),  # the run's model, dated in its reply
            ("chat claude-opus-4-1", "claude-opus-4-1"),
        ]
        assert (calls(rig, "langchain", "claude-haiku-4-5"), calls(rig, "langchain", "claude-opus-4-1")) == (
            1,
            1,
        )
        assert (
            tokens(rig, "langchain", "claude-haiku-4-5"),
            tokens(rig, "langchain", "claude-opus-4-1"),
        ) == (
            100,
            2000,
        )


# -- Pydantic AI: a model selector, and a FallbackModel -----------------------------------------


def answer(text: str, input_tokens: int) -> ModelResponse:
    return ModelResponse(
        parts=[TextPart(text)], usage=RequestUsage(input_tokens=input_tokens, output_tokens=3)
    )


def looker(messages: Any, info: AgentInfo) -> ModelResponse:
    return ModelResponse(
        parts=[ToolCallPart("look", {"q": "x"}, tool_call_id="c1")],
        usage=RequestUsage(input_tokens=20, output_tokens=3),
    )


async def look_streamed(messages: Any, info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
    yield {0: DeltaToolCall(name="look", json_args='{"q": "x"}', tool_call_id="c1")}


async def answer_streamed(messages: Any, info: AgentInfo) -> AsyncIterator[str]:
    yield "done"


SMALL = FunctionModel(looker, stream_function=look_streamed, model_name="small-1")
LARGE = FunctionModel(
    lambda messages, info: answer("done", 700), stream_function=answer_streamed, model_name="large-1"
)


class Escalate(AbstractCapability[Any]):
    """A per-step model selector (Pydantic AI's `get_model`): the small model first, then the large."""

    def get_model(self) -> Any:
        return lambda ctx: SMALL if ctx.run_step <= 1 else LARGE


def selecting() -> PAIAgent[Any, str]:
    agent = PAIAgent(SMALL, name="escalating", capabilities=[Escalate()])

    @agent.tool_plain
    def look(q: str) -> str:
        """Look something up."""
        return "seen"

    return agent


@pytest.mark.parametrize("streamed", [False, True])
def test_a_pydantic_ai_model_selectors_steps_are_each_shown_as_the_model_selected(streamed: bool) -> None:
    async def events(ctx: Any, stream: Any) -> None:  # with a handler, calls are seen by a capability
        async for _ in stream:
            pass

    extra = {"event_stream_handler": events} if streamed else {}
    with rigged() as rig:
        res = endstate_pai.run(selecting(), "hi", hooks=rig.hooks, **extra)
        assert (res.reason, res.output) == (StopReason.SUCCESS, "done")
        assert [(name, asked) for name, asked, _ in chats(rig)] == [
            ("chat small-1", "small-1"),
            ("chat large-1", "large-1"),  # before: "chat small-1"
        ]
        provider = "function"
        assert (calls(rig, provider, "small-1"), calls(rig, provider, "large-1")) == (1, 1)
        if not streamed:  # a streamed `FunctionModel` reply's tokens are its own estimate
            assert (tokens(rig, provider, "small-1"), tokens(rig, provider, "large-1")) == (20, 700)


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_fallback_models_call_is_shown_as_the_model_that_answered(wrapped: bool) -> None:
    def overloaded(messages: Any, info: AgentInfo) -> ModelResponse:
        raise ModelHTTPError(529, "primary-1", "overloaded")

    primary = FunctionModel(overloaded, model_name="primary-1")
    backup = FunctionModel(lambda messages, info: answer("from backup", 50), model_name="backup-1")
    model: Any = FallbackModel(primary, backup)
    if wrapped:  # a wrapper model around it (here Pydantic AI's concurrency limit)
        model = ConcurrencyLimitedModel(model, 2)
    agent = PAIAgent(model, name="resilient")
    with rigged() as rig:
        res = endstate_pai.run(agent, "hi", hooks=rig.hooks)
        assert (res.reason, res.output) == (StopReason.SUCCESS, "from backup")
        ((name, asked, served),) = chats(rig)
        assert (name, asked, served) == (
            "chat backup-1",
            "backup-1",
            "backup-1",
        )  # as Pydantic AI's spans say
        provider = "fallback:function,function"
        assert calls(rig, provider, "backup-1") == 1
        assert tokens(rig, provider, "backup-1") == 50
        assert calls(rig, provider, "fallback:primary-1,backup-1") == 0


# -- Claude Agent SDK: the CLI falling back to `fallback_model` ---------------------------------


def claude_message(message_id: str, model: str, text: str) -> dict[str, Any]:
    line = assistant(message_id, {"type": "text", "text": text})
    line["message"]["model"] = model
    return line


@pytest.mark.parametrize("fallback", ["claude-haiku-4-5", "haiku"])  # an id, or the CLI's alias
def test_a_claude_run_that_fell_back_shows_the_fallback_models_calls_as_its_own(fallback: str) -> None:
    lines = [
        claude_message("m1", "claude-sonnet-4-5-20250929", "looking"),  # the run's model, dated
        claude_message("m2", "claude-haiku-4-5-20251001", "done"),  # the fallback, once sonnet was overloaded
        result(result="done"),
    ]
    options = ClaudeAgentOptions(model="claude-sonnet-4-5", fallback_model=fallback)
    with rigged() as rig:
        res = endstate_claude.run("hi", options=options, transport=FakeCLI(lines), hooks=rig.hooks)
        assert res.reason is StopReason.SUCCESS
        assert [(name, asked) for name, asked, _ in chats(rig)] == [
            ("chat claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("chat claude-haiku-4-5-20251001", "claude-haiku-4-5-20251001"),  # before: the run's model
        ]
        assert calls(rig, "anthropic", "claude-sonnet-4-5") == 1
        assert calls(rig, "anthropic", "claude-haiku-4-5-20251001") == 1


# -- a home-grown loop: a step on a cheaper model -------------------------------------------------


def test_a_home_grown_loops_call_to_another_model_is_shown_as_that_model() -> None:
    with rigged() as rig:
        with observe_run(rig.hooks, agent="triage", task_type="ticket", model="claude-sonnet-4-5") as run:
            with run.turn(), run.model_call(1024, model="claude-haiku-4-5") as call:
                call.reply(input_tokens=30, output_tokens=2, text="routed")
            with run.turn(), run.model_call(1024) as call:
                call.reply(input_tokens=300, output_tokens=20, text="answered")
        assert [(name, asked) for name, asked, _ in chats(rig)] == [
            ("chat claude-haiku-4-5", "claude-haiku-4-5"),
            ("chat claude-sonnet-4-5", "claude-sonnet-4-5"),
        ]
        assert (
            calls(rig, "anthropic", "claude-haiku-4-5"),
            calls(rig, "anthropic", "claude-sonnet-4-5"),
        ) == (1, 1)
        assert (
            tokens(rig, "anthropic", "claude-haiku-4-5"),
            tokens(rig, "anthropic", "claude-sonnet-4-5"),
        ) == (
            30,
            300,
        )
    with (
        pytest.raises(ConfigError, match="takes the model's name"),
        observe_run(None, agent="a", task_type="t") as run,
    ):
        run.model_call(model=5).__enter__()  # type: ignore[arg-type]


def test_a_pydantic_ai_run_given_its_model_as_a_string_is_labelled_as_its_calls_are(monkeypatch: Any) -> None:
    """`run(agent, ..., model="anthropic:claude-sonnet-4-5")`: the run span and series were labelled
    "anthropic:claude-sonnet-4-5" (provider "pydantic_ai"), its calls "claude-sonnet-4-5", as an
    agent built with that string is. Here through the real `anthropic` SDK and the local server."""
    with MessagesAPI() as api:
        api.enqueue(message(text("done")))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        with rigged() as rig:
            agent = PAIAgent(FunctionModel(lambda messages, info: answer("unused", 1)), name="named")
            res = endstate_pai.run(agent, "hi", hooks=rig.hooks, model="anthropic:claude-sonnet-4-5")
            assert (res.reason, res.output) == (StopReason.SUCCESS, "done")
            (run,) = rig.run_spans()
            attributes = run.attributes or {}
            assert (attributes[n.GEN_AI_PROVIDER_NAME], attributes[n.GEN_AI_REQUEST_MODEL]) == (
                "anthropic",
                "claude-sonnet-4-5",
            )
            assert [(name, asked) for name, asked, _ in chats(rig)] == [
                ("chat claude-sonnet-4-5", "claude-sonnet-4-5")
            ]
            assert calls(rig, "anthropic", "claude-sonnet-4-5") == 1
            assert rig.value("agent_runs_started_total", agent="named", task_type="default") == 1


def test_exact_counts_show_a_call_as_the_model_it_asked_for_unless_its_reply_names_another() -> None:
    """With `exact_counts=True` a call starts as the model LangChain's callback metadata names
    (`ls_model_name`); a reply naming none keeps it, a reply naming another model (here the run's,
    dated) is that model's."""

    def reply(text: str, model: str = "") -> AIMessage:
        meta = {"model_name": model} if model else {}
        return AIMessage(text, usage_metadata=usage(10, 2), response_metadata=meta)

    asked = {"ls_model_name": "claude-opus-4-1"}
    silent = GenericFakeChatModel(messages=iter([reply("draft")]), metadata=asked)
    named = GenericFakeChatModel(messages=iter([reply("final", "claude-haiku-4-5-20251001")]), metadata=asked)

    async def first(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await silent.ainvoke(state["messages"])]}

    async def second(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await named.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("first", first)
    graph.add_node("second", second)
    graph.add_edge(START, "first")
    graph.add_edge("first", "second")
    graph.add_edge("second", END)
    config = {"metadata": {"ls_model_name": "claude-haiku-4-5"}}
    with rigged() as rig:
        endstate_lg.run(graph.compile(), INPUT, config, hooks=rig.hooks, exact_counts=True)
        assert [(name, model) for name, model, _ in chats(rig)] == [
            ("chat claude-opus-4-1", "claude-opus-4-1"),
            ("chat claude-haiku-4-5", "claude-haiku-4-5"),
        ]
        assert (calls(rig, "langchain", "claude-opus-4-1"), calls(rig, "langchain", "claude-haiku-4-5")) == (
            1,
            1,
        )


# -- a failed call tried again: the same turn, its next attempt -------------------------------------


class Overloaded(GenericFakeChatModel):
    """A chat model whose API answers 529 every time."""

    async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("overloaded")


class Flaky(GenericFakeChatModel):
    """A chat model whose API answers 529 the first time only."""

    failed: bool = False

    async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
        if not self.failed:
            self.failed = True
            raise ConnectionError("overloaded")
        return await super()._agenerate(*args, **kwargs)


def answering(text: str, model: str) -> GenericFakeChatModel:
    reply = AIMessage(text, usage_metadata=usage(10, 2), response_metadata={"model_name": model})
    return GenericFakeChatModel(messages=iter([reply]), metadata={"ls_model_name": model})


def one_node(chain: Any) -> Any:
    async def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await chain.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("answer", node)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", END)
    return graph.compile(name="resilient")


@pytest.mark.parametrize("how", ["with_fallbacks", "with_retry"])
def test_exact_counts_count_a_failed_call_and_its_retry_or_fallback_as_one_turn(how: str) -> None:
    """LangChain's `with_fallbacks`/`with_retry` around a model: each attempt is a chat-model call
    LangChain's callbacks report; a failed one and the one after it were two turns (a 429 retried
    was a turn of its own). Endstate's loop retries a call within its turn: one turn, two attempts."""
    if how == "with_fallbacks":
        primary = Overloaded(messages=iter([]), metadata={"ls_model_name": "big-1"})
        chain, first = primary.with_fallbacks([answering("ok", "small-1")]), "big-1"
    else:
        chain, first = (
            Flaky(messages=answering("ok", "small-1").messages, metadata={"ls_model_name": "small-1"}),
            "small-1",
        )
        chain = chain.with_retry(stop_after_attempt=2, wait_exponential_jitter=False)
    with rigged() as rig:
        res = endstate_lg.run(one_node(chain), INPUT, hooks=rig.hooks, exact_counts=True)
        assert (res.reason, res.turns) == (StopReason.SUCCESS, 1)  # before: 2
        (turn,) = [s for s in rig.spans() if s.name == n.SPAN_TURN]
        attempts = [((s.attributes or {}).get(n.AGENT_ATTEMPT), s.name) for s in rig.children(turn, "chat ")]
        assert attempts == [(1, f"chat {first}"), (2, "chat small-1")]
        assert calls(rig, "langchain", first, "ConnectionError") == 1
        assert calls(rig, "langchain", "small-1") == 1
