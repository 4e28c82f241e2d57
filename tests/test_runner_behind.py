"""Checkpoints written behind the loop (agent/durable/_behind.py), on SQLite and PostgreSQL.

The write of a checkpoint overlaps what the loop does next, but no tool starts
before every earlier checkpoint is durable, a write that fails is tried again and
loses nothing (past the retries the run is left to recovery, unrecorded), and the
segment's record waits for every write.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pg
import pytest

import agent.durable._behind
from agent import Agent, StopReason, tool
from agent.budget import Spent
from agent.checks import goal
from agent.durable._behind import Behind, writer_pool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import Lease, LeaseLost, NewRun, Outcome, RunRecord, RunStore, StoreError, open_store
from agent.journal import Note, Result, Stopped, Task
from agent.models.base import ModelReply, ModelRequest
from agent.models.scripted import ScriptedModel, call, finish
from agent.snapshot import Checkpoint, Snapshot, SnapshotKind

WAIT = 30.0  # seconds a gate waits at most: a hung test fails instead of hanging


class Watched:
    """A real store whose checkpoint writes (the `hold_from`-th on) wait at a gate until it opens;
    it logs what lands and when."""

    send_checkpoint = None  # written on the runner's writer thread, whatever the store (no sending ahead)

    def __init__(
        self,
        store: RunStore,
        events: list[str],
        fail_at: int | None = None,
        hold_from: int | None = None,
        fails: int = 1,
    ) -> None:
        self.store, self.events, self.fail_at, self.hold_from = store, events, fail_at, hold_from
        self.fails = fails  # writes that fail from the `fail_at`-th on (each new attempt is a write)
        self.gate = threading.Event()
        self.writes = 0
        self.in_flight = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def checkpoint(self, run_id: str, checkpoint: Checkpoint, lease: Lease, now: float) -> None:
        self.in_flight += 1
        try:
            self.writes += 1
            if self.hold_from is not None and self.writes >= self.hold_from:
                assert self.gate.wait(WAIT), "the gate was never opened"
            if self.fail_at is not None and self.fail_at <= self.writes < self.fail_at + self.fails:
                raise StoreError("the disk is full (a test double)")
            self.store.checkpoint(run_id, checkpoint, lease, now)
            self.events.append(f"written {checkpoint.first + len(checkpoint.entries)}")
        finally:
            self.in_flight -= 1

    def record(self, run_id: str, outcome: Outcome, lease: Lease, now: float) -> RunRecord:
        rest = outcome.rest  # the last entries, written with the result
        carried = f", written {rest.first + len(rest.entries)}" if rest is not None else ""
        self.events.append(f"record with {self.in_flight} writes in flight{carried}")
        return self.store.record(run_id, outcome, lease, now)


class Yielding(ScriptedModel):
    """A scripted model that waits on the event loop before each reply, as a call over the network
    does; before the replies in `slow` it waits until the writer thread has taken a write."""

    def __init__(self, steps: list[Any], events: list[str], watched: Watched, slow: tuple[int, ...]) -> None:
        super().__init__(steps)
        self.events, self.watched, self.slow = events, watched, slow

    async def complete(self, request: ModelRequest) -> ModelReply:
        await asyncio.sleep(0)
        if request.replies + 1 in self.slow:
            await until(lambda: self.watched.in_flight > 0)
        self.events.append(f"model {request.replies + 1}")
        return await super().complete(request)


async def until(done: Any) -> None:
    """Let the event loop run until `done()` (a test that never gets there fails, not hangs)."""
    for _ in range(100_000):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError("the run never got there")


async def idle() -> None:
    """Let the event loop run a while: whatever could go on, does."""
    for _ in range(50):
        await asyncio.sleep(0)


def runner_for(
    store: Watched,
    events: list[str],
    yielding: bool = True,
    turns: int = 3,
    slow: tuple[int, ...] = (),
    checks: tuple[Any, ...] = (),
) -> Runner:
    @tool
    async def note(n: int) -> str:
        """Write down a number (async: it starts the moment the loop calls it)."""
        events.append(f"tool {n}")
        return f"noted {n}"

    steps = [[call("note", n=i)] for i in range(1, turns)] + [[finish("done", "noted")]]
    catalog = Catalog()
    model = (lambda: Yielding(steps, events, store, slow)) if yielding else (lambda: ScriptedModel(steps))
    catalog.register("noter", lambda state: Agent("noter", model(), tools=[note], checks=checks))
    return Runner(store, catalog)  # type: ignore[arg-type]


def test_a_tool_does_not_start_before_the_previous_checkpoint_is_durable(store: Any) -> None:
    events: list[str] = []
    watched = Watched(store, events, hold_from=1)  # every write waits at the gate, on the writer thread
    runner = runner_for(watched, events, slow=(2,))

    async def scenario() -> Any:
        run = asyncio.create_task(runner.start("noter", "note numbers"))
        await until(lambda: "model 2" in events)  # turn 1's checkpoint was handed over when model 2 was asked
        await idle()  # the loop is free to go on: it waits at the barrier instead
        held = list(events)
        watched.gate.set()
        return held, await run

    held, result = asyncio.run(scenario())
    assert held == ["model 1", "tool 1", "model 2"]  # tool 2 waits for turn 1's checkpoint
    assert result.reason is StopReason.SUCCESS
    assert events.index("written 3") < events.index("tool 2")  # turn 1 saved (3 entries) before tool 2


def test_a_model_that_answers_at_once_has_each_checkpoint_written_by_the_loop_before_the_next_tool(
    store: Any,
) -> None:
    events: list[str] = []
    result = asyncio.run(runner_for(Watched(store, events), events, yielding=False).start("noter", "n"))
    assert result.reason is StopReason.SUCCESS
    assert events == [  # the last entries (the finishing reply, the stop) go with the record
        *("tool 1", "written 3", "tool 2", "written 5"),
        "record with 0 writes in flight, written 7",
    ]
    assert len(store.snapshot(result.run_id).journal) == 7


@pytest.fixture
def one_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint that fails is tried once more, at once (not over seconds)."""
    monkeypatch.setattr(agent.durable._behind, "RETRIES", (0.0,))


def test_a_background_write_that_fails_is_written_again_and_the_run_goes_on(store: Any) -> None:
    """The store fails on a checkpoint for a moment (a restarted database, a lock held past its
    timeout): the write is tried again before the next tool starts, and the run goes on, each
    entry in the journal once, no tool run twice."""
    events: list[str] = []
    watched = Watched(store, events, fail_at=2, fails=2)  # turn 2's checkpoint, and its first retry
    result = asyncio.run(runner_for(watched, events, turns=4).start("noter", "note numbers"))
    assert (result.reason, result.error_type) == (StopReason.SUCCESS, None)
    assert [e for e in events if e.startswith("tool")] == ["tool 1", "tool 2", "tool 3"]
    saved = store.snapshot(result.run_id)
    assert [e.text for e in saved.journal if isinstance(e, Result)] == ["noted 1", "noted 2", "noted 3"]
    assert isinstance(saved.journal[-1], Stopped) and saved.journal[-1].reason is StopReason.SUCCESS


def test_a_store_failing_past_the_retries_leaves_the_run_to_recovery_and_loses_nothing(
    store: Any, one_retry: None
) -> None:
    """The store fails on turn 2's checkpoint and on its retry: the segment stops there, unrecorded
    (a run ended for good once the store is back would be lost), and the store keeps the run as of
    its last checkpoint that landed, for recovery (`test_audit11_store_outage` recovers one)."""
    events: list[str] = []
    watched = Watched(
        store, events, fail_at=2, fails=2
    )  # turn 2's checkpoint fails on the writer thread, and again
    with pytest.raises(StoreError, match="the disk is full"):
        asyncio.run(runner_for(watched, events, turns=4).start("noter", "note numbers"))
    assert "tool 3" not in events  # nothing runs after a checkpoint that did not land
    assert not any(e.startswith("record") for e in events)  # left unrecorded
    [record] = store.list_runs()
    saved = store.snapshot(record.run_id)
    assert record.status == "running"
    assert [e.text for e in saved.journal if isinstance(e, Result)] == ["noted 1"]  # what landed
    assert not any(isinstance(e, Stopped) for e in saved.journal)


def test_a_last_checkpoint_that_failed_is_written_with_the_segments_record(
    store: Any, one_retry: None
) -> None:
    """The run has its reason when its last write fails, so it keeps it; the record carries the
    entries that write held (a tool's result, the stop), so the journal still ends with the stop.
    (A goal reached after turn 2 stops the run with that turn's result in its last checkpoint, which
    is written on its own: a last checkpoint without a tool's result goes with the record anyway.)"""
    events: list[str] = []
    watched = Watched(store, events, fail_at=2, fails=2)  # turn 1 lands; the last checkpoint (turn 2's) fails
    reached = goal(lambda ctx: "noted 2" in [c.result for c in ctx.calls], "noted two")
    result = asyncio.run(runner_for(watched, events, turns=3, checks=(reached,)).start("noter", "n"))
    assert result.reason is StopReason.SUCCESS and "written 3" in events and "written 6" not in events
    assert events[-1] == "record with 0 writes in flight, written 6"
    saved = store.snapshot(result.run_id)
    assert saved.kind is SnapshotKind.FINISHED
    assert [type(e).__name__ for e in saved.journal] == [
        "Task", "Reply", "Result", "Reply", "Result", "Stopped",
    ]  # fmt: skip
    assert saved.journal[-1].reason is StopReason.SUCCESS
    assert store.get(result.run_id).stop_reason is StopReason.SUCCESS


def test_a_last_checkpoint_without_a_tools_result_goes_with_the_record_in_one_write(store: Any) -> None:
    events: list[str] = []
    watched = Watched(store, events)
    result = asyncio.run(runner_for(watched, events, yielding=False).start("noter", "n"))
    assert result.reason is StopReason.SUCCESS
    assert watched.writes == 2 and events[-1] == "record with 0 writes in flight, written 7"
    saved = store.snapshot(result.run_id)
    assert [type(e).__name__ for e in saved.journal][-2:] == ["Reply", "Stopped"]
    assert saved.kind is SnapshotKind.FINISHED and store.get(result.run_id).turns == 3


def test_the_segments_record_waits_for_every_write_handed_over(store: Any) -> None:
    events: list[str] = []
    watched = Watched(store, events, hold_from=2)  # turn 2's checkpoint waits at the gate
    runner = runner_for(watched, events, slow=(3,))

    async def scenario() -> Any:
        run = asyncio.create_task(runner.start("noter", "note numbers"))
        await until(lambda: "model 3" in events)  # the last reply (finish): the run decides to stop
        await idle()
        held = [e for e in events if e.startswith("record")]
        watched.gate.set()
        return held, await run

    held, result = asyncio.run(scenario())
    assert held == []  # the run decided to stop, but its segment waits for the write
    assert result.reason is StopReason.SUCCESS
    assert events[-1] == "record with 0 writes in flight, written 7"  # the last entries go with it
    assert events.index("written 5") < len(events) - 1
    assert len(store.snapshot(result.run_id).journal) == 7


def test_a_checkpoint_sent_ahead_that_was_refused_goes_with_the_next_one(tmp_path: Path) -> None:
    """PostgreSQL sends each checkpoint at once and reads its outcome at the barrier: one refused
    (the lease was not held) raises there, and its entries are written with the next one."""
    store = open_store(pg.url_for("postgres", tmp_path))
    try:
        owner = Lease("worker-a", time.time() + 60)
        store.create(NewRun("r1", "noter", "note", "default", {}), owner, time.time())
        leases = [Lease("worker-b", time.time() + 60)]  # not the holder: refused
        behind = Behind(writer_pool(), store_write(store), lambda: leases[0], time.time, send_to(store))
        head = Snapshot("r1", "noter", "default", SnapshotKind.CHECKPOINT, 1, [], Spent())

        async def scenario() -> None:
            with pytest.raises(LeaseLost):
                await behind(Checkpoint(head, 0, [Task("note")]))
            leases[0] = owner
            await behind(Checkpoint(head, 1, [Note("go on")]))

        asyncio.run(scenario())
        saved = store.snapshot("r1")
        assert saved is not None and saved.journal == [Task("note"), Note("go on")]
    finally:
        store.close()


def store_write(store: Any) -> Any:
    return lambda checkpoint, lease, now: store.checkpoint("r1", checkpoint, lease, now)


def send_to(store: Any) -> Any:
    return lambda checkpoint, lease, now: store.send_checkpoint("r1", checkpoint, lease, now)


class SendRefused:
    """A PostgreSQL store whose first `fails` checkpoints cannot even be sent (the connection broke):
    `send_checkpoint` raises at once, on the loop's thread, instead of when its outcome is read;
    a checkpoint written again (`checkpoint`) fails as well while any of the `fails` are left."""

    def __init__(self, store: RunStore, fails: int) -> None:
        self.store, self.fails = store, fails

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def send_checkpoint(self, run_id: str, checkpoint: Checkpoint, lease: Lease, now: float) -> Any:
        self._refuse()
        return self.store.send_checkpoint(run_id, checkpoint, lease, now)

    def checkpoint(self, run_id: str, checkpoint: Checkpoint, lease: Lease, now: float) -> None:
        self._refuse()
        self.store.checkpoint(run_id, checkpoint, lease, now)

    def _refuse(self) -> None:
        if self.fails > 0:
            self.fails -= 1
            raise StoreError("the connection to the server broke (a test double)")


def test_a_checkpoint_that_could_not_be_sent_is_written_again_and_the_run_goes_on(
    tmp_path: Path, one_retry: None
) -> None:
    store = open_store(pg.url_for("postgres", tmp_path))
    try:
        events: list[str] = []
        runner = runner_for(SendRefused(store, 1), events, turns=3)  # type: ignore[arg-type]
        result = asyncio.run(runner.start("noter", "note numbers"))
        assert (result.reason, result.error_type) == (StopReason.SUCCESS, None)
        assert [e for e in events if e.startswith("tool")] == ["tool 1", "tool 2"]
        saved = store.snapshot(result.run_id)
        assert [e.text for e in saved.journal if isinstance(e, Result)] == ["noted 1", "noted 2"]
    finally:
        store.close()


@pytest.mark.parametrize("fails", [2, 3])
def test_a_checkpoint_that_could_not_be_sent_leaves_the_run_to_recovery(
    tmp_path: Path, fails: int, one_retry: None
) -> None:
    """The first checkpoint cannot be sent, nor written again: the segment stops, unrecorded, and its
    end is not sent either (whether or not the store answers by then): the run stays as it last
    landed, for recovery to continue."""
    store = open_store(pg.url_for("postgres", tmp_path))
    try:
        events: list[str] = []
        runner = runner_for(SendRefused(store, fails), events, turns=3)  # type: ignore[arg-type]
        with pytest.raises(StoreError, match="the connection to the server broke"):
            asyncio.run(runner.start("noter", "note numbers"))
        assert events == ["model 1", "tool 1", "model 2"]  # the write overlaps the next call, not a tool
        [record] = store.list_runs()
        saved = store.snapshot(record.run_id)
        assert saved is None or not any(isinstance(e, Result | Stopped) for e in saved.journal)
        assert record.status == "running"
    finally:
        store.close()


class FailsOnce:
    """A real store whose `n`-th call of `method` raises (the write did not happen), then succeeds."""

    def __init__(self, store: RunStore, method: str, n: int) -> None:
        self.store, self.method, self.n, self.calls = store, method, n, 0
        if method == "checkpoint":
            self.send_checkpoint = None  # written on the writer thread (PostgreSQL would send ahead)

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.store, name)
        if name != self.method:
            return real

        def once(*args: Any) -> Any:
            self.calls += 1
            if self.calls == self.n:
                raise StoreError(f"{name} failed once (a test double)")
            return real(*args)

        return once


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize(
    ("backend", "method"),
    [
        ("sqlite", "checkpoint"),
        ("sqlite", "record"),
        ("postgres", "checkpoint"),
        ("postgres", "send_checkpoint"),  # PostgreSQL's own way: sent ahead, read at the barrier
        ("postgres", "record"),
    ],
)
def test_a_write_that_fails_once_loses_no_entry_and_doubles_none(
    backend: str, method: str, n: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whichever write fails: the run ends with a reason, its record says the same, the stored journal
    ends with that stop, holds each entry once, and no call whose result was stored ran again."""
    import agent.durable.runner

    monkeypatch.setattr(agent.durable.runner, "RECORD_RETRIES", (0.0,))
    store = open_store(pg.url_for(backend, tmp_path))
    try:
        events: list[str] = []
        flaky = FailsOnce(store, method, n)
        runner = runner_for(flaky, events, yielding=False, turns=4)  # type: ignore[arg-type]
        result = asyncio.run(runner.start("noter", "n"))
        assert result.reason in (StopReason.SUCCESS, StopReason.ERROR)
        saved, record = store.snapshot(result.run_id), store.get(result.run_id)
        assert saved is not None and record is not None
        assert (record.status, record.stop_reason) == ("finished", result.reason)
        assert isinstance(saved.journal[-1], Stopped) and saved.journal[-1].reason is result.reason
        assert len([e for e in saved.journal if isinstance(e, Stopped)]) == 1
        results = [e for e in saved.journal if isinstance(e, Result)]
        assert len({r.call_id for r in results}) == len(results)
        tools = [e for e in events if e.startswith("tool")]
        assert tools == [f"tool {i}" for i in range(1, len(results) + 1)]  # each ran once, all stored
    finally:
        store.close()
