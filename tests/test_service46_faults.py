"""A bug in the service (an exception that is no EndstateError) is a JSON 500 with the safe headers.

Starlette answers such an exception in its ServerErrorMiddleware, outside every middleware given to
the app: the 500 lacked `nosniff` and `no-store` and was a plain-text body. In this process through
the ASGI app, and once through a real `endstate serve` (uvicorn logs the traceback; the service
still stops cleanly).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from test_service_support import Server

from agent.durable.catalog import SEED_CATALOG, Catalog, load_catalog
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOCAL = "http://127.0.0.1:8000"
SECRET = "hunter2-in-the-bug"  # what the failing code's exception says: never shown to the client
SAFE = {"x-content-type-options": "nosniff", "cache-control": "no-store"}


@contextlib.contextmanager
def serving(tmp_path: Path, raises: bool = False) -> Iterator[TestClient]:
    """A client of a fresh service over a SQLite store (`raises`: server exceptions reach the test)."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    service = Service(runner, Token(TOKEN), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url=LOCAL, raise_server_exceptions=raises) as client:
            yield client
    finally:
        runner.catalog.close()
        store.close()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    with serving(tmp_path) as client:
        yield client


def broken(*args: Any, **kwargs: Any) -> Any:
    raise KeyError(f"password={SECRET}")


def assert_a_safe_500(response: Any) -> str:
    """The response is our JSON 500 with the safe headers, naming no internals; its error id."""
    assert response.status_code == 500, response.text
    assert response.headers["content-type"].startswith("application/json")
    for name, value in SAFE.items():
        assert response.headers.get(name) == value, (name, dict(response.headers))
    error = response.json()["error"]
    for internal in (SECRET, "KeyError", "Traceback", ".py"):
        assert internal not in response.text, response.text
    assert "bug" in error and "logged" in error
    found = re.search(r"error id ([0-9a-f]{12})", error)
    assert found, error
    return found.group(1)


@pytest.mark.parametrize(
    ("method", "path", "call"),
    [
        ("GET", "/runs", "overview"),
        ("GET", "/runs/abc", "get"),
        ("POST", "/runs/abc/answer", "get"),
        ("GET", "/pending", "waiting_counts"),
    ],
)
def test_an_unexpected_exception_is_a_json_500_with_the_safe_headers(
    api: TestClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    call: str,
) -> None:
    store = api.app.state.service.runner.store  # type: ignore[attr-defined]
    monkeypatch.setattr(store, call, broken)
    with caplog.at_level(logging.ERROR, logger="endstate.service"):
        response = api.request(
            method, path, headers=AUTH, json={"answer": "yes"} if method == "POST" else None
        )
    error_id = assert_a_safe_500(response)
    said = [r for r in caplog.records if r.name == "endstate.service" and error_id in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in caplog.records]
    assert f"{method} {path}" in said[0].getMessage() and "KeyError" in said[0].getMessage()


def test_the_exception_still_reaches_the_server_which_logs_its_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Starlette re-raises after the 500 is sent: the server (uvicorn) logs the traceback; a test
    client that raises server exceptions sees it."""
    with serving(tmp_path, raises=True) as raising:
        store = raising.app.state.service.runner.store  # type: ignore[attr-defined]
        monkeypatch.setattr(store, "overview", broken)
        with pytest.raises(KeyError, match=SECRET):
            raising.get("/runs")


# -- through a real `endstate serve` --------------------------------------------------------------


def buggy_catalog() -> Catalog:
    """The seed catalog, in a service whose `GET /runs/{id}` has a bug (for the real-server test)."""
    from agent.service.app import Api

    Api.read_run = broken  # type: ignore[method-assign,assignment]
    return load_catalog(SEED_CATALOG)


def test_a_real_serve_answers_a_bug_with_a_safe_500_logs_the_traceback_and_stops_cleanly(
    tmp_path: Path,
) -> None:
    server = Server(str(tmp_path / "runs.db"), tmp_path, catalog="test_service46_faults:buggy_catalog")
    try:
        with server.client() as client:
            error_id = assert_a_safe_500(client.get("/runs/abc"))
            assert client.get("/runs").status_code == 200  # the service goes on serving
    finally:
        code = server.stop()
    assert code == 0, server.log.read_text()
    log = server.log.read_text()
    assert log.count(error_id) == 1, log
    assert log.count(f"KeyError: 'password={SECRET}'") == 1, log  # the traceback, once, for the operator
