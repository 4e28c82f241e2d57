"""A model with no known price is warned of once a process, not once a run.

A runner (and the HTTP service) builds the agent, and so its price table, for every run it starts or
resumes: a warning given once per table was one line a run, as many as the fleet's runs.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from agent import Agent, Budget, NoHooks
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel, finish
from agent.prices import PriceTable


def unpriced_agent(model: str) -> Agent:
    return Agent("unpriced", ScriptedModel([[finish("done", "ok")]], name=model), budget=Budget(max_turns=3))


def warnings_of(caplog: pytest.LogCaptureFixture, model: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if f"price for model {model!r}" in r.getMessage()]


def test_runs_of_a_catalog_warn_of_an_unpriced_model_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = "in-house-model-runs-of-a-catalog"
    catalog = Catalog()
    catalog.register("unpriced", lambda state: unpriced_agent(model))
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    runner = Runner(store, catalog, hooks=NoHooks())

    async def fifty() -> list[str]:
        return [str((await runner.start("unpriced", f"task {i}")).reason) for i in range(50)]

    with caplog.at_level(logging.WARNING, logger="endstate"):
        reasons = asyncio.run(fifty())
    store.close()
    assert reasons == ["success"] * 50
    assert len(warnings_of(caplog, model)) == 1  # was 50: one a run


def test_tables_of_the_process_share_what_they_said(caplog: pytest.LogCaptureFixture) -> None:
    model = "in-house-model-tables"
    with caplog.at_level(logging.WARNING, logger="endstate"):
        for _ in range(20):
            unpriced_agent(model).run("task")
    assert len(warnings_of(caplog, model)) == 1  # was 20


def test_every_unpriced_call_is_still_counted() -> None:
    """The warning is said once; `on_unknown` (telemetry's counter) still hears of every call."""
    model = "in-house-model-counted"
    unknown: list[str] = []
    for _ in range(3):
        agent = unpriced_agent(model)
        agent = Agent(agent.name, agent.model, prices=PriceTable(on_unknown=unknown.append))
        assert agent.run("task").cost_usd is None
    assert unknown == [model] * 3
