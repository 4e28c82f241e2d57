"""red55: two operators end one run over Temporal at once while no worker polls its queue.

Before: each `end` read the run, waited for the queue's pollers (3 s), and started an execution that ends
the run with `TERMINATE_EXISTING`: the second start terminated the first's ending execution, so both were
told the run was ended by them, and the first's note and name were lost. Now the open execution read is
the one terminated (pinned by its run id): the other `end` is refused (`NotClaimable`), nothing changed by
it, and the run ends once with the winner's note, counted once and cleaned once when a worker polls. So
too when a worker came back between `end`'s read of the pollers and its start and finished the run: `end`
is refused, where it ended the finished run a second time (its stop counted, its cleanup run again).

Against a real Temporal Server (the `temporal` dev server).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cleanup_counts import cleanups
from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer, serving, temporal_fixture
from test_temporal54_end import WAIT_S, catalog, gone, stops, taken_up_once, waiting_run

from agent.durable.runner import ENDED_BY_OPERATOR
from agent.durable.store import NotClaimable
from agent.result import RunResult, StopReason
from agent.temporal import client
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
        await taken_up_once(temporal, runs, run_id, won.note, tmp_path, telemetry)

    try:
        asyncio.run(scenario())
    finally:
        telemetry.shutdown()


def test_a_cancel_of_a_run_ended_with_no_worker_leaves_its_end_counted_and_cleaned_once(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry())

    async def scenario() -> None:
        runs, run_id = await waiting_run(temporal, tmp_path)
        gone(runs)
        ended = await asyncio.wait_for(runs.end(run_id, "retired", by="ana"), WAIT_S)
        await runs.cancel(run_id)  # its ending execution, open until a worker takes it
        record = await runs.record(run_id)
        assert record is not None and (record.stop_reason, record.note) == (StopReason.ERROR, ended.note)
        await taken_up_once(temporal, runs, run_id, ended.note, tmp_path, telemetry)
        record = await runs.record(run_id)
        assert record is not None and (record.stop_reason, record.error_type) == (
            StopReason.ERROR,
            ENDED_BY_OPERATOR,
        )

    try:
        asyncio.run(scenario())
    finally:
        telemetry.shutdown()


def test_a_run_a_worker_ends_between_the_poller_check_and_the_end_is_not_ended_again(
    temporal: TemporalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker comes back just after `end` read that none polls, and takes the answer sent meanwhile: the
    # run finishes. Before, `end` started its ending execution all the same: the run, ended `success`, was
    # ended again as `error`, its cleanup run and its stop counted a second time once a worker polled.
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry())

    async def scenario() -> None:
        runs, run_id = await waiting_run(temporal, tmp_path)

        read = client.unpolled

        async def none_then_back(*_: object) -> str:
            monkeypatch.setattr(client, "unpolled", read)  # the calls of the worker that comes back
            async with serving(temporal, catalog(), runs.task_queue, hooks=telemetry.hooks) as back:
                await back.answer(run_id, "yes")
                assert (await asyncio.wait_for(back.result(run_id), WAIT_S)).reason is StopReason.SUCCESS
            return "no worker polls task queue (a moment ago)"

        monkeypatch.setattr(client, "unpolled", none_then_back)
        with pytest.raises(NotClaimable):
            await asyncio.wait_for(runs.end(run_id, "retired", by="ana"), WAIT_S)
        async with serving(temporal, catalog(), runs.task_queue, hooks=telemetry.hooks) as back:
            result = await asyncio.wait_for(back.result(run_id), WAIT_S)
        assert result.reason is StopReason.SUCCESS, result
        assert cleanups(tmp_path) == 1
        assert stops(telemetry) == 0  # no `error` stop counted

    try:
        asyncio.run(scenario())
    finally:
        telemetry.shutdown()
