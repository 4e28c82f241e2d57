"""faces49: a page of `/pending` stays within its bytes of texts when the runs on it were answered before
with long answers (an earlier question's answer is on the page: `last_answer`).

Before: the page's budget counted a run's task, question and call only, so a page of runs each carrying
a 2 MB answer to their earlier question was as many times 2 MB as it had runs, past the 4 MiB it keeps to.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient
from test_service_defences import AUTH, LOCAL, TOKEN

from agent import Agent, Budget
from agent.durable.runner import Catalog, Runner
from agent.durable.store import RunStatus, open_store
from agent.models.scripted import ScriptedModel, finish
from agent.service.app import PAGE_BYTES, Service, create_app
from agent.service.auth import Token

LONG = "a" * (2 * 1024 * 1024)  # an answer given through the Python API, which takes any length


def asks_twice(state: dict[str, Any]) -> Agent:
    script = [[finish("need_help", "Which month?")], [finish("need_help", "Which year?")]]
    script.append([finish("done", "ok")])
    return Agent(name="asker", model=ScriptedModel(script), budget=Budget(max_turns=5))


def test_a_page_of_runs_answered_before_at_length_ends_within_its_bytes(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "runs.db"))
    catalog = Catalog()
    catalog.register("asker", asks_twice)
    runner = Runner(store, catalog)
    try:
        for n in range(4):
            asyncio.run(runner.start("asker", "Report", run_id=f"r{n}"))
            asyncio.run(runner.drive(runner.claim(f"r{n}", LONG)))  # it asks again, its answer kept
        assert [r.last_answer == LONG for r in store.list_runs(RunStatus.WAITING)] == [True] * 4
        service = Service(runner, Token(TOKEN), sweep_interval=3600)
        with TestClient(create_app(service), base_url=LOCAL) as api:
            page = api.get("/pending?limit=4", headers=AUTH)
        assert page.status_code == 200
        assert len(page.content) < PAGE_BYTES + len(LONG), len(page.content)
        shown = page.json()
        assert shown["total"] == 4 and shown["next"] is not None and 1 <= len(shown["pending"]) < 4
        assert all(p["last_answer"] == LONG for p in shown["pending"])  # whole: the page ends early instead
    finally:
        store.close()
