"""Recovery meets a run whose stored journal is damaged (an entry row edited by hand, a bad restore):
it ends that run `error` and its log line and note say so, naming it (not "nothing was changed",
which sent an operator looking for a run still to recover), and it goes on with the others."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pg
import pytest

from agent import Agent, StopReason, tool
from agent.durable.runner import Catalog, Runner
from agent.durable.store import RunStatus, open_store
from agent.models.scripted import ScriptedModel, call, finish


@tool
def step(n: int) -> str:
    """Take a step."""
    return f"did {n}"


def stepper(state: dict[str, object]) -> Agent:
    model = ScriptedModel([[call("step", n=1)], [call("step", n=2)], [finish("done", "ok")]])
    return Agent(name="stepper", model=model, tools=[step])


@pytest.fixture(params=pg.BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return pg.url_for(request.param, tmp_path)


def _execute(store: object, sql: str) -> None:
    """Edit the store's rows by hand, as an operator (or a damaged restore) would."""
    url = str(getattr(store, "url", ""))
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql)
    else:
        import sqlite3

        path = getattr(store, "path", None) or url.removeprefix("sqlite:///")
        conn = sqlite3.connect(str(path))
        try:
            conn.execute(sql)
            conn.commit()
        finally:
            conn.close()


def test_recovery_ends_a_run_with_a_damaged_journal_saying_so_and_recovers_the_others(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = Catalog()
    catalog.register("stepper", stepper)
    store = open_store(store_url)
    try:
        runner = Runner(store, catalog)
        for run_id in ("a", "b", "c"):
            asyncio.run(runner.start("stepper", "walk", run_id=run_id))
        # their worker died mid-run (a host of its own, its lease run out); b's journal is damaged
        _execute(store, "UPDATE endstate_runs SET status = 'running', stop_reason = NULL, ended_at = NULL, "
                        "owner = 'gone-host:1:w', lease_until = 0")  # fmt: skip
        _execute(store, "UPDATE endstate_entries SET entry = '{garbage' WHERE run_id = 'b' AND seq = 2")
        with caplog.at_level(logging.ERROR, logger="endstate.runner"):
            results = asyncio.run(Runner(store, catalog).recover())
        assert sorted((r.run_id, r.reason) for r in results) == [
            ("a", StopReason.SUCCESS),
            ("c", StopReason.SUCCESS),
        ]
        damaged = store.get("b")
        assert damaged is not None and damaged.status is RunStatus.FINISHED
        assert (damaged.stop_reason, damaged.error_type) == (StopReason.ERROR, "bad_snapshot")
        assert "snapshot cannot be read" in damaged.note and "endstate resume b" in damaged.note
        assert "nothing was changed" not in damaged.note  # it was: the run ended
        said = [r.getMessage() for r in caplog.records if "run b" in r.getMessage()]
        assert said and all("nothing was changed" not in line for line in said), said
        assert any("run b cannot be recovered: it ended error (bad_snapshot)" in line for line in said), said
    finally:
        store.close()
