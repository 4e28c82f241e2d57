"""red53: over Temporal, `--agent` and `--task-type` are conditions of a visibility query
(`TemporalRuns.runs`). A value that reads as query syntax (OR, parentheses, comments, a lookalike
quote, another script) is a name there, never a wider condition: each lists its own runs alone, and
one written to widen the query lists none. Tried against a real Temporal Server and held; no test
said so (filters52's covered a name with a quote, left out of the query)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture

from agent import Agent, Budget
from agent.durable.catalog import Catalog
from agent.durable.store import RunStatus
from agent.models.scripted import ScriptedModel, finish
from agent.temporal import TemporalRuns

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
NAMES = ["plain", "plain OR EndstateAgent != ''", "a)--", "a\u2019b", "a\uff07b", "a`b;*", "日本 😀", "x%_"]
WIDER = [  # meant to widen the query to every run: each lists none
    "nobody' OR EndstateAgent != 'nobody",
    "nobody OR EndstateAgent != nobody",
    "nobody\u2019 OR EndstateAgent != \u2019nobody",
    "%",
    "*",
]


def catalog() -> Catalog:
    c = Catalog()
    for name in NAMES:
        model = ScriptedModel([[finish("give_up", "no")]])
        c.register(name, lambda state, n=name, m=model: Agent(name=n, model=m, budget=Budget(max_turns=3)))
    return c


async def listed(server: TemporalServer) -> dict[str, Any]:
    """Start a run of each of `NAMES` and list the runs by each name and each of `WIDER`."""
    async with serving(server, catalog(), f"test-{uuid.uuid4().hex[:8]}") as runs:
        started = {name: await runs.start(name, "t") for name in NAMES}
        await visible(runs, len(NAMES))
        ids = {name: getattr(r, "run_id", None) for name, r in started.items()}
        by_name = {name: [r.run_id for r in await runs.runs(agent=name)] for name in NAMES}
        wider = {value: [r.run_id for r in await runs.runs(agent=value)] for value in WIDER}
    return {"ids": ids, "by_name": by_name, "wider": wider}


async def visible(runs: TemporalRuns, count: int) -> None:
    """Until visibility lists `count` ended runs (it lags their ends a little; 60 s at most)."""
    for _ in range(600):
        if sum(r.status is RunStatus.FINISHED for r in await runs.runs()) == count:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("visibility never listed the runs as ended")


def test_a_filter_that_reads_as_query_syntax_never_widens_the_listing(temporal: TemporalServer) -> None:
    found = asyncio.run(listed(temporal))
    assert found["by_name"] == {name: [found["ids"][name]] for name in NAMES}
    assert found["wider"] == {value: [] for value in WIDER}
