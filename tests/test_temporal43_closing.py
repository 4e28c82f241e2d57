"""temporal43: a read or a reply that reaches an execution while it continues as new follows the run.

Temporal refuses an update to an execution that is closing (it has asked to continue as new and is
taking the updates it was sent first) with RESOURCE_EXHAUSTED "workflow operation can not be applied
because workflow is closing" (BusyWorkflow) until it has closed. The SDK retried that for some 14 s; under
load (CI at load 14) the execution took longer to close, and the client then took the refusal for an
execution that had ended otherwise: a `segment` read waited for the run's end (past its next question,
`test_probe40b_segment_read` timed out), an answer failed. A reply that reached an execution which had
already continued as new was told the run "is not waiting for a person (it ended as running)"; a cancel
that did was taken by Temporal and dropped (the run went on waiting). Now the refusal is raised at once, the
client waits for the execution to close, and reads, replies or cancels in the next.
Against a real Temporal Server, the refusal put in the way of the first call (the race is the server's).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, waiting
from temporalio.service import RPCError, RPCStatusCode
from test_probe39a_continue_as_new import LOW, executions
from test_probe40b_prompt_caps import Handle, sent
from test_probe40b_segment_read import catalog
from test_temporal import queue, temporal  # noqa: F401  (temporal: the server fixture)

from agent.result import RunResult, StopReason
from agent.temporal.client import TemporalRuns

pytestmark = pytest.mark.slow

CLOSING = RPCError(
    "workflow operation can not be applied because workflow is closing", RPCStatusCode.RESOURCE_EXHAUSTED, b""
)


def test_an_update_refused_as_closing_is_raised_at_once_not_retried() -> None:
    once, retried = Handle(CLOSING), Handle()
    with pytest.raises(RPCError, match="closing"):
        sent(once, retried)
    assert len(once.sent) == 1 and retried.sent == []


def refused_once(runs: TemporalRuns, failure: RPCError) -> list[str | None]:
    """Make the client's first update fail with `failure`, as Temporal would; the executions sent to."""
    execute, sent_to = runs.prompt.execute, list[str | None]()

    async def first_refused(handle: Any, update: str, args: list[Any]) -> Any:
        sent_to.append(handle.run_id)
        if len(sent_to) == 1:
            raise failure
        return await execute(handle, update, args)

    runs.prompt.execute = first_refused  # type: ignore[method-assign]
    return sent_to


def looked_up_first(runs: TemporalRuns, run_id: str, execution: str) -> None:
    """Make the client's first look-up of the run find `execution` (one that has continued as new since)."""
    handle, first = runs._handle, runs.client.get_workflow_handle(run_id, run_id=execution)
    calls = 0

    async def first_looked_up(run_id: str) -> Any:
        nonlocal calls
        calls += 1
        return first if calls == 1 else await handle(run_id)

    runs._handle = first_looked_up  # type: ignore[method-assign]


def test_a_read_refused_as_closing_reads_on_in_the_next_execution(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog(), queue(), continue_after_events=LOW) as runs:
            asked = await runs.start("asker", "Count")
            assert isinstance(asked, RunResult) and asked.note == "Go on?", asked.note
            chain = await executions(runs, asked.run_id)
            first = runs.client.get_workflow_handle(asked.run_id, run_id=chain[0])
            sent_to = refused_once(runs, CLOSING)
            read = await asyncio.wait_for(runs._segment(first, 1), 30)  # was: waited for the run's end
            assert (read.reason, read.note) == (StopReason.NEED_HELP, "Go on?")
            assert sent_to[0] == chain[0] and sent_to[-1] == chain[-1]
            done = await asyncio.wait_for(runs.answer(asked.run_id, "yes"), 60)
            assert done.reason is StopReason.NEED_HELP and done.note == "And on?"

    asyncio.run(scenario())


@pytest.mark.parametrize("moved", ["closing", "continued"])
def test_an_answer_that_reaches_an_execution_moving_on_is_taken_by_the_next(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
    moved: str,
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog(), queue(), continue_after_events=LOW) as runs:
            asked = await runs.start("asker", "Count")
            assert isinstance(asked, RunResult) and asked.note == "Go on?", asked.note
            await waiting(runs, asked.run_id)
            chain = await executions(runs, asked.run_id)
            if moved == "closing":
                refused_once(runs, CLOSING)
            else:  # the answer was sent to the execution the run was in when it was looked up
                looked_up_first(runs, asked.run_id, chain[0])
            answered = await asyncio.wait_for(runs.answer(asked.run_id, "yes"), 60)
            assert answered.reason is StopReason.NEED_HELP and answered.note == "And on?"

    asyncio.run(scenario())


def test_a_cancel_that_reaches_an_execution_that_continued_as_new_cancels_the_run(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog(), queue(), continue_after_events=LOW) as runs:
            asked = await runs.start("asker", "Count")
            assert isinstance(asked, RunResult) and asked.note == "Go on?", asked.note
            await waiting(runs, asked.run_id)
            looked_up_first(runs, asked.run_id, (await executions(runs, asked.run_id))[0])
            await runs.cancel(asked.run_id)  # was: taken by Temporal and dropped, the run waited on
            ended = await asyncio.wait_for(runs.result(asked.run_id), 60)
            assert ended.reason is StopReason.CANCELLED, ended.note

    asyncio.run(scenario())
