"""Isolation on a Temporal worker: a run whose agent is slow to build holds up no other run.

A worker builds a run's agent from its catalog at the run's first activity there (and again once it
left the worker's cache). That build ran on the worker's event loop, which carries every run's
activities: a build that waits (on a server, a lock, a prompt) for one run's state held every other
run's model and tool calls, and their heartbeats, for as long (a catalog's prepare and cleanup
already ran in a thread for this reason).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from loop_ticks import loop_ticks
from temporalio.testing import ActivityEnvironment

from agent import Agent
from agent.durable.catalog import Catalog
from agent.models import ScriptedModel
from agent.temporal._activities import EndstateActivities

RUN = {"run_id": "r-iso", "agent": "slow", "task": "t", "task_type": "default", "state": {}}


def test_a_slow_build_on_a_worker_holds_up_no_other_runs_activities() -> None:
    released = threading.Event()

    def build(state: dict[str, Any]) -> Agent:
        released.wait(30)  # the build waits on something for this run
        return Agent("slow", ScriptedModel([]))

    catalog = Catalog()
    catalog.register("slow", build)
    acts = EndstateActivities(catalog)

    async def scenario() -> tuple[int, float]:
        async with loop_ticks() as ticks:  # what the worker's loop owes every other run's activities
            began = time.monotonic()
            threading.Timer(1.0, released.set).start()
            prepared = await ActivityEnvironment().run(acts.prepare, RUN)
            took = time.monotonic() - began
        assert prepared["plan"]
        return ticks.count, took

    try:
        ticks, took = asyncio.run(scenario())
        assert took >= 0.9
        assert ticks >= 30, f"other runs' activities got the worker's loop {ticks} times in {took:.1f} s"
    finally:
        released.set()
