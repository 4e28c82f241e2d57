"""An answer through the service to another framework's run that cannot take it: the person is told.

Before, `POST /runs/ID/approve` answered 202, the segment then failed in the background, the run
went back to waiting, and the reason was only logged: the person who answered was told nothing.
Now an answer the store already knows cannot be taken (the framework's state could not be saved)
is refused before the claim (409, saying why), and one the framework refuses as it loads its state
is kept on the run (`refused`), shown by `GET /runs/ID`, `/pending` and the inbox, until the run
moves on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg
import pytest
from foreign_agents import ENV_CHECKPOINTS, catalog
from starlette.testclient import TestClient
from test_store import edit_row

from agent.durable.runner import Runner
from agent.durable.store import RunStatus, RunStore, open_store
from agent.service.app import Service, create_app
from agent.service.auth import Token

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOCAL = "http://127.0.0.1:8000"


@pytest.fixture(params=pg.BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh store; LangGraph's checkpoints beside it (the same PostgreSQL database, or a SQLite file)."""
    url = pg.url_for(request.param, tmp_path)
    monkeypatch.setenv(ENV_CHECKPOINTS, url if url.startswith("postgresql://") else str(tmp_path / "lg.db"))
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[RunStore]:
    opened = open_store(store_url)
    yield opened
    opened.close()


@pytest.fixture
def api(store: RunStore) -> Iterator[TestClient]:
    service = Service(Runner(store, catalog()), Token(TOKEN), sweep_interval=3600)
    with TestClient(create_app(service), base_url=LOCAL) as client:
        yield client


def started(store: RunStore, agent: str) -> str:
    """A run of `agent` that now waits for an approval; its id."""
    result = asyncio.run(Runner(store, catalog()).start(agent, "clean up a"))
    record = store.get(result.run_id)
    assert record is not None and record.status is RunStatus.WAITING
    return result.run_id


def settled(api: TestClient, run_id: str, segments: int) -> dict[str, Any]:
    """The run once it waits again at `segments` (its failed answer given back)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body: dict[str, Any] = api.get(f"/runs/{run_id}").json()
        if body["status"] == "waiting" and body["segments"] == segments and body.get("refused"):
            return body
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not wait again with a refusal: {body}")


def test_an_answer_to_a_run_whose_state_could_not_be_saved_is_refused_before_the_claim(
    store: RunStore, api: TestClient
) -> None:
    run_id = started(store, "oa-opaque")  # its context is no mapping: its state was never saved
    before = store.get(run_id)
    response = api.post(f"/runs/{run_id}/approve", headers=AUTH, json={})
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert "cannot be resumed from the store" in error and "could not be saved" in error
    after = store.get(run_id)
    assert before is not None and after is not None
    assert (after.status, after.segments, after.updated_at) == (
        before.status,
        before.segments,
        before.updated_at,
    )


def test_an_answer_the_framework_cannot_load_is_kept_on_the_run_and_shown_where_people_look(
    store: RunStore, api: TestClient
) -> None:
    run_id = started(store, "lg-forgetful")  # its checkpointer forgets the interrupt between segments
    segments = store.get(run_id).segments  # type: ignore[union-attr]
    response = api.post(f"/runs/{run_id}/approve", headers=AUTH, json={"segments": segments})
    assert response.status_code == 202  # the state is loaded only as the segment begins
    run = settled(api, run_id, segments)
    assert "holds no pending interrupt" in run["refused"] and "not taken" in run["refused"]
    (item,) = api.get("/pending").json()["pending"]
    assert item["refused"] == run["refused"]
    api.post("/inbox/login", data={"token": TOKEN}, headers={"Origin": LOCAL})
    page = api.get("/inbox").text
    assert 'class="refused"' in page and "holds no pending interrupt" in page


def test_a_refusal_is_forgotten_once_the_run_moves_on(store: RunStore, api: TestClient) -> None:
    run_id = started(store, "lg-forgetful")
    segments = store.get(run_id).segments  # type: ignore[union-attr]
    assert api.post(f"/runs/{run_id}/approve", headers=AUTH, json={}).status_code == 202
    settled(api, run_id, segments)
    deadline = store.get(run_id).deadline  # type: ignore[union-attr]
    assert deadline is not None
    asyncio.run(Runner(store, catalog()).sweep(now=deadline + 1))
    ended = store.get(run_id)
    assert ended is not None and ended.status is RunStatus.FINISHED and ended.refused is None


def test_more_budget_for_a_foreign_runs_limit_stop_is_refused_in_the_answer_not_after_a_202(
    store: RunStore, api: TestClient, store_url: str
) -> None:
    """A foreign run that asked once, was approved, then stopped at its framework's turn limit keeps
    the head it suspended with: the claim for more budget took it, the request got a 202, and the
    framework's refusal came in the background."""
    run_id = started(store, "oa-remover")
    edit_row(  # approved, then stopped by MaxTurnsExceeded
        store_url,
        "UPDATE endstate_runs SET status = 'finished', stop_reason = 'limit', stop_limit = 'turns', "
        "question = NULL, pending = NULL, deadline = NULL, ended_at = updated_at WHERE run_id = ?",
        run_id,
    )
    before = store.get(run_id)
    response = api.post(f"/runs/{run_id}/resume", headers=AUTH, json={"more_turns": 3})
    assert response.status_code == 400, response.text
    assert "cannot be given more budget" in response.json()["error"]
    after = store.get(run_id)
    assert before is not None and after is not None
    assert (after.status, after.segments, after.refused) == (before.status, before.segments, None)
