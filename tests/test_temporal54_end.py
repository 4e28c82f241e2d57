"""temporal54: an operator ends a run over Temporal when every worker of its queue is gone.

Before: `TemporalRuns.end` (`endstate end --temporal`) sent the run's workflow an update (a waiting run) or
started a new execution and waited for its result (a cancelled one): with no worker polling the queue, it
waited for ever and the run could not be ended, while over a store it can. Now, when no worker polls the
queue (Temporal's record of its pollers, read against the client's clock: here one set ten minutes ahead,
so the worker that just stopped is long gone to it), a new execution of the run's workflow is started to
end it (terminating the open one), its end in its memo: the run reads `error`, `ended_by_operator`, the
note saying who ended it and why, at once (`end`'s result, `/runs/{id}`, listings), and once a worker polls
again that execution ends it as `end` does: its stop counted, its cleanup run, the same end as its result.

Against a real Temporal Server (the `temporal` dev server).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from cleanup_counts import cleanups, count_cleanup
from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer, serving, temporal_fixture, waiting

from agent import Agent, Budget, HelpPolicy
from agent.durable.catalog import Catalog
from agent.durable.runner import ENDED_BY_OPERATOR
from agent.durable.store import NotClaimable, RunStatus
from agent.errors import ConfigError, EndstateError
from agent.models.scripted import ScriptedModel, finish
from agent.result import StopReason
from agent.temporal import TemporalRuns
from telemetry import Telemetry
from telemetry import names as n

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
WAIT_S = 60.0  # generous: a loaded CI machine
AHEAD_S = 600.0  # the client's clock, ahead: every poller of the queue is long gone to it
NOTE = "agent retired"


def asker(state: dict[str, Any]) -> Agent:
    """Asks a person, then finishes once answered."""
    script = [[finish("need_help", "Retire me?")], [finish("done", "answered")]]
    return Agent(
        "asker", ScriptedModel(script), budget=Budget(max_turns=3), help=HelpPolicy(wait_seconds=3600)
    )


def catalog() -> Catalog:
    c = Catalog()
    c.register("asker", asker, cleanup=count_cleanup)
    return c


def stops(telemetry: Telemetry) -> float:
    labels = {
        "agent": "asker",
        "task_type": "default",
        "stop_reason": "error",
        "stop_limit": n.NO_LIMIT,
        n.LABEL_STOP_CAUSE: "",
    }
    return telemetry.registry.get_sample_value(n.METRIC_STOPS + "_total", labels) or 0.0


async def taken_up_once(
    temporal: TemporalServer, runs: TemporalRuns, run_id: str, note: str, tmp_path: Path, telemetry: Telemetry
) -> None:
    """A worker polls the run's queue again: the execution that ends the run returns its end (`note`
    kept), its stop counted once and its cleanup run once."""
    async with serving(temporal, catalog(), runs.task_queue, hooks=telemetry.hooks) as back:
        result = await asyncio.wait_for(back.result(run_id), WAIT_S)
    assert (result.reason, result.error_type, result.note) == (StopReason.ERROR, ENDED_BY_OPERATOR, note)
    assert cleanups(tmp_path) == 1
    assert stops(telemetry) == 1


def gone(runs: TemporalRuns) -> None:
    """Every worker of the runs' queue is gone, to this client."""
    runs.clock = lambda: time.time() + AHEAD_S


async def waiting_run(
    server: TemporalServer, folder: Path, cancelled: bool = False
) -> tuple[TemporalRuns, str]:
    """A run of `asker` waiting for a person (or cancelled while it waited), its worker stopped since."""
    async with serving(server, catalog()) as runs:
        run_id = await runs.start("asker", "Work.", state={"dir": str(folder)}, wait=False)
        await waiting(runs, run_id)
        if cancelled:
            await runs.cancel(run_id)
            assert (await asyncio.wait_for(runs.result(run_id), WAIT_S)).reason is StopReason.CANCELLED
    return runs, run_id


@pytest.mark.parametrize("cancelled", [False, True], ids=["waiting", "cancelled"])
def test_a_run_no_worker_polls_for_is_ended_at_once_and_its_worker_later_counts_and_cleans_it(
    temporal: TemporalServer, tmp_path: Path, cancelled: bool
) -> None:
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry())

    async def scenario() -> None:
        runs, run_id = await waiting_run(temporal, tmp_path, cancelled)
        gone(runs)
        ended = await asyncio.wait_for(runs.end(run_id, NOTE), WAIT_S)  # was: waited for ever
        assert (ended.reason, ended.error_type) == (StopReason.ERROR, ENDED_BY_OPERATOR)
        assert NOTE in ended.note and "no worker polls" in ended.note
        assert f"by {runs.client.identity}" in ended.note  # who, when no name is given
        record = await runs.record(run_id)
        assert record is not None and record.status is RunStatus.FINISHED
        assert (record.stop_reason, record.error_type, record.note) == (
            StopReason.ERROR,
            ENDED_BY_OPERATOR,
            ended.note,
        )
        [listed] = [r for r in await runs.runs(limit=None) if r.run_id == run_id]
        assert (listed.status, listed.stop_reason, listed.error_type) == (
            RunStatus.FINISHED,
            StopReason.ERROR,
            ENDED_BY_OPERATOR,
        )
        assert await runs.pending() == []
        with pytest.raises(NotClaimable, match="has ended already"):
            await runs.end(run_id, "again")
        with pytest.raises(EndstateError, match="ended as error"):
            await runs.resume(run_id)
        with pytest.raises(NotClaimable, match="not waiting for a person"):
            await runs.answer(run_id, "too late")
        assert cleanups(tmp_path) == 0  # no worker ran it yet
        await taken_up_once(temporal, runs, run_id, ended.note, tmp_path, telemetry)

    try:
        asyncio.run(scenario())
    finally:
        telemetry.shutdown()


def test_a_run_started_on_a_queue_no_worker_ever_polled_is_ended(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        runs = await TemporalRuns.connect(temporal.address, task_queue=f"t54-none-{tmp_path.name[-8:]}")
        run_id = await runs.start("asker", "Work.", state={"dir": str(tmp_path)}, wait=False)
        ended = await asyncio.wait_for(runs.end(run_id, "never deployed", by="ana"), WAIT_S)  # the real clock
        assert (ended.reason, ended.error_type) == (StopReason.ERROR, ENDED_BY_OPERATOR)
        assert "never deployed (by ana;" in ended.note
        record = await runs.record(run_id)
        assert record is not None and record.status is RunStatus.FINISHED

    asyncio.run(scenario())


def test_a_hostile_note_or_name_is_refused_or_kept_on_one_line(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        runs, run_id = await waiting_run(temporal, tmp_path)
        gone(runs)
        with pytest.raises(ConfigError):
            await runs.end(run_id, NOTE, by="ana\nroot")
        with pytest.raises(ConfigError):
            await runs.end(run_id, "x" * 3_000_000)
        record = await runs.record(run_id)
        assert record is not None and record.status is RunStatus.WAITING  # nothing changed
        ended = await asyncio.wait_for(runs.end(run_id, "line one\nline two\r\x1b[31m"), WAIT_S)
        assert "\n" not in ended.note and "\r" not in ended.note
        for hostile in ("", "../x", "a" * 300, "\ud800", "x' OR '1'='1"):
            with pytest.raises(EndstateError):
                await runs.end(hostile, NOTE)

    asyncio.run(scenario())
