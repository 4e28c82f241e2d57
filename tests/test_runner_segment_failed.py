"""A run whose segment raises past every catch (a bug in a framework's observer or in the runner's
own code) ends as `error`, saying why, instead of being left to recovery: a recovery would fail the
same way on every worker, for ever, and `recover` stopped at it, leaving the runs after it."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from prometheus_client import CollectorRegistry
from test_runner import _dead_pid

from agent import Agent
from agent.durable.runner import Catalog, Job, Runner
from agent.durable.store import RunStatus, RunStore
from agent.models.scripted import ScriptedModel, finish
from agent.result import RunResult, StopReason
from telemetry import MetricsHooks
from telemetry import names as n


def quick(state: dict[str, Any]) -> Agent:
    return Agent("quick", ScriptedModel([[finish("done", "ok")]]))


def _broken_build(state: dict[str, Any]) -> Agent:
    raise RuntimeError("the deploy broke the builder")


def catalog() -> Catalog:
    c = Catalog()
    c.register("quick", quick)
    return c


def failing(job: Job) -> Job:
    """`job` with a segment that raises what no catch of the loop turned into a stop."""

    async def segment(cancel: Any) -> RunResult:
        raise RuntimeError("the framework's observer broke")

    return dataclasses.replace(job, segment=segment)


def test_a_segment_that_raises_ends_its_run_as_error_saying_why(store: RunStore) -> None:
    runner = Runner(store, catalog())
    job = runner.begin("quick", "go", run_id="broken")
    result = asyncio.run(runner.drive(failing(job)))
    assert (result.reason, result.error_type) == (StopReason.ERROR, "RuntimeError")
    assert "the framework's observer broke" in result.note
    assert "start its task again" in result.note  # it saved no checkpoint: no resume (review26)
    record = store.get("broken")
    assert record is not None and record.status is RunStatus.FINISHED and record.stop_reason == "error"
    assert runner.held() == set()  # let go, not held for ever
    assert asyncio.run(Runner(store, catalog()).recover()) == []  # nothing left for recovery to retry


def test_recovery_goes_on_past_a_run_whose_segment_raises(store: RunStore) -> None:
    runner = Runner(store, catalog())
    jobs = [runner.begin("quick", "go", run_id=run_id) for run_id in ("first", "second")]
    results = asyncio.run(runner._drive_each([failing(jobs[0]), jobs[1]], "recovered"))
    assert [(r.run_id, r.reason) for r in results] == [("first", "error"), ("second", "success")]


# -- the error the runner decides is counted like any stop ------------------------------------------


def counted(metrics: MetricsHooks, metric: str, **labels: str) -> float:
    return sum(
        s.value
        for f in metrics.registry.collect()
        for s in f.samples
        if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items())
    )


def test_a_segment_that_raises_is_counted_as_an_error_stop(store: RunStore) -> None:
    metrics = MetricsHooks(CollectorRegistry())
    runner = Runner(store, catalog(), hooks=metrics)
    asyncio.run(runner.drive(failing(runner.begin("quick", "go", run_id="broken"))))
    assert counted(metrics, n.METRIC_STOPS + "_total", stop_reason="error") == 1
    assert counted(metrics, n.METRIC_RUNS_STARTED + "_total") == 0  # its segment counted its start
    assert counted(metrics, n.METRIC_RUNS_RESUMED + "_total") == 0


def test_runs_recovery_cannot_rebuild_are_counted_as_error_stops_and_a_waiting_ones_resume(
    store: RunStore,
) -> None:
    # Recovery ended them as error in the store only: agent_stops_total never saw the error, so
    # EndstateErrorStopShareHigh was blind to a deploy that broke the agent's builder.
    asking = Catalog()
    asking.register("quick", lambda state: Agent("quick", ScriptedModel([[finish("need_help", "Which?")]])))
    asked = asyncio.run(Runner(store, asking).start("quick", "go", run_id="asked"))
    assert asked.reason is StopReason.NEED_HELP
    here = Runner(store, catalog()).owner.split(":")[0]
    gone = Runner(store, catalog(), owner=f"{here}:{_dead_pid()}:gone")
    gone.begin("quick", "go", run_id="crashed")  # claimed, never driven: its worker died
    gone.claim("asked", answer="That one.")  # answered, then its worker died too
    metrics = MetricsHooks(CollectorRegistry())
    broken = Catalog()  # the deploy's catalog has the agent, but its builder fails (a catalog without
    broken.register("quick", _broken_build)  # the agent leaves its runs for another: test_probe24d_fleet)
    assert asyncio.run(Runner(store, broken, hooks=metrics).recover()) == []
    for run_id in ("crashed", "asked"):
        record = store.get(run_id)
        assert record is not None and record.stop_reason == "error", run_id
    assert counted(metrics, n.METRIC_STOPS + "_total", stop_reason="error") == 2
    assert counted(metrics, n.METRIC_RUNS_STARTED + "_total") == 0
    assert (
        counted(metrics, n.METRIC_RUNS_RESUMED + "_total", stop_reason="need_help") == 1
    )  # its need_help stop
    assert counted(metrics, n.METRIC_RUNS_RESUMED + "_total") == 1  # the crashed one never ended before
