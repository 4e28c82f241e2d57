"""Two runners starting the same run id at once on one PostgreSQL store: one prepares, one is refused.

A start with a given run id (the service's POST with `run_id`, `Runner.begin(run_id=...)`) looked for
the id, then ran the catalog entry's `prepare` (which may clone a repository or create resources), then
stored the run. Two processes starting the same id at once (a client's POST retried at another replica
while the first still prepared) both found no run and both prepared; the store then refused one, whose
world was left (its `cleanup` is not run: a world named by the run id is the other start's too). A start
with a given id now holds the id on the store while it prepares: the other is refused before `prepare`."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from pg import shared_server

from agent import Agent
from agent.durable.runner import Catalog, Runner
from agent.durable.store import RunExists, StartingNow, open_store
from agent.models.scripted import ScriptedModel, finish

PREPARING = 1.0  # seconds a prepare takes: the other start comes meanwhile


def _agent(state: dict[str, Any]) -> Agent:
    return Agent("x", ScriptedModel([[finish("done")]]))


def test_two_runners_starting_one_run_id_at_once_prepare_it_once() -> None:
    url = shared_server().new_database()
    prepared: list[str] = []
    cleaned: list[str] = []

    def prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
        prepared.append(run_id)
        time.sleep(PREPARING)
        return {**state, "world": run_id}

    catalog = Catalog()
    catalog.register("x", _agent, prepare=prepare, cleanup=lambda state: cleaned.append(state["world"]))
    stores = [open_store(url), open_store(url)]
    outcomes: list[Any] = []

    def start(runner: Runner) -> None:
        try:
            outcomes.append(runner.begin("x", "task", run_id="same"))
        except RunExists as exc:
            outcomes.append(exc)

    try:
        runners = [Runner(store, catalog) for store in stores]
        threads = [threading.Thread(target=start, args=(r,)) for r in runners]
        for t in threads:
            t.start()
            time.sleep(0.2)  # the first is preparing when the second comes
        for t in threads:
            t.join(30)
        assert prepared == ["same"], prepared  # the refused start prepared nothing
        refused = [o for o in outcomes if isinstance(o, RunExists)]
        assert len(outcomes) == 2 and len(refused) == 1, outcomes
        assert "same" in str(refused[0]) and cleaned == []  # the started run's world is kept
        assert isinstance(refused[0], StartingNow), refused  # the service's 409 says it is being started
        record = stores[0].get("same")
        assert record is not None and record.state["world"] == "same"
    finally:
        for store in stores:
            store.close()


def test_a_run_id_is_free_again_once_its_start_failed() -> None:
    """A prepare that fails lets the id go: a later start with it prepares and stores the run."""
    url = shared_server().new_database()
    calls: list[int] = []

    def prepare(state: dict[str, Any], run_id: str) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the clone failed")
        return state

    catalog = Catalog()
    catalog.register("x", _agent, prepare=prepare)
    store = open_store(url)
    try:
        runner = Runner(store, catalog)
        with pytest.raises(Exception, match="the clone failed"):
            runner.begin("x", "task", run_id="again")
        assert runner.begin("x", "task", run_id="again").run_id == "again" and len(calls) == 2
        other = open_store(url)
        try:
            with pytest.raises(RunExists, match="already exists"):
                Runner(other, catalog).begin("x", "task", run_id="again")
        finally:
            other.close()
    finally:
        store.close()


def test_over_http_a_start_of_an_id_another_process_is_starting_is_a_409_saying_so() -> None:
    """A POST /runs retried at another replica while the first replica still prepares that run id (it
    holds the id on the PostgreSQL store): a 409 saying the run is being started and to send the request
    again once answered. Before, the service read the refusal as an id taken by another run and said
    'taken by a different run (its agent, task, task type or state differ)', which was not so."""
    from starlette.testclient import TestClient

    from agent.service.app import Service, create_app
    from agent.service.auth import Token

    url = shared_server().new_database()
    catalog = Catalog()
    catalog.register("x", _agent)
    other, store = open_store(url), open_store(url)
    service = Service(Runner(store, catalog), Token("t" * 32), sweep_interval=3600)
    body = {"agent": "x", "task": "task", "run_id": "same"}
    auth = {"Authorization": f"Bearer {'t' * 32}"}
    try:
        with TestClient(create_app(service), base_url="http://127.0.0.1") as api:
            with other.starting("same"):  # the other replica's start of it, preparing
                refused = api.post("/runs", json=body, headers=auth)
            assert refused.status_code == 409, refused.text
            said = refused.json()["error"]
            assert "is being started now" in said and "different run" not in said, said
            assert store.get("same") is None  # nothing was stored
            taken = api.post("/runs", json=body, headers=auth)  # once that start let go: this one starts
            assert taken.status_code == 202, taken.text
    finally:
        other.close()
        store.close()
