"""red55: two operators end one run over Temporal at once while no worker polls its queue.

Before: each `end` read the run, waited for the queue's pollers (3 s), and started an execution that ends
the run with `TERMINATE_EXISTING`: the second start terminated the first's ending execution, so both were
told the run was ended by them, and the first's note and name were lost. Now the open execution read is
the one terminated (pinned by its run id): the other `end` is refused (`NotClaimable`), nothing changed by
it, and the run ends once with the winner's note, counted once and cleaned once when a worker polls.

Against a real Temporal Server (the `temporal` dev server).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cleanup_counts import cleanups
from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer, serving, temporal_fixture
from test_temporal54_end import WAIT_S, catalog, gone, stops, waiting_run

from agent.durable.runner import ENDED_BY_OPERATOR
from agent.durable.store import NotClaimable
from agent.result import RunResult, StopReason
from telemetry import Telemetry

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


@pytest.mark.parametrize("cancelled", [False, True], ids=["waiting", "cancelled"])
def test_two_ends_at_once_with_no_worker_one_wins_the_other_is_refused(
    temporal: TemporalServer, tmp_path: Path, cancelled: bool
) -> None:
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry())

    async def scenario() -> None:
        runs, run_id = await waiting_run(temporal, tmp_path, cancelled)
        gone(runs)
        said = await asyncio.wait_for(
            asyncio.gather(
                runs.end(run_id, "first", by="ana"),
                runs.end(run_id, "second", by="bo"),
                return_exceptions=True,
            ),
            WAIT_S,
        )
        ended = [r for r in said if isinstance(r, RunResult)]
        refused = [r for r in said if isinstance(r, NotClaimable)]
        assert (len(ended), len(refused)) == (1, 1), said
        [won] = ended
        record = await runs.record(run_id)
        assert record is not None and record.note == won.note
        async with serving(temporal, catalog(), runs.task_queue, hooks=telemetry.hooks) as back:
            result = await asyncio.wait_for(back.result(run_id), WAIT_S)
        assert (result.reason, result.error_type, result.note) == (
            StopReason.ERROR,
            ENDED_BY_OPERATOR,
            won.note,
        )
        assert cleanups(tmp_path) == 1
        assert stops(telemetry) == 1

    try:
        asyncio.run(scenario())
    finally:
        telemetry.shutdown()
