"""A live worker whose run another worker took over (its lease ran out while it stalled, or while a
partition kept its heartbeats from the store) learns so at its next checkpoint (`LeaseLost`), and its
segment ends there: the run goes on in the worker that holds it. That segment is no end of the run;
it was counted as one: an `error` stop in `agent_stops_total` (and an `invoke_agent` span with status
ERROR) on top of the run's real end in the other worker, so each run a partition handed over
counted twice, once as an error (the error-share alert's numerator). Now the segment ends
`cancelled`, its span ends (no error), and no stop is counted for it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from opentelemetry.trace import StatusCode
from test_runner import Workers

from agent import Agent, StopReason, tool
from agent.durable.runner import Catalog, Runner
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult


def test_a_segment_whose_run_was_taken_over_is_not_counted_as_an_end(store_url: str, rig: Any) -> None:
    inside, go_on = threading.Event(), threading.Event()
    ran: list[int] = []

    @tool
    def step(n: int) -> str:
        """Take a step (step 2 stalls until released)."""
        ran.append(n)
        if n == 2 and not go_on.is_set():
            inside.set()
            assert go_on.wait(30), "never released"
        return f"did {n}"

    steps = [[call("step", n=1)], [call("step", n=2)], [call("step", n=3)], [finish("done", "ok")]]
    stepper = Catalog()
    stepper.register("stepper", lambda state: Agent(name="stepper", model=ScriptedModel(steps), tools=[step]))
    w = Workers(store_url, stepper)
    a_store, b_store = (w.new().store for _ in range(2))
    a = Runner(a_store, stepper, hooks=rig.hooks)
    b = Runner(b_store, stepper, hooks=rig.hooks)
    try:

        async def scenario() -> tuple[RunResult, RunResult]:
            job = a.begin("stepper", "step", run_id="taken")
            first = asyncio.create_task(a.drive(job))
            assert await asyncio.to_thread(inside.wait, 30)
            owner = b.store.get("taken").owner  # type: ignore[union-attr]
            held = b.store.take_over("taken", owner or "", b.lease(), time.time(), only_lapsed=False)
            resumed = b._resume_job(b._hold(held), release_to=None, recovering=True)
            go_on.set()
            return await first, await b.drive(resumed)

        lost, done = asyncio.run(scenario())
        assert done.reason is StopReason.SUCCESS and ran == [1, 2, 2, 3]
        assert lost.reason is StopReason.CANCELLED and lost.error_type is None
        assert "another worker took it over. The run goes on there" in lost.note, lost.note
        ends = {r: rig.stops("stepper", "default", r) for r in ("success", "error", "cancelled")}
        assert ends == {"success": 1, "error": 0, "cancelled": 0}, ends  # one run, one end
        segments = rig.run_spans()
        assert len(segments) == 2  # both segments' spans ended; neither is an error
        assert [s.status.status_code for s in segments] == [StatusCode.UNSET] * 2
        assert sorted(s.attributes["stop.reason"] for s in segments) == ["cancelled", "success"]
        record = a.store.get("taken")
        assert record is not None and (record.status, record.stop_reason) == ("finished", StopReason.SUCCESS)
    finally:
        w.close()


def test_a_segment_taken_over_in_its_last_turn_is_not_counted_as_an_end(store_url: str, rig: Any) -> None:
    """Taken over while its verifier ran (its last turn, after its last checkpoint that landed): A's
    end was decided, but its last checkpoint, and its record, were refused; B goes on from the turn
    before and ends the run. A's segment was counted as a success too: two ends of one run."""
    inside, go_on = threading.Event(), threading.Event()
    checks: list[int] = []

    def slow_check(ctx: Any) -> list[str]:
        checks.append(1)
        if len(checks) == 1:
            inside.set()
            assert go_on.wait(30), "never released"
        return []

    @tool
    def step(n: int) -> str:
        """Take a step."""
        return f"did {n}"

    steps = [[call("step", n=1)], [finish("done", "ok")]]
    checked = Catalog()
    checked.register(
        "checked",
        lambda state: Agent(name="checked", model=ScriptedModel(steps), tools=[step], verifiers=[slow_check]),
    )
    w = Workers(store_url, checked)
    a_store, b_store = (w.new().store for _ in range(2))
    a = Runner(a_store, checked, hooks=rig.hooks)
    b = Runner(b_store, checked, hooks=rig.hooks)
    try:

        async def scenario() -> tuple[RunResult, RunResult]:
            job = a.begin("checked", "check", run_id="late")
            first = asyncio.create_task(a.drive(job))
            assert await asyncio.to_thread(inside.wait, 30)
            owner = b.store.get("late").owner  # type: ignore[union-attr]
            held = b.store.take_over("late", owner or "", b.lease(), time.time(), only_lapsed=False)
            resumed = b._resume_job(b._hold(held), release_to=None, recovering=True)
            go_on.set()
            return await first, await b.drive(resumed)

        _, done = asyncio.run(scenario())
        assert done.reason is StopReason.SUCCESS and len(checks) == 2
        ends = {r: rig.stops("checked", "default", r) for r in ("success", "error", "cancelled")}
        assert ends == {"success": 1, "error": 0, "cancelled": 0}, ends  # one run, one end
        assert len(rig.run_spans()) == 2  # both segments' spans ended
        record = a.store.get("late")
        assert record is not None and (record.status, record.stop_reason) == ("finished", StopReason.SUCCESS)
    finally:
        w.close()


def test_a_segment_whose_end_landed_before_its_run_was_taken_over_is_counted_once(
    store_url: str, rig: Any
) -> None:
    """A `no_progress` stop's last checkpoint (its turn's tool result and the stop) lands on its own;
    B takes the run over before A's record. B finds the stop in the journal and records it without
    running or counting anything, so A's end is the run's: counted once, by A."""

    @tool
    def look() -> str:
        """Look around (nothing changes)."""
        return "the same"

    steps = [[call("look")]] * 5
    stuck = Catalog()
    stuck.register("stuck", lambda state: Agent(name="stuck", model=ScriptedModel(steps), tools=[look]))
    w = Workers(store_url, stuck)
    a_store, b_store = (w.new().store for _ in range(2))
    a = Runner(a_store, stuck, hooks=rig.hooks)
    b = Runner(b_store, stuck, hooks=rig.hooks)
    record = a_store.record
    behind: list[RunResult] = []

    def taken_then_record(run_id: str, *args: Any) -> Any:
        if not behind:  # B takes the run over between A's last checkpoint and A's record
            owner = b.store.get(run_id).owner  # type: ignore[union-attr]
            held = b.store.take_over(run_id, owner or "", b.lease(), time.time(), only_lapsed=False)
            behind.append(asyncio.run(b.drive(b._resume_job(b._hold(held), None, recovering=True))))
        return record(run_id, *args)

    a_store.record = taken_then_record  # type: ignore[method-assign]
    try:
        lost = asyncio.run(a.start("stuck", "look", run_id="stuck"))
        assert lost.reason is StopReason.NO_PROGRESS and [r.reason for r in behind] == [
            StopReason.NO_PROGRESS
        ]
        assert rig.stops("stuck", "default", "no_progress") == 1
        stored = a_store.get("stuck")
        assert stored is not None and stored.stop_reason is StopReason.NO_PROGRESS
    finally:
        w.close()


def test_one_runs_release_tells_only_its_own_ends() -> None:
    """A runner builds an agent once per task type, so one `HeldEnds` holds the ends of every run of
    it at once: one run's release (taken over) must not tell another run's end, nor as taken over."""
    from agent.durable._ends import HeldEnds
    from agent.hooks import RunInfo, RunObserver

    told: list[tuple[str, str]] = []

    class Recorder(RunObserver):
        def run_ended(self, result: RunResult) -> None:
            told.append(("ended", result.run_id))

        def run_taken_over(self, result: RunResult) -> None:
            told.append(("taken over", result.run_id))

    class Hooks:
        def run_started(self, info: RunInfo) -> RunObserver:
            return Recorder()

    held = HeldEnds(Hooks())
    for run_id in ("a", "b"):
        observer = held.run_started(
            RunInfo(run_id=run_id, agent="x", task_type="t", model="m", provider="p", task="go")
        )
        observer.run_ended(RunResult(run_id, "x", "t", StopReason.SUCCESS))
    assert told == []
    held.release("a", taken_over=True)
    assert told == [("taken over", "a")]
    held.release("b")
    assert told == [("taken over", "a"), ("ended", "b")]
