"""Isolation between runs one after another in one task: a run's cancellation is its own.

A run whose task is cancelled ends `cancelled`: the cancellation is taken into its result, not
raised on, and left counted on the task (`Task.cancelling()`: its caller reads it, as `endstate demo`
does to stop on Ctrl-C). The task's later runs took that count for their own cancel: a tool's own
`CancelledError` (a library's cancelled future: the tool's failure, told to the model) ended them
`cancelled` though nobody cancelled them, and a worker task that goes on to its next job after a
cancelled one had every later run so exposed. A run counts only the cancels asked since it began.
"""

from __future__ import annotations

import asyncio
from typing import Any

from integrations_support import graph_of, says
from langchain_core.messages import AIMessage

from agent import Agent, Budget, StopReason, tool
from agent.integrations import langgraph as lg
from agent.models.scripted import ScriptedModel, Step, call, finish, reply


@tool
async def wait(x: str) -> str:
    """Wait a long time."""
    await asyncio.sleep(30)
    return "waited"


@tool
async def flaky(x: str) -> str:
    """Fail as a library's cancelled future makes a call fail."""
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    result: str = await future
    return result


def waits(turn: int) -> Step:
    return reply(call("wait", x="a")) if turn == 1 else reply(finish("done", "ok"))


def fails_once(turn: int) -> Step:
    return reply(call("flaky", x="b")) if turn == 1 else reply(finish("done", "ok"))


def cancelled_then(later: Any, first: Any = None) -> list[Any]:
    """In one task: a run (`first()`, else a native one) cancelled from outside, then `later()`; what
    each gave, and whether the task was still marked cancelling after (it is: its caller reads it)."""
    native = Agent("first", ScriptedModel(then=waits), tools=[wait], budget=Budget(max_turns=5))
    first = first or (lambda: native.arun("first"))

    async def worker(out: list[Any]) -> None:
        out.append(await first())
        out.append(await later())
        task = asyncio.current_task()
        out.append(task is not None and task.cancelling() > 0)

    async def main() -> list[Any]:
        out: list[Any] = []
        task = asyncio.create_task(worker(out))
        await asyncio.sleep(0.2)  # the first run waits in its tool
        task.cancel()
        await task
        return out

    return asyncio.run(main())


def test_the_next_run_in_a_task_whose_run_was_cancelled_is_not_cancelled() -> None:
    second = Agent("second", ScriptedModel(then=fails_once), tools=[flaky], budget=Budget(max_turns=5))
    first, then, cancelling = cancelled_then(lambda: second.arun("second"))
    assert first.reason is StopReason.CANCELLED
    assert then.reason is StopReason.SUCCESS, then.note
    assert cancelling  # left for the caller, as before


def test_a_foreign_run_after_a_cancelled_one_in_its_task_is_not_cancelled() -> None:
    async def failing_node(state: Any) -> dict[str, Any]:
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        await future  # the node's own failure: the graph fails with it, nobody cancelled the run
        return {"messages": [AIMessage("never")]}

    graph = graph_of([says("unused")], model_node=failing_node)
    alone = asyncio.run(lg.arun(graph, {"messages": [("user", "go")]}))
    first, then, cancelling = cancelled_then(lambda: lg.arun(graph, {"messages": [("user", "go")]}))
    assert first.reason is StopReason.CANCELLED
    assert alone.reason is then.reason is StopReason.ERROR  # the node's failure, not a cancel
    # (LangGraph wraps the node's own in its NodeCancelledError only while its task is not cancelling)
    assert {alone.error_type, then.error_type} <= {"NodeCancelledError", "CancelledError"}
    assert cancelling  # left for the caller, as before


def test_a_run_after_a_cancelled_foreign_run_in_its_task_is_not_cancelled() -> None:
    async def waiting_node(state: Any) -> dict[str, Any]:
        await asyncio.sleep(30)
        return {"messages": [AIMessage("never")]}

    graph = graph_of([says("unused")], model_node=waiting_node)
    second = Agent("second", ScriptedModel(then=fails_once), tools=[flaky], budget=Budget(max_turns=5))
    first, then, cancelling = cancelled_then(
        lambda: second.arun("second"), lambda: lg.arun(graph, {"messages": [("user", "go")]})
    )
    assert first.reason is StopReason.CANCELLED
    assert then.reason is StopReason.SUCCESS, then.note
    assert cancelling  # left for the caller, as before
