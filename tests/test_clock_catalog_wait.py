"""clock: a Temporal worker whose catalog lacks a run's agent (a rolling deploy) reckons its
`--catalog-wait` by Temporal's clock, not by its own.

The wait since the call was first scheduled was this worker's wall clock minus Temporal's scheduled time:
a worker whose clock ran ten minutes ahead of the Temporal server's found a wait of two minutes spent at
the call's first attempt, refused it for good, and the run ended `error` though a worker that has the
agent came a moment later; one behind never found it spent. Now it is the attempt's start minus the
call's first schedule, both Temporal's. Against a real Temporal Server (the `temporal` dev server); the
lacking worker runs in this process with its wall clock put ten minutes ahead, the one that has the
agent in a process of its own."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, tzinfo
from pathlib import Path

import pytest
from temporal_server import TemporalServer, temporal_fixture
from test_temporal46_catalog_wait import connected, rolling_deploy

from agent.result import RunResult, StopReason
from agent.temporal import _activities

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
AHEAD = timedelta(minutes=10)  # how far the lacking worker's wall clock runs ahead of Temporal's


class Ahead(datetime):
    """The wall clock of the worker that lacks the agent: ten minutes ahead."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> Ahead:
        return super().now(tz) + AHEAD


def test_a_worker_whose_clock_runs_ahead_still_waits_for_one_that_has_the_agent(
    temporal: TemporalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_activities, "datetime", Ahead, raising=False)

    async def scenario() -> RunResult:
        runs = await connected(temporal)
        state = {"script": "success", "dir": str(tmp_path)}
        async with rolling_deploy(temporal, runs, state) as run_id:
            return await asyncio.wait_for(runs.result(run_id), 120)

    result = asyncio.run(scenario())
    assert (result.reason, result.error_type) == (StopReason.SUCCESS, None), result.note
