"""A workflow evicted from a worker's cache leaves its coroutine to the collector. Closed while
another workflow's event loop runs (CI under pytest-xdist saw it: the other workflow was still being
set up, and `workflow.info()` raised inside the closed run's `run_ended`, an "exception ignored"
that failed an unrelated test), the dropped run's observer must observe nothing: that history is
not its run's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio import workflow

from agent import RunInfo, RunObserver, RunResult
from agent.stops import StopReason
from agent.temporal import _remote


class Recording:
    """A worker's hooks: every run they were asked to observe."""

    def __init__(self) -> None:
        self.started: list[RunInfo] = []

    def run_started(self, info: RunInfo) -> RunObserver:
        self.started.append(info)
        return RunObserver()


class _History:
    def get_current_history_length(self) -> int:
        return 7


def _half_set_up() -> Any:
    raise AttributeError("'_WorkflowInstanceImpl' object has no attribute '_outbound'")


def test_a_dropped_workflows_observer_closed_in_another_workflows_loop_observes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(workflow, "register_random_seed_callback", lambda callback: None)
    monkeypatch.setattr(workflow, "patched", lambda patch_id: False)
    monkeypatch.setattr(workflow, "info", _History)
    monkeypatch.setattr(workflow.unsafe, "is_replaying", lambda: True)  # its start was replayed
    inner = Recording()

    async def in_its_workflow() -> RunObserver:  # the run's own workflow loop
        hooks = _remote.ReplaySafeHooks(inner)
        return hooks.run_started(RunInfo("run-1", "counter", "counting", "m", "p", "count"))

    observer = asyncio.run(in_its_workflow())
    monkeypatch.setattr(workflow, "in_workflow", lambda: True)  # another workflow's loop runs now,
    monkeypatch.setattr(workflow, "info", _half_set_up)  # one not yet set up
    monkeypatch.setattr(workflow.unsafe, "is_replaying", lambda: False)
    ended = RunResult("run-1", "counter", "count", StopReason.CANCELLED)

    async def in_another_workflow() -> None:
        observer.turn_started(3)
        observer.run_ended(ended)

    asyncio.run(in_another_workflow())
    assert inner.started == []  # nothing of the dropped run observed, and nothing raised
