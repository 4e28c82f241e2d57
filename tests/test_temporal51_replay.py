"""temporal51: `end` over Temporal needs no patch: histories recorded before it (main at 66a86cf, before
temporal51) of a run that waited for a person and was answered, whose deadline passed, or that was
cancelled while it waited, replay as they ran under this code. The replay would catch a change to what
such a run does: taken as ended by an operator, the answered run diverges.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agent.temporal import workflow as run_workflow
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import EndstateRun

FIXTURE = Path(__file__).parent / "fixtures" / "temporal_v14_before_operator_end_histories.json.gz"


def recorded_before() -> dict[str, WorkflowHistory]:
    """The runs of `asker` (test_temporal51_operator_end) recorded by the code before: `answered`,
    `expired` (its deadline passed: help_timeout), `cancelled` (while it waited)."""
    histories = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    return {kind: WorkflowHistory.from_json(kind, text) for kind, text in histories.items()}


def replay_failure(history: WorkflowHistory) -> Exception | None:
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


@pytest.mark.parametrize("kind", ["answered", "expired", "cancelled"])
def test_a_history_recorded_before_end_replays_as_it_ran(kind: str) -> None:
    assert replay_failure(recorded_before()[kind]) is None


def test_the_replay_catches_a_waiting_run_taken_as_ended(monkeypatch: pytest.MonkeyPatch) -> None:
    made = EndstateRun.__init__

    def ended_at_once(self: EndstateRun) -> None:
        made(self)
        self._end = "an end no history holds"

    monkeypatch.setattr(run_workflow.EndstateRun, "__init__", ended_at_once)
    assert "Nondeterminism" in str(replay_failure(recorded_before()["answered"]))
