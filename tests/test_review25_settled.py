"""review25: a tool call the loop's time budget cut is cancelled on its worker even when the segment is
cut again (a cancel's grace ran out) in the moment `answer_came` waits for the answer of the workflow
task: that second cut went up from inside the handler, past `handle.cancel()`, and the tool's activity
ran on to its end on a worker, its outcome never read.

The workflow's moment is stood in for by `workflow.wait_condition` raising the second cut, as the
segment's `task.cancel()` does when the budget's and the grace's timers fire in one workflow task."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent.temporal import _remote
from agent.temporal._remote import RunRef, settled


def test_a_call_cut_again_while_its_answer_is_awaited_is_still_cancelled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ref = RunRef("r1", "agent", "task", "default", {}, worker_time=True)

    async def cut_again(*args: Any, **kwargs: Any) -> None:
        ref.cut = True  # as the workflow's segment marks it before it cuts (`_segment`)
        raise asyncio.CancelledError  # the segment's cut, delivered to what the task awaits

    monkeypatch.setattr(_remote.workflow, "wait_condition", cut_again)
    monkeypatch.setattr(
        _remote.workflow, "time", lambda: 0.0
    )  # the workflow's clock, read as the call begins

    async def scenario() -> asyncio.Future[Any]:
        handle: asyncio.Future[Any] = asyncio.get_running_loop().create_future()  # the activity, running
        call = asyncio.create_task(settled(ref, handle))  # type: ignore[arg-type]
        await asyncio.sleep(0)
        call.cancel()  # the budget's cut
        with pytest.raises(asyncio.CancelledError):
            await call
        return handle

    handle = asyncio.run(scenario())
    assert handle.cancelled()  # was: still running, never cancelled
