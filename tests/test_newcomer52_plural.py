"""newcomer52: one is not many. `POST /runs` past `--max-running 1` said "this service has 1 runs in
flight"; `endstate runs` over one waiting run said "1 of these wait for a person" (as `endstate review`
once said "1 turns")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from test_runner_agents import catalog, counter_state
from test_service_defences import AUTH, LOCAL, TOKEN
from test_service_support import wait_for

from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token


def test_a_start_past_max_running_1_says_1_run_in_flight(tmp_path: Path) -> None:
    folder = tmp_path / "held"
    hang = counter_state(folder, "hang-first")
    (folder / "hang.flag").write_text("")  # the run blocks in its first tool call until it goes
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, catalog())
    service = Service(runner, Token(TOKEN), sweep_interval=3600, max_running=1)
    try:
        with TestClient(create_app(service), base_url=LOCAL) as api:
            start = {"agent": "counter", "task": "count", "state": hang}
            held = api.post("/runs", json=start, headers=AUTH)
            assert held.status_code == 202, held.text
            refused = api.post("/runs", json=start, headers=AUTH)
            assert refused.status_code == 503
            assert "this service has 1 run in flight, its --max-running" in refused.json()["error"]
            (folder / "hang.flag").unlink()
            url = held.json()["url"]
            wait_for(lambda: api.get(url, headers=AUTH).json()["status"] == "finished", what="the held run")
    finally:
        (folder / "hang.flag").unlink(missing_ok=True)
        runner.catalog.close()
        store.close()


def test_runs_over_one_waiting_run_says_it_waits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.db"
    store = open_store(str(path))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    try:
        asyncio.run(runner.start("invoice-downloader", "Go", state={"scenario": "invoice/which-one"}))
    finally:
        runner.catalog.close()
        store.close()
    assert main(["runs", "--store", str(path)]) == 0
    hint = capsys.readouterr().out.splitlines()[-1]
    assert hint == f"1 of these waits for a person: `endstate pending --store {path}` shows what they ask"
