"""Isolation in the service: a waiting run whose agent is slow to build holds up no other run.

The inbox shows each pending approval's preview, which needs the run's agent built from the catalog.
That build ran on the event loop: a build that waits on a server, a lock or a prompt (for one run's
state) stopped every run of the service, its heartbeats and `/healthz` for as long, each time
someone opened the inbox (which refreshes itself).
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from loop_ticks import loop_ticks

from agent import Agent, StopReason, tool
from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel, call, finish
from agent.service import briefing
from agent.service.briefing import preview


def _catalog(released: threading.Event) -> Catalog:
    @tool(needs_approval=True, preview=lambda arguments: f"would push {arguments['branch']}")
    def push(branch: str) -> str:
        """Push the branch."""
        return "pushed"

    def build(state: dict[str, Any]) -> Agent:
        if state.get("slow"):  # this deployment's build of this run waits on something
            released.wait(30)
        steps = [[call("push", branch="main")], [finish("done", "ok")]]
        return Agent("x", ScriptedModel(steps), tools=[push])

    catalog = Catalog()
    catalog.register("x", build)
    return catalog


def test_an_agent_slow_to_build_for_a_preview_holds_up_no_other_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(briefing, "PREVIEW_SECONDS", 0.5)
    released = threading.Event()
    catalog = _catalog(released)
    runner = Runner(open_store(str(tmp_path / "runs.db")), catalog)
    try:
        asked = asyncio.run(runner.start("x", "push it"))
        assert asked.reason is StopReason.NEED_HELP, asked.note
        record = runner.store.get(asked.run_id)
        assert record is not None
        record.state["slow"] = True

        async def scenario() -> tuple[briefing.Preview, int, float]:
            async with loop_ticks() as ticks:
                began = time.monotonic()
                shown = await preview(record, catalog)
                took = time.monotonic() - began
            return shown, ticks.count, took

        threading.Timer(5, released.set).start()  # the build ends at last
        shown, ticks, took = asyncio.run(scenario())
        assert took < 3, f"the preview waited {took:.1f} s for the build"
        assert ticks >= 10, f"other runs' tasks got the loop {ticks} times in {took:.1f} s"
        assert shown.missing.startswith("No preview: the agent could not be built here within"), shown
    finally:
        released.set()
        runner.store.close()
