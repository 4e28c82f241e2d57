"""probe40b: a `segment` read that reaches an execution after it continued as new reads on in the next.

A read is sent to the execution it pins (the latest when it was looked up). When that execution had
continued as new by the time the read reached it, Temporal answered "workflow execution already completed",
and the client then waited for the run's end (the SDK's `result()` follows the executions): a read of the
segment after a reply waited past the run's next question for its end. It now follows the executions from
the one it reached to the segment's end, as a read that the execution itself tells to follow does
(`ContinuedAsNew`). Against a real Temporal Server; the read is placed behind the hand-overs by pinning it
to the run's first execution (in use, it is a race with the hand-over).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, waiting
from test_probe39a_continue_as_new import LOW, executions
from test_temporal import queue, temporal  # noqa: F401  (temporal: the server fixture)

from agent import Agent, Budget, tool
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult, StopReason

pytestmark = pytest.mark.slow

TURNS = 30  # before the first question: past LOW events several times


@tool
def count(n: int) -> str:
    """Count to n."""
    return f"counted {n}"


def build(state: dict[str, Any]) -> Agent:
    counts = [[call("count", n=i)] for i in range(1, TURNS + 4)]
    asks = [[finish("need_help", "Go on?")], *counts[TURNS : TURNS + 2], [finish("need_help", "And on?")]]
    return Agent(
        name="asker",
        model=ScriptedModel([*counts[:TURNS], *asks, counts[-1], [finish("done", "Counted.")]]),
        instructions="Count, asking on the way.",
        tools=[count],
        budget=Budget(max_turns=TURNS + 10, max_seconds=600),
        task_type="asking",
    )


def catalog() -> Catalog:
    c = Catalog()
    c.register("asker", build)
    return c


def test_a_read_that_reaches_an_execution_that_continued_as_new_ends_with_its_segment(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog(), queue(), continue_after_events=LOW) as runs:
            asked = await runs.start("asker", "Count")
            assert isinstance(asked, RunResult) and asked.note == "Go on?", asked.note
            chain = await executions(runs, asked.run_id)
            assert len(chain) >= 3
            first = runs.client.get_workflow_handle(asked.run_id, run_id=chain[0])
            read = asyncio.create_task(runs._segment(first, 2))  # the segment after the reply
            await waiting(runs, asked.run_id)
            answered = await asyncio.wait_for(runs.answer(asked.run_id, "yes"), 60)
            assert answered.reason is StopReason.NEED_HELP and answered.note == "And on?"
            second = await asyncio.wait_for(read, 60)  # was: waited for the run's end, past the question
            assert (second.reason, second.note, second.turns) == (
                StopReason.NEED_HELP,
                "And on?",
                answered.turns,
            )
            gone = await asyncio.wait_for(runs._segment(first, 1), 60)  # ended: the latest, as in one
            assert (gone.reason, gone.note) == (StopReason.NEED_HELP, "And on?")
            done = await asyncio.wait_for(runs.answer(asked.run_id, "yes"), 60)
            assert done.reason is StopReason.SUCCESS, done.note

    asyncio.run(scenario())
