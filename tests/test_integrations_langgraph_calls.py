"""LangGraph with `exact_counts=True`: every chat-model and tool call read from LangChain's callbacks.

Real LangGraph graphs around LangChain's fake chat model; what the graph's stream
alone cannot see: a model call whose reply is never written to the state, a call's
own time inside its node, parallel calls each with their own end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from foreign_agents import ENV_CHECKPOINTS, TASK_TYPE, lg_checkpointer, lg_graph
from integrations_support import Chat, Rig, calls, graph_of, rigged, says, usage
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool as lc_tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from test_integrations import TASK, chat_spans, check_run_span, tool_spans

from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store
from agent.integrations import langgraph as lg
from agent.models.base import ModelReply
from agent.prices import PriceTable
from agent.result import StopReason
from agent.verify import predicate
from telemetry import names as n


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


class SlowChat(GenericFakeChatModel):
    """The fake chat model, answering after `seconds` on the event loop (as a call over a network)."""

    seconds: float = 0.02

    async def _agenerate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Any:
        await asyncio.sleep(self.seconds)
        return self._generate(messages, stop=stop, **kwargs)


def model_calls(rig: Rig) -> float:
    """How many chat calls the GenAI operation-duration histogram counted, whatever their labels."""
    return sum(
        sample.value
        for metric in rig.registry.collect()
        for sample in metric.samples
        if sample.name == f"{n.METRIC_GEN_AI_OPERATION_DURATION}_count"
        and sample.labels.get("gen_ai_operation_name") == "chat"
    )


class Routed(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    route: str


def routed_graph(priced: dict[str, Any] | None = None) -> Any:
    """A classifier's call decides the route and writes only its label; then the agent answers."""
    label = AIMessage("billing", usage_metadata=usage(5, 1), response_metadata=priced or {})
    answer_text = AIMessage(
        "Your invoice is attached.", usage_metadata=usage(12, 3), response_metadata=priced or {}
    )
    classifier = GenericFakeChatModel(messages=iter([label]))
    agent = GenericFakeChatModel(messages=iter([answer_text]))

    async def route(state: Routed) -> dict[str, Any]:
        return {"route": (await classifier.ainvoke(state["messages"])).content}

    async def answer(state: Routed) -> dict[str, Any]:
        return {"messages": [await agent.ainvoke(state["messages"])]}

    graph = StateGraph(Routed)
    graph.add_node("route", route)
    graph.add_node("answer", answer)
    graph.add_edge(START, "route")
    graph.add_edge("route", "answer")
    graph.add_edge("answer", END)
    return graph.compile(name="router")


def test_a_routers_call_whose_reply_is_not_in_the_state_is_counted_in_turns_tokens_and_metrics(
    rig: Rig,
) -> None:
    res = lg.run(
        routed_graph(),
        {"messages": [("user", "invoice?")]},
        hooks=rig.hooks,
        task_type=TASK,
        exact_counts=True,
    )
    assert (res.reason, res.output, res.turns) == (StopReason.SUCCESS, "Your invoice is attached.", 2)
    assert (res.input_tokens, res.output_tokens) == (5 + 12, 1 + 3)
    assert res.raw["route"] == "billing"
    check_run_span(rig, "router", res, turns=2)
    assert [(s.attributes or {})[n.GEN_AI_USAGE_INPUT_TOKENS] for s in chat_spans(rig)] == [5, 12]
    assert model_calls(rig) == 2
    no_hooks = lg.run(routed_graph(), {"messages": [("user", "invoice?")]}, exact_counts=True)
    assert (no_hooks.turns, no_hooks.input_tokens, no_hooks.output_tokens) == (2, 17, 4)


def test_a_model_calls_span_covers_the_call_not_its_node(rig: Rig) -> None:
    model = SlowChat(messages=iter([says("done")]), seconds=0.03)
    around: list[int] = []

    async def node(state: Chat) -> dict[str, Any]:
        await asyncio.sleep(0.05)  # building the prompt, say
        around.append(time.time_ns())
        reply = await model.ainvoke(state["messages"])
        around.append(time.time_ns())
        await asyncio.sleep(0.05)  # and reading the reply
        return {"messages": [reply]}

    res = lg.run(
        graph_of([], model_node=node),
        {"messages": [("user", "x")]},
        hooks=rig.hooks,
        task_type=TASK,
        exact_counts=True,
    )
    assert (res.reason, res.turns) == (StopReason.SUCCESS, 1)
    (chat,) = chat_spans(rig)
    assert chat.start_time is not None and chat.end_time is not None
    assert around[0] <= chat.start_time and chat.end_time <= around[1]
    assert chat.end_time - chat.start_time >= 0.03e9


def test_parallel_tool_calls_are_timed_each(rig: Rig) -> None:
    ran: dict[str, tuple[int, int]] = {}

    async def nap(name: str, seconds: float) -> str:
        started = time.time_ns()
        await asyncio.sleep(seconds)
        ran[name] = (started, time.time_ns())
        return "rested"

    @lc_tool
    async def quick() -> str:
        """Rest 10 ms."""
        return await nap("quick", 0.01)

    @lc_tool
    async def slow() -> str:
        """Rest 200 ms."""
        return await nap("slow", 0.2)

    both = AIMessage(
        "", tool_calls=[{"name": "quick", "args": {}, "id": "q1"}, {"name": "slow", "args": {}, "id": "s1"}]
    )
    graph = graph_of([both, says("rested")], tools=ToolNode([quick, slow]))
    res = lg.run(
        graph,
        {"messages": [("user", "x")]},
        hooks=rig.hooks,
        task_type=TASK,
        tools=["quick", "slow"],
        exact_counts=True,
    )
    assert (res.reason, res.turns) == (StopReason.SUCCESS, 2)
    spans = {s.name.split()[-1]: s for s in rig.spans() if s.name.startswith(n.SPAN_EXECUTE_TOOL)}
    for name, (started, ended) in ran.items():
        span = spans[name]
        assert span.start_time is not None and span.end_time is not None
        assert span.start_time <= started and ended <= span.end_time
        assert (span.attributes or {})[n.GEN_AI_TOOL_CALL_ID] == name[0] + "1"
    quick_span = spans["quick"]
    assert quick_span.end_time is not None and quick_span.end_time < ran["slow"][1]  # not ended with slow


def test_model_calls_at_once_are_each_counted_and_no_span_is_left_open(rig: Rig) -> None:
    """Two nodes of one step ask a model at once: an Endstate turn holds one call, so the second is
    reported when the first has ended, each with its own tokens."""

    def asking(text: str, tokens: int) -> Any:
        model = SlowChat(messages=iter([AIMessage(text, usage_metadata=usage(tokens, 1))]), seconds=0.02)

        async def node(state: Chat) -> dict[str, Any]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        return node

    graph = StateGraph(Chat)
    for name, tokens in (("a", 7), ("b", 9)):
        graph.add_node(name, asking(name, tokens))
        graph.add_edge(START, name)
        graph.add_edge(name, END)
    res = lg.run(
        graph.compile(name="pair"),
        {"messages": [("user", "x")]},
        hooks=rig.hooks,
        task_type=TASK,
        exact_counts=True,
    )
    assert (res.reason, res.turns, res.input_tokens) == (StopReason.SUCCESS, 2, 16)
    assert sorted((s.attributes or {})[n.GEN_AI_USAGE_INPUT_TOKENS] for s in chat_spans(rig)) == [7, 9]
    assert [(s.attributes or {}).get(n.ERROR_TYPE) for s in chat_spans(rig)] == [None, None]


def test_a_reply_is_counted_once_whether_written_as_given_copied_or_written_by_a_node_itself(
    rig: Rig,
) -> None:
    """A reply a chat model gave and the node wrote (as given, or copied into a new message) is the
    call's, counted once; a reply a node wrote with no chat model (a provider's SDK called directly)
    is counted from the state."""
    model = GenericFakeChatModel(messages=iter([says("hello")]))

    async def copying(state: Chat) -> dict[str, Any]:
        reply = await model.ainvoke(state["messages"])
        return {"messages": [AIMessage(reply.content, name="agent")]}

    copied = lg.run(graph_of([], model_node=copying), {"messages": [("user", "x")]}, exact_counts=True)
    assert (copied.turns, copied.input_tokens, copied.output) == (1, 12, "hello")

    replies = iter([calls("look", {"path": "a"}, "c1"), says("looked")])

    async def direct(state: Chat) -> dict[str, Any]:
        return {"messages": [next(replies)]}

    res = lg.run(
        graph_of([], model_node=direct),
        {"messages": [("user", "x")]},
        hooks=rig.hooks,
        task_type=TASK,
        tools=["look"],
        exact_counts=True,
    )
    assert (res.reason, res.turns, res.input_tokens, res.output) == (StopReason.SUCCESS, 2, 22, "looked")
    check_run_span(rig, "lg_agent", res, turns=2)
    assert tool_spans(rig) == ["execute_tool look"]


def test_the_callers_callbacks_and_config_are_kept_and_no_handler_is_inherited(rig: Rig) -> None:
    """Endstate's handler is LangChain's handler of each chat-model and tool call only: the nodes'
    config carries the caller's callbacks alone (LangSmith's, say), and each of those runs once."""
    seen: list[str] = []
    handlers: list[list[type]] = []
    tagged: list[Any] = []

    class Caller(BaseCallbackHandler):
        def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
            seen.append("chat")

        def on_tool_end(self, output: Any, **kwargs: Any) -> None:
            seen.append("tool")

    model = GenericFakeChatModel(messages=iter([calls("look", {"path": "a"}, "c1"), says("looked")]))

    async def node(state: Any, config: RunnableConfig) -> dict[str, Any]:
        handlers.append([type(h) for h in config["callbacks"].handlers])
        tagged.append(config["metadata"].get("tenant"))
        return {"messages": [await model.ainvoke(state["messages"])]}

    config = {"callbacks": [Caller()], "metadata": {"tenant": "acme"}}
    res = lg.run(
        graph_of([], model_node=node),
        {"messages": [("user", "x")]},
        config,
        hooks=rig.hooks,
        task_type=TASK,
        exact_counts=True,
    )
    assert (res.reason, res.turns, res.input_tokens, res.output) == (StopReason.SUCCESS, 2, 22, "looked")
    assert seen == ["chat", "tool", "chat"]
    assert handlers == [[Caller], [Caller]]
    assert tagged == ["acme", "acme"]
    assert len(chat_spans(rig)) == 2 and tool_spans(rig) == ["execute_tool look"]


def test_verifiers_check_the_final_state(rig: Rig) -> None:
    passes = predicate(lambda ctx: ctx.state["output"]["messages"][-1].content == "42", "the answer is 42")
    good = lg.run(
        graph_of([says("42")]),
        {"messages": [("user", "?")]},
        hooks=rig.hooks,
        task_type=TASK,
        verifiers=[passes],
        exact_counts=True,
    )
    bad = lg.run(
        graph_of([says("41")]),
        {"messages": [("user", "?")]},
        hooks=rig.hooks,
        task_type=TASK,
        verifiers=[passes],
        exact_counts=True,
    )
    assert (good.reason, good.verified, bad.reason, bad.verified) == (
        StopReason.SUCCESS,
        True,
        StopReason.SUCCESS,
        False,
    )
    assert rig.value("agent_verify_rejections_total", agent="lg_agent", task_type=TASK) == 1


def test_no_call_of_another_run_is_counted_in_this_one() -> None:
    """The handler lives in the run's context: a graph run beside it, or after it, is not counted."""

    async def both() -> tuple[Any, Any, Any]:
        one = lg.arun(graph_of([says("one")]), {"messages": [("user", "x")]}, exact_counts=True)
        two = lg.arun(graph_of([says("a"), says("b")], model_node=None), {"messages": [("user", "x")]})
        first, second = await asyncio.gather(one, two)
        after = await GenericFakeChatModel(messages=iter([says("outside")])).ainvoke("x")
        return first, second, after

    first, second, after = asyncio.run(both())
    assert (first.turns, first.input_tokens, second.turns, after.content) == (1, 12, 1, "outside")


@pytest.mark.parametrize("exact", [False, True])
def test_with_prices_each_call_is_priced_by_the_model_its_reply_names(rig: Rig, exact: bool) -> None:
    """LangChain prices nothing: without a price table the run's cost is unknown (never $0); with
    one, each reply is priced by its model (cache reads and writes at their own prices), and with
    `exact_counts` a router's call is priced too."""
    model = "claude-haiku-4-5"
    priced = {"model_name": model}
    cached = {**usage(100, 20), "input_token_details": {"cache_read": 60, "cache_creation": 30}}
    replies = [
        AIMessage(
            "",
            tool_calls=[{"name": "look", "args": {"path": "a"}, "id": "c1"}],
            usage_metadata=cached,
            response_metadata=priced,
        ),
        AIMessage("looked", usage_metadata=usage(50, 5), response_metadata=priced),
    ]
    table = PriceTable()
    res = lg.run(
        graph_of(replies),
        {"messages": [("user", "x")]},
        hooks=rig.hooks,
        task_type=TASK,
        prices=table,
        exact_counts=exact,
    )
    price = table.price(model)
    assert price is not None
    first = ModelReply([], 100, 20, cache_read_input_tokens=60, cache_creation_input_tokens=30)
    expected = price.cost_of(first) + price.cost(50, 5)
    assert res.cost_usd == pytest.approx(expected) and res.cost_usd < price.cost(150, 25)
    assert (res.usage.cache_read_tokens, res.usage.cache_write_tokens) == (60, 30)
    labels = {"agent": "lg_agent", "task_type": TASK, "stop_reason": "success"}
    assert rig.value("agent_cost_usd_total", **labels) == pytest.approx(expected)
    unpriced = lg.run(graph_of([says("hi")]), {"messages": [("user", "x")]}, exact_counts=exact)
    assert unpriced.cost_usd is None


def test_with_prices_a_routers_call_is_priced_too() -> None:
    table = PriceTable()
    res = lg.run(
        routed_graph(priced={"model_name": "claude-haiku-4-5"}),
        {"messages": [("user", "x")]},
        prices=table,
        exact_counts=True,
    )
    price = table.price("claude-haiku-4-5")
    assert price is not None and res.cost_usd == pytest.approx(price.cost(5, 1) + price.cost(12, 3))


def test_a_sync_node_calling_its_model_in_a_worker_thread_is_counted(rig: Rig) -> None:
    """LangGraph runs a sync node in a thread with the run's context: its chat model's callbacks
    reach the run's handler there too."""
    model = GenericFakeChatModel(messages=iter([calls("look", {"path": "a"}, "c1"), says("looked")]))

    def node(state: Chat) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    res = lg.run(
        graph_of([], model_node=node),
        {"messages": [("user", "x")]},
        hooks=rig.hooks,
        task_type=TASK,
        exact_counts=True,
    )
    assert (res.reason, res.turns, res.input_tokens) == (StopReason.SUCCESS, 2, 22)
    check_run_span(rig, "lg_agent", res, turns=2)
    assert tool_spans(rig) == ["execute_tool look"]


def test_an_approval_is_stored_and_resumed_through_the_runner_with_exact_counts(
    rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catalog agent given `exact_counts` in its options: its interrupt is stored waiting (SQLite
    store, SQLite checkpointer), approved in a new runner, and finished in the same run, each call
    of both segments counted once."""
    monkeypatch.setenv(ENV_CHECKPOINTS, str(tmp_path / "lg.db"))
    agents = Catalog()
    agents.register_foreign(
        "lg-exact",
        "langgraph",
        lg_graph,
        checkpointer=lg_checkpointer,
        task_type=TASK_TYPE,
        options={"exact_counts": True},
    )
    store = open_store(str(tmp_path / "runs.db"))
    try:
        res = asyncio.run(Runner(store, agents, hooks=rig.hooks).start("lg-exact", "clean up a"))
        assert res.reason is StopReason.NEED_HELP and res.suspension and res.suspension.pending
        record = store.get(res.run_id)
        assert record is not None and record.status is RunStatus.WAITING
        assert (record.pending and record.pending.name, record.turns, record.input_tokens) == (
            "delete",
            1,
            10,
        )
        done = asyncio.run(Runner(store, agents, hooks=rig.hooks).resume(res.run_id, approved=True))
        assert (done.reason, done.output, done.turns, done.input_tokens) == (
            StopReason.SUCCESS,
            "done: deleted",
            2,
            22,
        )
        assert rig.stops("lg-exact", TASK_TYPE, "success") == 1
    finally:
        store.close()
