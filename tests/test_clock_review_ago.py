"""clock: the review queue says how long ago a run ended by the clock that stamped its end (the runner's:
the run store's), as the inbox reckons waits.

Before, the page took this host's clock: with a PostgreSQL server's clock an hour ahead of the
service's, a run that had ended two minutes before read "(none ago)", and with one an hour behind,
"(62 min ago)". The store's clock is put an hour ahead here by giving the store an offset clock
expression."""

from __future__ import annotations

from pathlib import Path

import pg
from starlette.testclient import TestClient
from test_prune import finished
from test_service_defences import LOCAL, TOKEN

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.durable.store._sql import SqlStore
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token

AHEAD = 3600.0  # the store's clock, ahead of this host's


def test_the_review_queue_says_how_long_ago_a_run_ended_by_the_store_s_clock(tmp_path: Path) -> None:
    store = open_store(pg.url_for("postgres", tmp_path))
    assert isinstance(store, SqlStore)
    store.clock = f"({type(store).clock} + {AHEAD})"
    try:
        finished(store, "ended", store.now() - 120)  # two minutes ago, by the store's clock
        service = Service(
            Runner(store, example_catalog(tmp_path / "worlds")), Token(TOKEN), sweep_interval=3600
        )
        with TestClient(create_app(service), base_url=LOCAL) as client:
            queue = client.get("/inbox/review").text
            page = client.get("/inbox/review/runs/ended").text
    finally:
        store.close()
    for text in (queue, page):
        assert "(2 min ago)" in text, text[-3000:]  # was "(none ago)"
