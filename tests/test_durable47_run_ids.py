"""A run id that is not text is refused as such by the runner, on both stores alike, before the
store is asked (durable47): PostgreSQL answered `resume(12)` with its own operator error, SQLite
`resume(["x"])` with a parameter binding error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_runner_agents import catalog

from agent.durable.runner import Runner
from agent.durable.store import UnknownRun, open_store


@pytest.mark.parametrize("run_id", [12, b"abc", ["x"], None], ids=["int", "bytes", "list", "None"])
def test_a_run_id_that_is_not_text_is_an_unknown_run_saying_so(store_url: str, run_id: Any) -> None:
    runner = Runner(open_store(store_url), catalog())
    try:
        with pytest.raises(UnknownRun, match=f"a run id is text, not {type(run_id).__name__}"):
            asyncio.run(runner.resume(run_id, "2"))
        with pytest.raises(UnknownRun, match=f"a run id is text, not {type(run_id).__name__}"):
            runner.end(run_id)
    finally:
        runner.store.close()
