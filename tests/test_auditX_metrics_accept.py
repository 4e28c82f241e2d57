"""`/metrics` answers any `Accept` header with a page of metrics, never a 500.

`/metrics` needs no token and answers any host (the README: it holds no run data). Its format is
negotiated from `Accept` by prometheus_client, which compares the `version=` a client names with
numbers: `Accept: application/openmetrics-text;version=x` raised a TypeError there, so anyone who
reaches the port had a 500 and an ERROR line with a traceback written to the service's log for each
such request. Such a version now counts as none (OpenMetrics 1.0.0, as `version` left out gives)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient

from agent.durable.runner import runner_with_telemetry
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token
from telemetry import Telemetry

INVOICE = {
    "agent": "invoice-downloader",
    "task": "Get the invoice",
    "state": {"scenario": "invoice/which-one"},
}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """A client of a service with telemetry (its `/metrics`), one run waiting."""
    telemetry = Telemetry.from_env({"OTEL_SDK_DISABLED": "true"}, registry=CollectorRegistry())
    store = open_store(str(tmp_path / "runs.db"))
    runner = runner_with_telemetry(store, example_catalog(tmp_path / "worlds"), telemetry, 60)
    asyncio.run(runner.start(**INVOICE))
    service = Service(
        runner, Token("test-token-0123456789abcdef"), sweep_interval=3600, metrics=telemetry.exposition
    )
    try:
        with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as served:
            yield served
    finally:
        runner.catalog.close()
        store.close()
        telemetry.shutdown()


OPENMETRICS = "application/openmetrics-text"


@pytest.mark.parametrize(
    ("accept", "format_"),
    [
        (f"{OPENMETRICS};version=x", OPENMETRICS),
        (f"{OPENMETRICS}; version=1.a.0", OPENMETRICS),
        (f"{OPENMETRICS}; version=1.0.0 x; escaping=underscores", OPENMETRICS),
        (f"*/*;q=0.1, {OPENMETRICS};version=x", OPENMETRICS),
        ("text/plain; version=x", "text/plain"),
        ("text/plain; version=1.b", "text/plain"),
    ],
)
def test_a_version_that_is_no_number_is_read_as_none(client: TestClient, accept: str, format_: str) -> None:
    page = client.get("/metrics", headers={"Accept": accept})
    assert page.status_code == 200, (accept, page.status_code, page.text[:300])
    assert page.headers["content-type"].startswith(format_), page.headers["content-type"]
    assert "agent_stops_total" in page.text


def test_the_formats_a_scraper_asks_for_are_served_as_before(client: TestClient) -> None:
    for accept, format_ in [
        ("", "text/plain; version=0.0.4"),
        (f"{OPENMETRICS}; version=1.0.0", f"{OPENMETRICS}; version=1.0.0"),
        (f"{OPENMETRICS}; version=1.0.0; escaping=allow-utf-8", f"{OPENMETRICS}; version=1.0.0"),
        (
            f"{OPENMETRICS}; version=0.0.1,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            "text/plain; version=0.0.4",
        ),
    ]:
        page = client.get("/metrics", headers={"Accept": accept})
        assert page.status_code == 200 and page.headers["content-type"].startswith(format_), (
            accept,
            page.headers,
        )
        assert ("# EOF" in page.text) == format_.startswith(OPENMETRICS)
