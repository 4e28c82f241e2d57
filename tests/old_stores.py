"""Run stores as older Endstate versions left them, written with plain SQL, to test upgrades."""

from __future__ import annotations

import sqlite3
from typing import Any

from agent.durable.store._sql import migrations, split_statements


def write_old_store(url: str, version: int, rows: list[dict[str, Any]]) -> None:
    """A store at schema `version` (migrations 1 to `version` applied) holding `rows` of
    endstate_runs (column -> value), on SQLite (sqlite:///path) or PostgreSQL."""
    dialect = "postgres" if url.startswith("postgresql") else "sqlite"
    statements: list[tuple[str, list[Any]]] = [
        ("CREATE TABLE endstate_schema (version INTEGER NOT NULL, applied_at DOUBLE PRECISION)", []),
    ]
    for number, sql in migrations(dialect):
        if number <= version:
            statements += [(s, []) for s in split_statements(sql)]
            statements.append((f"INSERT INTO endstate_schema VALUES ({number}, 0)", []))
    for row in rows:
        columns, marks = ", ".join(row), ", ".join("?" for _ in row)
        statements.append((f"INSERT INTO endstate_runs ({columns}) VALUES ({marks})", list(row.values())))
    if dialect == "sqlite":
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        for sql, params in statements:
            conn.execute(sql, params)
        conn.commit()
        conn.close()
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as pconn:
        for sql, params in statements:
            pconn.execute(sql.replace("?", "%s"), params)
