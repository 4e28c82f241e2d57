"""README, "Durable runs and the service": `/pending` pages hold at most 500 runs and `GET /runs` at
most 1000 (`?status=&limit=`); a page size outside that, or a status that is none, is a 400 saying
what is taken, and the bounds themselves are served."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token

INVOICE = {
    "agent": "invoice-downloader",
    "task": "Get the invoice",
    "state": {"scenario": "invoice/which-one"},
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    """A service over a SQLite store holding one run that waits for a person."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    asyncio.run(runner.start(**INVOICE))
    service = Service(runner, Token("test-token-0123456789abcdef"), sweep_interval=3600)
    with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as client:
        yield client
    runner.catalog.close()
    store.close()


@pytest.mark.parametrize("limit", ["501", "0", "-1", "ten", "1.5"])
def test_a_pending_page_outside_1_to_500_is_a_400_naming_the_range(api: TestClient, limit: str) -> None:
    response = api.get(f"/pending?limit={limit}")
    assert response.status_code == 400
    assert "from 1 to 500" in response.json()["error"]


@pytest.mark.parametrize("limit", ["1001", "0", "many"])
def test_a_runs_listing_outside_1_to_1000_is_a_400_naming_the_range(api: TestClient, limit: str) -> None:
    response = api.get(f"/runs?limit={limit}")
    assert response.status_code == 400
    assert "from 1 to 1000" in response.json()["error"]


def test_a_status_that_is_none_is_a_400_naming_those_there_are(api: TestClient) -> None:
    response = api.get("/runs?status=bogus")
    assert response.status_code == 400
    assert "running, waiting, cancelled, finished" in response.json()["error"]


def test_the_bounds_themselves_are_served(api: TestClient) -> None:
    pending = api.get("/pending?limit=500")
    assert pending.status_code == 200 and pending.json()["total"] == 1
    assert [r["agent"] for r in pending.json()["pending"]] == ["invoice-downloader"]
    runs = api.get("/runs?limit=1000&status=waiting")
    assert runs.status_code == 200 and len(runs.json()["runs"]) == 1
