"""drift: a redeployed catalog entry whose build hangs (on a config server the new release needs, a lock,
a prompt) when a waiting run is answered (SQLite and PostgreSQL).

The answer claims the run (it is `running`, held under this runner's lease) and then builds its agent.
Before, that build had no deadline: the call never returned, the service kept renewing the run's lease,
so every other answer was refused ("running") and `endstate end` refused it too (a live worker holds it)
until the process was restarted. Now the build of a claimed run has the deadline a sweep's has
(`$ENDSTATE_PREPARE_TIMEOUT`): past it the reply is refused (`BuildHangs`, an `AgentUnavailable`: HTTP
503, exit 2) and the run waits again, answerable, the reply kept as not taken.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_runner_agents import counter_state, make_counter

from agent import Agent, StopReason
from agent.durable.catalog import BuildHangs
from agent.durable.runner import Catalog, Runner
from agent.durable.store import RunStatus, open_store


def test_an_answer_whose_build_hangs_gives_the_run_back_at_the_deadline(
    store_url: str, tmp_path: Path
) -> None:
    old = Runner(open_store(store_url), catalog_of(make_counter))
    try:
        first = asyncio.run(old.start("counter", "count", state=counter_state(tmp_path, "ask"), run_id="g1"))
        assert first.reason is StopReason.NEED_HELP
    finally:
        old.store.close()

    released = threading.Event()

    def hanging(state: dict[str, Any]) -> Agent:
        released.wait(60)  # the config server never answers (released at the test's end)
        return make_counter(state)

    new = Runner(open_store(store_url), catalog_of(hanging), prepare_seconds=1.0)
    try:
        began = time.monotonic()
        with pytest.raises(BuildHangs, match="did not finish within 1 s"):
            asyncio.run(asyncio.wait_for(new.resume("g1", "3"), 20))
        assert time.monotonic() - began < 15
        after = new.store.get("g1")
        assert after is not None and after.status is RunStatus.WAITING and after.owner is None
        assert after.refused is not None and "did not finish within" in after.refused
    finally:
        released.set()
        new.store.close()

    fixed = Runner(open_store(store_url), catalog_of(make_counter))
    try:
        assert asyncio.run(fixed.resume("g1", "3")).reason is StopReason.SUCCESS
    finally:
        fixed.store.close()


def catalog_of(build: Any) -> Catalog:
    catalog = Catalog()
    catalog.register("counter", build)
    return catalog
