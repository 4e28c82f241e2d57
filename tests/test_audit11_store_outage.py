"""A run store that stops answering for a while mid-run (a PostgreSQL restart, a failover) never
ends the run for good: its checkpoints are tried again, and past those tries the segment is left to
recovery as a crash would be, whenever the store comes back. The caller gets the store's failure, as
when a record cannot be written.

Before, the segment ended `error` (StoreError) and recorded that end once the store answered again:
a store back within the record's retries (a few seconds after the checkpoint's) ended the run for
good, not resumable, while a store back later left it to recovery, which finished it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

import agent.durable._behind
from agent import Agent, StopReason, tool
from agent.durable.runner import Catalog, Runner, machine
from agent.durable.store import Lease, RunStatus, RunStore, StoreError
from agent.journal import Result
from agent.models.scripted import ScriptedModel, call, finish
from agent.snapshot import Checkpoint


class Outage:
    """A real store whose checkpoint writes fail from the `first`-th for `failing` attempts (the
    store is unreachable meanwhile); everything else, the segment's record included, goes through
    (the store is back by then)."""

    send_checkpoint = None  # written on the runner's writer thread (no sending ahead)

    def __init__(self, store: RunStore, first: int, failing: int) -> None:
        self.store, self.first, self.failing = store, first, failing
        self.writes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def checkpoint(self, run_id: str, checkpoint: Checkpoint, lease: Lease, now: float) -> None:
        self.writes += 1
        if self.first <= self.writes < self.first + self.failing:
            raise StoreError("cannot connect to the run store (a test double: the server restarts)")
        self.store.checkpoint(run_id, checkpoint, lease, now)


def catalog(ran: list[int]) -> Catalog:
    @tool
    def note(n: int) -> str:
        """Write down a number."""
        ran.append(n)
        return f"noted {n}"

    steps = [[call("note", n=1)], [call("note", n=2)], [call("note", n=3)], [finish("done", "noted")]]
    c = Catalog()
    c.register("noter", lambda state: Agent("noter", ScriptedModel(steps), tools=[note]))
    return c


def dead_owner() -> str:
    """A worker name of this machine whose process has ended: recovery takes its runs at once."""
    pid = subprocess.Popen([sys.executable, "-c", "pass"])
    pid.wait()
    return f"{machine()}:{pid.pid}:gone"


def test_a_store_down_past_the_checkpoint_retries_leaves_the_run_to_recovery_not_ended(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent.durable._behind, "RETRIES", (0.0,))  # one more try, at once
    ran: list[int] = []
    outage = Outage(store, first=2, failing=2)  # turn 2's checkpoint and its retry fail; then it is back
    first = Runner(outage, catalog(ran), owner=dead_owner())  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="cannot connect"):  # as when a record cannot be written
        asyncio.run(first.start("noter", "note numbers"))
    [record] = store.list_runs()
    assert record.status is RunStatus.RUNNING and record.stop_reason is None  # not ended for good
    assert first.held() == set()  # let go: its lease lapses

    recovered = asyncio.run(Runner(store, catalog(ran)).recover())
    assert [(r.run_id, r.reason) for r in recovered] == [(record.run_id, StopReason.SUCCESS)]
    saved = store.snapshot(record.run_id)
    assert saved is not None
    assert [e.text for e in saved.journal if isinstance(e, Result)] == ["noted 1", "noted 2", "noted 3"]
    assert ran == [1, 2, 2, 3]  # the call whose result was never saved runs again, as after a crash
