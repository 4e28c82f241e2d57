"""clock: finished runs are pruned by the run store's clock, which stamped when each ended, not by the
clock of the host that prunes.

A service's retention and `endstate prune --older-than` took their cutoff from this host's wall
clock: a service (or an operator's laptop) whose clock ran two days ahead of the PostgreSQL server's,
say a VM resumed before NTP set it right, deleted for good, with `--retention 1d`, every run that had
ended within the day. Now the cutoff is the store's time (as deadlines and waits are reckoned). The
store's clock is put two days behind this host's by giving the store an offset clock expression."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pg
import pytest
from starlette.testclient import TestClient
from test_prune import finished
from test_service_defences import LOCAL, TOKEN
from test_service_support import wait_for

from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.durable.store._sql import SqlStore
from agent.durable.store.postgres import CLOCK, PostgresStore
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token

DAY = 86400.0
BEHIND = 2 * DAY  # the store's clock, behind this host's


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    """A PostgreSQL store holding a run that ended an hour ago and one three days ago, by its clock."""
    url = pg.url_for("postgres", tmp_path)
    store = _behind(url)
    try:
        now = store.now()
        assert abs(now - (time.time() - BEHIND)) < 60
        finished(store, "an-hour-ago", now - 3600)
        finished(store, "three-days-ago", now - 3 * DAY)
    finally:
        store.close()
    yield url


def _behind(url: str) -> SqlStore:
    store = open_store(url)
    assert isinstance(store, SqlStore)
    store.clock = f"({type(store).clock} - {BEHIND})"
    return store


def _left(url: str) -> list[str]:
    store = open_store(url)
    try:
        return [r.run_id for r in store.list_runs(limit=None)]
    finally:
        store.close()


def test_a_service_keeps_what_ended_within_its_retention_by_the_store_s_clock(
    url: str, tmp_path: Path
) -> None:
    store = _behind(url)
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    service = Service(runner, Token(TOKEN), sweep_interval=3600, retention=DAY)
    try:
        with TestClient(create_app(service), base_url=LOCAL):
            wait_for(lambda: "three-days-ago" not in _left(url), what="the upkeep's prune")
    finally:
        store.close()
    assert _left(url) == ["an-hour-ago"]


def test_endstate_prune_keeps_what_ended_within_its_age_by_the_store_s_clock(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(PostgresStore, "clock", f"({CLOCK} - {BEHIND})")  # the store the command opens
    assert main(["prune", "--older-than", "1d", "--store", url]) == 0
    assert "pruned 1 finished run" in capsys.readouterr().out
    assert _left(url) == ["an-hour-ago"]
