"""Temporal runs of every kind that the oldest release whose histories today's workflow still replays
(main at e50f6264, 2026-11-30, before any `workflow.patched`) recorded replay as they ran.

tests/fixtures/temporal_e50f6264_every_end_histories.json.gz holds the histories of runs of
tests/compat_agents.py made by that commit's worker on a dev server: `t-done` (tool calls, success),
`t-answered` (a question answered), `t-approved` and `t-denied` (a pending call), `t-expired` (the
deadline's default answer), `t-timeout` (help_timeout) and `t-cancelled` (cancelled while waiting).
A change to the workflow that is not behind `workflow.patched` and alters what such a run does
fails here. Runs started before e50f6264 do not replay: that commit dropped the timer an async
tool that returns before it waits ran under, and 0a6e37f4 before it planned the price as a dict (a
list before), neither behind a patch, and no marker in such a history tells it apart.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import EndstateRun

FIXTURE = Path(__file__).parent / "fixtures" / "temporal_e50f6264_every_end_histories.json.gz"
KINDS = ["t-done", "t-answered", "t-approved", "t-denied", "t-expired", "t-timeout", "t-cancelled"]


def history(kind: str) -> WorkflowHistory:
    return WorkflowHistory.from_json(kind, json.loads(gzip.decompress(FIXTURE.read_bytes()))[kind])


@pytest.mark.parametrize("kind", KINDS)
def test_a_history_the_oldest_replayable_release_recorded_replays_as_it_ran(kind: str) -> None:
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    replayed = asyncio.run(replayer.replay_workflow(history(kind), raise_on_replay_failure=False))
    assert replayed.replay_failure is None
