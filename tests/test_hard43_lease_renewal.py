"""A lease renewal the store failed (PostgreSQL restarting, its connection ended) is tried again
soon, not a third of a lease later: a worker that lost the store for less than its lease renews the
run before the lease runs out, and no other worker takes the run from it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, StopReason, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import StoreError, open_store
from agent.models.scripted import ScriptedModel, call, finish

LEASE = 9.0  # seconds: renewed every 3 s, and 0.3 s after a failed renewal


@tool
async def slow() -> str:
    """Work for a while (the lease is renewed meanwhile)."""
    await asyncio.sleep(4.5)  # past the first beat and its retry
    return "done"


def test_a_failed_renewal_is_tried_again_well_before_the_next_beat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = Catalog()
    catalog.register(
        "worker",
        lambda state: Agent(
            name="worker", model=ScriptedModel([[call("slow")], [finish("done", "ok")]]), tools=[slow]
        ),
    )
    store = open_store(str(tmp_path / "runs.db"))
    beats: list[float] = []
    renew = store.heartbeat

    def heartbeat(*args: Any, **kwargs: Any) -> Any:
        beats.append(time.monotonic())
        if len(beats) == 1:  # the store is restarting at the first beat
            raise StoreError(
                "the PostgreSQL run store failed: terminating connection due to administrator command"
            )
        return renew(*args, **kwargs)

    monkeypatch.setattr(store, "heartbeat", heartbeat)
    try:
        result = asyncio.run(Runner(store, catalog, lease_seconds=LEASE).start("worker", "work"))
    finally:
        store.close()
    assert result.reason is StopReason.SUCCESS
    assert len(beats) >= 2, beats
    again = beats[1] - beats[0]
    assert again < LEASE / 3 * 0.6, f"the failed renewal was tried again only {again:.2f} s later"
