"""Isolation between the runs one runner drives: one segment's tail never hides another's task.

A run's segment is in flight from its spawn until its task ends. A run answered the moment its
last segment was recorded (a person, or a bot, quick to approve) is claimed and spawned again while
that segment's task is still finishing (its observers told, its audit planned): both tasks are the
runner's at once, under one run id.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path
from typing import Any

from loop_ticks import loop_ticks
from test_runner_agents import catalog, counter_state, deployed

from agent import Agent, StopReason
from agent.audit import SuccessAudit
from agent.durable.catalog import Catalog
from agent.durable.runner import Runner, worker_gone
from agent.durable.store import Outcome, RunStatus, RunStore, open_store
from agent.hooks import RunInfo, RunObserver
from agent.models.scripted import ScriptedModel, finish
from agent.result import RunResult


class QuickApprover:
    """Runner hooks that approve a run's pending call as soon as its segment's end is told (which is
    once its record is written), and spawn the resumed segment on the same runner."""

    def __init__(self) -> None:
        self.runner: Runner | None = None
        self.resumed: list[asyncio.Task[RunResult | None]] = []

    def run_started(self, info: RunInfo) -> RunObserver:
        approver = self

        class Approves(RunObserver):
            def run_ended(self, result: RunResult) -> None:
                if result.reason is StopReason.NEED_HELP and approver.runner is not None:
                    runner = approver.runner
                    approver.resumed.append(runner.spawn(runner.claim(result.run_id, approved=True)))

        return Approves()


def test_a_run_resumed_as_its_segment_ends_is_in_flight_and_a_shutdown_waits_for_it(
    store: RunStore, tmp_path: Path
) -> None:
    folder = tmp_path / "d"
    hooks = QuickApprover()
    runner = hooks.runner = Runner(store, catalog(), hooks=hooks)

    async def scenario() -> tuple[int, bool]:
        first = runner.spawn(runner.begin("counter", "deploy", state=counter_state(folder, "deploy")))
        (folder / "deploy.flag").write_text("block")  # the approved deploy holds the resumed segment
        await first  # asked, recorded, and approved at once: the resumed segment was spawned
        assert len(hooks.resumed) == 1
        await asyncio.sleep(0)  # the first task's done callbacks have run
        in_flight = runner.in_flight
        stopping = asyncio.create_task(runner.shutdown(grace=10))
        while not runner.shutting_down.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0)
        await asyncio.sleep(0.2)
        (folder / "deploy.flag").unlink()  # the deploy ends; the run stops at its next turn
        await stopping
        return in_flight, hooks.resumed[0].done()

    assert asyncio.run(scenario()) == (1, True)
    record = store.get(hooks.resumed[0].get_name().removeprefix("run-"))
    assert record is not None and record.status is RunStatus.CANCELLED and deployed(folder) == ["v2"]


def test_a_run_claimed_as_its_last_segment_is_recorded_keeps_its_lease_renewed(
    store: RunStore, tmp_path: Path
) -> None:
    """The answer's claim lands between the segment's record (which gives the run back, waiting) and
    the runner letting go of that segment's lease: the resumed segment's lease must still be renewed,
    or another worker takes the live run over once it runs out."""
    folder = tmp_path / "d"
    runner = Runner(store, catalog(), lease_seconds=1.5)
    resumed: list[asyncio.Task[RunResult | None]] = []
    record = store.record

    def answered_at_once(run_id: str, outcome: Outcome, *args: Any, **kwargs: Any) -> None:
        record(run_id, outcome, *args, **kwargs)
        if outcome.status is RunStatus.WAITING and not resumed:  # a person approves just then
            job = runner.claim(run_id, approved=True)
            loop.call_soon_threadsafe(lambda: resumed.append(runner.spawn(job)))

    store.record = answered_at_once  # type: ignore[method-assign]

    async def scenario() -> tuple[bool, bool]:
        nonlocal loop
        loop = asyncio.get_running_loop()
        (folder / "deploy.flag").parent.mkdir(parents=True)
        (folder / "deploy.flag").write_text("block")  # the approved deploy holds the resumed segment
        first = runner.spawn(runner.begin("counter", "deploy", state=counter_state(folder, "deploy")))
        await first
        while not resumed:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        run_id = first.get_name().removeprefix("run-")
        held = run_id in runner.held()
        await asyncio.sleep(2.5)  # past the lease: renewed by now, if held
        current = store.get(run_id)
        lapsed = current is None or worker_gone(current, store.now())
        (folder / "deploy.flag").unlink()
        await resumed[0]
        return held, lapsed

    loop: asyncio.AbstractEventLoop
    assert asyncio.run(scenario()) == (True, False)
    assert deployed(folder) == ["v2"]


def test_a_finished_runs_slow_cleanup_holds_up_no_other_run(tmp_path: Path) -> None:
    """A catalog's `cleanup` (removing a run's work folder: a checkout of gigabytes, a network
    share) ran on the event loop as each run ended: every other run of the runner, and its lease
    heartbeats, stopped for as long (as a Temporal worker's never did: it runs cleanup in a thread)."""
    released = threading.Event()
    cleaned: list[str] = []

    def cleanup(state: dict[str, Any]) -> None:
        released.wait(30)
        cleaned.append(state["name"])

    def build(state: dict[str, Any]) -> Agent:
        return Agent("tidy", ScriptedModel([[finish("done", "ok")]]), tools=[])

    tidy = Catalog()
    tidy.register("tidy", build, cleanup=cleanup)
    runner = Runner(open_store(str(tmp_path / "runs.db")), tidy)

    async def scenario() -> tuple[int, bool]:
        async with loop_ticks() as ticks:  # what the loop owes every other run meanwhile
            ended = runner.spawn(runner.begin("tidy", "tidy up", state={"name": "a"}))
            await asyncio.sleep(1.0)
            seen, finished = ticks.count, ended.done()
            released.set()
            result = await ended
        assert result is not None and result.reason is StopReason.SUCCESS
        return seen, finished

    try:
        threading.Timer(5, released.set).start()  # the cleanup ends at last
        ticks, finished = asyncio.run(scenario())
        assert ticks >= 20, f"other runs' tasks got the loop {ticks} times in 1 s"
        assert not finished and cleaned == ["a"]  # the run's task still waits for its cleanup
    finally:
        released.set()
        runner.store.close()


def test_an_audit_whose_agent_hangs_to_build_holds_up_no_other_runs_record(tmp_path: Path) -> None:
    """A due success audit builds the finished run's agent to get its check. That build (given the
    prepare deadline) ran on the runner's writer thread, which records every run's checkpoints and
    ends: a build that hung held every other run's end unrecorded until its deadline."""
    hangs = threading.Event()

    def audited(state: dict[str, Any]) -> Agent:
        if hangs.is_set():  # this deployment's build now waits on something
            time.sleep(30)
        model = ScriptedModel([[finish("done", "ok")]])
        return Agent("audited", model, audit=SuccessAudit(lambda ctx: [], share=1.0, after=0.0))

    def plain(state: dict[str, Any]) -> Agent:
        return Agent("plain", ScriptedModel([[finish("done", "ok")]]))

    both = Catalog()
    both.register("audited", audited)
    both.register("plain", plain)
    runner = Runner(open_store(str(tmp_path / "runs.db")), both, prepare_seconds=3)

    async def scenario() -> float:
        first = await runner.start("audited", "do it")
        assert first.reason is StopReason.SUCCESS
        hangs.set()
        auditing = asyncio.create_task(runner.audit_due())
        await asyncio.sleep(0.2)  # the audit is building its agent
        began = time.monotonic()
        other = await runner.start("plain", "do it too")
        took = time.monotonic() - began
        assert other.reason is StopReason.SUCCESS
        await auditing
        return took

    try:
        took = asyncio.run(scenario())
        assert took < 1.5, f"another run's end waited {took:.1f} s for the audit's build"
    finally:
        runner.store.close()


def test_a_catalog_cancel_that_exits_fails_its_run_alone(tmp_path: Path) -> None:
    """A catalog entry's `cancel(state)` (the run's own cancel signal) that raises `SystemExit` (a config
    read with argparse) rose out of the run's task, and asyncio let it out of the event loop: every
    other run of the service stopped with it. It is the entry's failure, as its build's or prepare's."""

    def cancel(state: dict[str, Any]) -> threading.Event:
        if state.get("bad"):
            sys.exit(2)
        return threading.Event()

    def build(state: dict[str, Any]) -> Agent:
        return Agent("tidy", ScriptedModel([[finish("done", "ok")]]))

    tidy = Catalog()
    tidy.register("tidy", build, cancel=cancel)
    runner = Runner(open_store(str(tmp_path / "runs.db")), tidy)

    async def scenario() -> tuple[RunResult | None, RunResult | None]:
        bad = runner.spawn(runner.begin("tidy", "tidy up", state={"bad": True}))
        good = runner.spawn(runner.begin("tidy", "tidy up too"))
        return await bad, await good

    try:
        bad, good = asyncio.run(scenario())
        assert bad is not None and (bad.reason, bad.error_type) == (StopReason.ERROR, "SystemExit")
        assert good is not None and good.reason is StopReason.SUCCESS
    finally:
        runner.store.close()
