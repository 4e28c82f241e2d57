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
