"""Requests without a client address (ASGI `client` None: a unix socket, a proxy that sends no
`X-Forwarded-For`) and the token-guessing throttle.

They cannot be told apart, so they share one budget, as every client of a proxy the service does
not trust shares the proxy's: guessing from them stays throttled. What changed: that budget is
theirs alone (a proxy's `X-Forwarded-For: unknown` shared it), the log says once that clients come
without addresses and how to give them theirs, and their 429 says why it hit them too. The time
is an injected clock; no test waits.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.service.throttle import Throttle

LIMIT = 3
WINDOW = 600.0
TOKEN = "test-token-0123456789abcdef"
WRONG = "wrong-token-0123456789abcdef"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_clients_without_an_address_share_a_budget_of_their_own() -> None:
    throttle = Throttle(LIMIT, WINDOW, clock=Clock())
    for _ in range(LIMIT):
        throttle.failed(None)
    assert throttle.retry_after(None) > 0  # guessing without an address is still throttled
    assert throttle.retry_after("unknown") == 0  # X-Forwarded-For: unknown is another client
    assert throttle.retry_after("") > 0  # an empty address is none
    assert throttle.retry_after("198.51.100.1") == 0


def test_the_log_says_once_that_clients_come_without_an_address(caplog: pytest.LogCaptureFixture) -> None:
    throttle = Throttle(LIMIT, WINDOW, clock=Clock())
    with caplog.at_level(logging.WARNING, logger="endstate.service"):
        for _ in range(LIMIT * 3):
            throttle.failed(None)
        throttle.failed("198.51.100.1")
    said = [r.getMessage() for r in caplog.records if "without a client address" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in caplog.records]
    assert "X-Forwarded-For" in said[0] and "FORWARDED_ALLOW_IPS" in said[0]


class NoAddress:
    """The app as a server that gives no client address sees it (ASGI `client` None)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = {**scope, "client": None}
        await self.app(scope, receive, send)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    service = Service(runner, Token(TOKEN), sweep_interval=3600, throttle=Throttle(LIMIT, WINDOW))
    try:
        with TestClient(NoAddress(create_app(service)), base_url="http://127.0.0.1:8000") as client:
            yield client
    finally:
        runner.catalog.close()
        store.close()


def test_a_429_for_clients_without_an_address_says_why_it_hit_them_all(api: TestClient) -> None:
    wrong = {"Authorization": f"Bearer {WRONG}"}
    for _ in range(LIMIT):
        assert api.post("/runs", json={"agent": "x", "task": "y"}, headers=wrong).status_code == 401
    paused = api.post("/runs", json={"agent": "x", "task": "y"}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert paused.status_code == 429
    said = paused.json()["error"]
    assert "without a client address" in said and "X-Forwarded-For" in said, said
    page = api.post("/inbox/login", data={"token": TOKEN}, headers={"Origin": "http://127.0.0.1:8000"})
    assert page.status_code == 429
    assert "without a client address" in page.text


def test_an_address_that_is_no_ip_is_kept_as_a_short_key() -> None:
    """A loopback client (trusted as a proxy by default) may name any `X-Forwarded-For`: 10,000 of
    16 KB each held 160 MB in the table. A key holds at most a DNS name's 253 characters."""
    throttle = Throttle(LIMIT, WINDOW, clock=Clock())
    named = "n" * 16_000
    for _ in range(LIMIT):
        throttle.failed(named)
    assert [len(key) for key in throttle._failures] == [253]
    assert throttle.retry_after(named) > 0  # still counted as that client
    assert throttle.retry_after("n" * 253) > 0  # the same key: names alike to 253 characters are one
