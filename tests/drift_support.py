"""What the drift tests share: the counter agent's runner as a deploy builds it, and a run of it as the
deploy before started it (runs that wait while the deployment changes)."""

from __future__ import annotations

import asyncio
from typing import Any

from test_runner_agents import make_counter

from agent import RunResult
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store


def counter_runner(store_url: str, build: Any = make_counter) -> Runner:
    """A runner of the store whose catalog has `counter` as `build` makes it."""
    catalog = Catalog()
    catalog.register("counter", build)
    return Runner(open_store(store_url), catalog)


def started(store_url: str, state: dict[str, Any], run_id: str) -> RunResult:
    """The counter's run `run_id` as the deploy before started it; its runner's store closed after."""
    old = counter_runner(store_url)
    try:
        return asyncio.run(old.start("counter", "count", state=state, run_id=run_id))
    finally:
        old.store.close()
