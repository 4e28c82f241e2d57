"""A store a newer Endstate wrote (a schema above this one's) is refused, saying both versions and
what to do, and left exactly as it was: an older host opening it (a forgotten cron job, a rollback)
must not change what the newer release will read."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import compat_agents as ca
import pg
import pytest

from agent.durable.runner import Runner
from agent.durable.store import StoreError, open_store
from agent.durable.store._sql import latest_version


def newer_store(url: str) -> int:
    """A store at this release's schema, a run waiting in it, then marked as a newer release's
    (its schema version one above, a table of its own); the newer version."""
    store = open_store(url)
    try:
        asyncio.run(
            Runner(store, ca.catalog()).start("c-question", "task of c-question", run_id="c-question")
        )
        newer = latest_version(store.dialect) + 1  # type: ignore[attr-defined]
        store._rows("INSERT INTO endstate_schema (version, applied_at) VALUES (?, 0)", (newer,))  # type: ignore[attr-defined]
        store._rows("CREATE TABLE endstate_future (run_id TEXT PRIMARY KEY)")  # type: ignore[attr-defined]
    finally:
        store.close()
    return newer


def refused(url: str, newer: int) -> None:
    with pytest.raises(StoreError) as raised:
        open_store(url)
    said = str(raised.value)
    assert f"schema version {newer}" in said and f"({newer - 1})" in said and "upgrade Endstate" in said


def sqlite_state(path: Path) -> tuple[Any, ...]:
    conn = sqlite3.connect(path)
    try:
        return (conn.execute("PRAGMA journal_mode").fetchone(), list(conn.iterdump()))
    finally:
        conn.close()


def test_a_newer_sqlite_store_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    newer = newer_store(str(path))
    conn = sqlite3.connect(path)  # the newer release keeps its file in another journal mode, say
    assert conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    conn.close()
    before = sqlite_state(path)
    refused(str(path), newer)
    assert sqlite_state(path) == before


def test_a_newer_postgres_store_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    import psycopg

    url = pg.url_for("postgres", tmp_path)
    newer = newer_store(url)

    def state() -> tuple[Any, ...]:
        with psycopg.connect(url) as conn:
            return (
                conn.execute("SELECT version, applied_at FROM endstate_schema ORDER BY version").fetchall(),
                conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
                ).fetchall(),
                conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1"
                ).fetchall(),
                conn.execute("SELECT * FROM endstate_runs ORDER BY run_id").fetchall(),
                conn.execute("SELECT * FROM endstate_entries ORDER BY run_id, seq").fetchall(),
            )

    before = state()
    refused(url, newer)
    assert state() == before
