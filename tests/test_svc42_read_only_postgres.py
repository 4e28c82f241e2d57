"""svc42: a PostgreSQL store that takes no writes is not "ready".

Before, `/readyz` over a PostgreSQL store read its schema version and answered 200 "ready" on a hot
standby or a database set `default_transaction_read_only` (a failover pointed at the wrong server),
while every start, answer and checkpoint failed. Now it is a 503 saying so and what to do.
"""

from __future__ import annotations

from pathlib import Path

import pg
import psycopg
from starlette.testclient import TestClient
from test_service_defences import LOCAL, TOKEN

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token


def ready(url: str, tmp_path: Path) -> tuple[int, str]:
    store = open_store(url)
    service = Service(Runner(store, example_catalog(tmp_path / "worlds")), Token(TOKEN), sweep_interval=3600)
    try:
        with TestClient(create_app(service), base_url=LOCAL) as client:
            response = client.get("/readyz")
            return response.status_code, response.text
    finally:
        store.close()


def test_a_read_only_postgresql_database_is_not_ready(tmp_path: Path) -> None:
    url = pg.url_for("postgres", tmp_path)
    assert ready(url, tmp_path) == (200, "ready")
    with psycopg.connect(url, autocommit=True) as conn:
        name = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    status, text = ready(url, tmp_path)
    assert status == 503, text
    assert "takes no writes (a hot standby, or default_transaction_read_only" in text
    assert "point --store at the primary" in text
