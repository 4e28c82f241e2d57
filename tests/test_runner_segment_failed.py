"""A run whose segment raises past every catch (a bug in a framework's observer or in the runner's
own code) ends as `error`, saying why, instead of being left to recovery: a recovery would fail the
same way on every worker, for ever, and `recover` stopped at it, leaving the runs after it."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from agent import Agent
from agent.durable.runner import Catalog, Job, Runner
from agent.durable.store import RunStatus, RunStore
from agent.models.scripted import ScriptedModel, finish
from agent.result import RunResult, StopReason


def quick(state: dict[str, Any]) -> Agent:
    return Agent("quick", ScriptedModel([[finish("done", "ok")]]))


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
    assert "the framework's observer broke" in result.note and "endstate resume broken" in result.note
    record = store.get("broken")
    assert record is not None and record.status is RunStatus.FINISHED and record.stop_reason == "error"
    assert runner.held() == set()  # let go, not held for ever
    assert asyncio.run(Runner(store, catalog()).recover()) == []  # nothing left for recovery to retry


def test_recovery_goes_on_past_a_run_whose_segment_raises(store: RunStore) -> None:
    runner = Runner(store, catalog())
    jobs = [runner.begin("quick", "go", run_id=run_id) for run_id in ("first", "second")]
    results = asyncio.run(runner._drive_each([failing(jobs[0]), jobs[1]], "recovered"))
    assert [(r.run_id, r.reason) for r in results] == [("first", "error"), ("second", "success")]
