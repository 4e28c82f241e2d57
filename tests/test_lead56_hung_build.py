"""A catalog entry whose `build` hangs (it waits on a server, a lock, a prompt) held every sweep for
ever (audit11): `endstate recover` with two runs of such an agent ran for over 10 minutes and
recovered neither, nor any run after them, and a service's sweep (recovery, deadlines, audits) would
stop the same way while `/healthz` said ok. In a sweep a build now has the prepare deadline: past it
the run ends `error` saying why (resumable once fixed), and the other runs recover."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from test_hard45_catalog_system_exit import _dead_pid

from agent import Agent, StopReason
from agent.durable.catalog import Catalog
from agent.durable.runner import Runner, machine
from agent.durable.store import Lease, NewRun, RunStatus, open_store
from agent.models.scripted import ScriptedModel, finish

released = threading.Event()


def _build(state: dict[str, Any]) -> Agent:
    if state.get("hangs"):
        released.wait(120)  # a build that waits on something that never comes (let go at the end)
    return Agent("x", ScriptedModel([[finish("done", "ok")]]))


@pytest.fixture(autouse=True)
def _let_go() -> Any:
    released.clear()
    yield
    released.set()


def test_recovery_ends_the_runs_whose_build_hangs_and_recovers_the_others(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "runs.db"))
    try:
        dead = Lease(f"{machine()}:{_dead_pid()}:w1", 30.0)
        for run_id, state in [("hung1", {"hangs": True}), ("good", {}), ("hung2", {"hangs": True})]:
            store.create(NewRun(run_id, "x", "task", "default", state), dead, store.now())
        catalog = Catalog()
        catalog.register("x", _build)

        recovered = asyncio.run(Runner(store, catalog, prepare_seconds=0.5).recover())

        assert [(r.run_id, r.reason) for r in recovered] == [("good", StopReason.SUCCESS)]
        for run_id in ("hung1", "hung2"):
            hung = store.get(run_id)
            assert hung is not None and hung.status is RunStatus.FINISHED
            assert (hung.stop_reason, hung.error_type) == (StopReason.ERROR, "agent_build_failed")
            assert "build did not finish within 0.5 s" in hung.note, hung.note
            assert "ENDSTATE_PREPARE_TIMEOUT" in hung.note and f"endstate resume {run_id}" in hung.note
    finally:
        store.close()


def test_a_start_waits_for_its_build_as_before(tmp_path: Path) -> None:
    """A start's build is the caller's own (it waits for it): not cut at the deadline."""
    store = open_store(str(tmp_path / "runs.db"))
    try:
        catalog = Catalog()
        catalog.register("x", _build)
        threading.Timer(1.0, released.set).start()
        runner = Runner(store, catalog, prepare_seconds=0.5)
        result = asyncio.run(runner.start("x", "task", state={"hangs": True}))
        assert result.reason is StopReason.SUCCESS
    finally:
        store.close()
