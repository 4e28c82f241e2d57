"""A LangGraph run of the catalog that a shutdown cut off (or whose worker died) goes on from its
thread's checkpoint when it is recovered, as LangGraph resumes a thread: not given its task again on
top of that state. Before, recovery started the task again on the same thread (its run id): the
model then read the task twice and the cut tool call with no result, which a model API refuses
(OpenAI: "an assistant message with 'tool_calls' must be followed by tool messages"; Anthropic: "tool_use
ids were found without tool_result blocks"), so every recovered run ended `error`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from integrations_support import Chat, calls, says
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode

from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store
from agent.result import StopReason

TASK = "clean up a"


class Cleaner:
    """A graph whose model node checks the history as a model API does, and whose tool `slow` never
    returns while `held` (a long tool a shutdown cuts off)."""

    def __init__(self) -> None:
        self.saver = InMemorySaver()  # one process: the thread outlives the cut segment
        self.started = asyncio.Event()
        self.held = True
        self.ran: list[str] = []

    def build(self, saver: Any) -> Any:
        @lc_tool
        async def slow(path: str) -> str:
            """Clean a path slowly."""
            self.ran.append(path)
            self.started.set()
            if self.held:
                await asyncio.Event().wait()
            return f"cleaned {path}"

        async def model(state: Chat) -> dict[str, Any]:
            check_history(state["messages"])
            if isinstance(state["messages"][-1], ToolMessage):
                return {"messages": [says("done")]}
            return {"messages": [calls("slow", {"path": "a"}, "c1")]}

        graph = StateGraph(Chat)
        graph.add_node("model", model)
        graph.add_node("tools", ToolNode([slow]))
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", lambda s: "tools" if s["messages"][-1].tool_calls else END)
        graph.add_edge("tools", "model")
        return graph.compile(checkpointer=saver, name="cleaner")


def check_history(messages: list[AnyMessage]) -> None:
    """What a model API refuses: a tool call with no result before the next message, the task twice."""
    asked = [m.content for m in messages if isinstance(m, HumanMessage)]
    if asked.count(TASK) > 1:
        raise ValueError(f"the task was given twice: {asked}")
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            answered = {m.tool_call_id for m in messages[i + 1 :] if isinstance(m, ToolMessage)}
            if missing := {c["id"] for c in message.tool_calls} - answered:
                raise ValueError(f"tool calls with no result: {sorted(missing)}")


def test_a_langgraph_run_cut_off_by_a_shutdown_is_recovered_from_its_checkpoint(tmp_path: Path) -> None:
    cleaner = Cleaner()
    catalog = Catalog()
    catalog.register_foreign("cleaner", "langgraph", cleaner.build, checkpointer=cleaner.saver)
    store = open_store(tmp_path / "runs.db")

    async def cut_off() -> Any:
        runner = Runner(store, catalog)
        segment = asyncio.create_task(runner.drive(runner.begin("cleaner", TASK)))
        await asyncio.wait_for(cleaner.started.wait(), timeout=60)
        runner.stop_soon(grace=0.1)  # what SIGTERM does: the long tool is cut off after the grace
        return await asyncio.wait_for(segment, timeout=60)

    try:
        first = asyncio.run(cut_off())
        assert first.reason is StopReason.CANCELLED
        record = store.get(first.run_id)
        assert record is not None and (record.status, record.interrupted) == (RunStatus.CANCELLED, True)

        cleaner.held = False
        (recovered,) = asyncio.run(Runner(store, catalog).recover())
        assert (recovered.reason, recovered.error_type) == (StopReason.SUCCESS, None), recovered.note
        assert (recovered.run_id, recovered.output) == (first.run_id, "done")
        assert cleaner.ran == ["a", "a"]  # the cut call runs again (its outcome was unknown), once
    finally:
        store.close()


def test_a_thread_begun_outside_endstate_is_given_the_runs_task(tmp_path: Path) -> None:
    """Only a checkpoint of this run's own goes on: a run started on a thread its checkpointer holds
    from elsewhere (a conversation of the team's, its id the run id) gets its task, as before."""
    cleaner = Cleaner()
    cleaner.held = False
    catalog = Catalog()
    catalog.register_foreign("cleaner", "langgraph", cleaner.build, checkpointer=cleaner.saver)
    earlier = {"messages": [HumanMessage("hello"), AIMessage("hi")]}
    cleaner.build(cleaner.saver).update_state({"configurable": {"thread_id": "talk-1"}}, earlier)
    store = open_store(tmp_path / "runs.db")
    try:
        runner = Runner(store, catalog)
        result = asyncio.run(runner.drive(runner.begin("cleaner", TASK, run_id="talk-1")))
        assert (result.reason, result.output) == (StopReason.SUCCESS, "done"), result.note
        thread = cleaner.build(cleaner.saver).get_state({"configurable": {"thread_id": "talk-1"}})
        asked = [m.content for m in thread.values["messages"] if isinstance(m, HumanMessage)]
        assert asked == ["hello", TASK]  # the task was given, after the team's own conversation
    finally:
        store.close()
