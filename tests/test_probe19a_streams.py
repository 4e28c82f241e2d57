"""A stream the caller breaks out of has its result on the next line (probe19a).

The README: read the stream, "then `stream.result`"; a caller that stops reading ends the run
`cancelled`. After `break`, `stream.result` was None: the run ended only once the event loop got
round to closing the abandoned generator, so `stream.result.reason` right after the loop raised
AttributeError. Now dropping the stream ends the run at once (the SDK's run cancelled, the graph's
stream closed as before).
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent as OAAgent
from agents import set_tracing_disabled
from agents.testing.model import ModelStep, ScriptedModel, function_call
from integrations_support import calls, graph_of, read, rigged, says

from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.result import StopReason

set_tracing_disabled(True)  # the SDK would export its own traces to OpenAI


def test_an_openai_agents_stream_broken_out_of_has_its_cancelled_result_at_once() -> None:
    never = asyncio.Event()

    async def hang(call: Any) -> Any:
        await never.wait()

    steps = [ModelStep(output=[function_call("read", {"path": "a"}, call_id="c1")]), ModelStep.respond(hang)]
    agent = OAAgent(name="streamer", model=ScriptedModel(steps), tools=[read])

    async def go() -> tuple[Any, Any]:
        stream = oa.run_streamed(agent, "x", hooks=rig.hooks, task_type="t")
        async for _ in stream.stream_events():
            break
        at_once = stream.result  # no await in between
        await asyncio.gather(stream.raw.run_loop_task, return_exceptions=True)  # cut off: it ends
        return at_once, stream.result

    with rigged() as rig:
        at_once, later = asyncio.run(go())
        assert at_once is not None and at_once.reason is StopReason.CANCELLED
        assert later is at_once
        assert rig.stops("streamer", "t", "cancelled") == 1
        assert rig.stops("streamer", "t", "success") == 0


def test_a_langgraph_stream_broken_out_of_has_its_cancelled_result_at_once() -> None:
    graph = graph_of([calls("look", {"path": "a"}, "c1"), says("done")])

    async def go() -> tuple[Any, Any]:
        stream = lg.astream(graph, {"messages": [("user", "hi")]}, hooks=rig.hooks, task_type="t")
        async for _ in stream:
            break
        at_once = stream.result
        await asyncio.sleep(0.05)  # the loop closes the abandoned generator (and the graph's stream)
        return at_once, stream.result

    with rigged() as rig:
        at_once, later = asyncio.run(go())
        assert at_once is not None and at_once.reason is StopReason.CANCELLED
        assert later is at_once
        assert rig.stops("lg_agent", "t", "cancelled") == 1


def test_a_stream_read_to_its_end_or_never_read_is_as_before() -> None:
    graph = graph_of([says("done")])

    async def go() -> tuple[Any, Any]:
        unread = lg.astream(graph_of([says("x")]), {"messages": []}, hooks=rig.hooks, task_type="t")
        aiter(unread)  # an iterator made and dropped, never read: no run started
        whole = lg.astream(graph, {"messages": [("user", "hi")]}, hooks=rig.hooks, task_type="t")
        async for _ in whole:
            pass
        return unread.result, whole.result

    with rigged() as rig:
        unread, whole = asyncio.run(go())
        assert unread is None
        assert whole is not None and whole.reason is StopReason.SUCCESS
        assert rig.value("agent_runs_started_total", agent="lg_agent", task_type="t") == 1
