"""Stores that older Endstate releases wrote, loaded from their SQL dumps (tests/data/compat/)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pg

from agent.durable.store._sql import migrations, split_statements

DATA = Path(__file__).with_name("data") / "compat"
TABLES = ("endstate_runs", "endstate_entries", "endstate_reviews", "endstate_audits")


def dumps(folder: Path = DATA) -> list[Path]:
    """The dumps in `folder`: `schemaN.sqlite.sql` (`sqlite3 .dump`), `schemaN.postgres.sql` (`pg_dump`)."""
    return sorted(folder.glob("schema*.sql"), key=lambda p: (int(re.findall(r"\d+", p.name)[0]), p.name))


def schema_of(dump: Path) -> int:
    return int(re.findall(r"\d+", dump.name)[0])


def dialect_of(dump: Path) -> str:
    return dump.name.split(".")[1]


def backends_for(dump: Path) -> list[str]:
    """The stores a dump loads into: a SQLite dump into both kinds (its rows into PostgreSQL's
    schema of the same version), a PostgreSQL dump into PostgreSQL only."""
    return list(pg.BACKENDS) if dialect_of(dump) == "sqlite" else [b for b in pg.BACKENDS if b != "sqlite"]


def load(dump: Path, backend: str, tmp_path: Path) -> str:
    """A fresh store of `backend` holding what `dump` holds; its URL."""
    url = pg.url_for(backend, tmp_path)
    if dialect_of(dump) == "postgres":
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(dump.read_text().encode())  # type: ignore[call-overload]
        return url
    if backend == "sqlite":
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        conn.executescript(dump.read_text())
        conn.close()
        return url
    _sqlite_rows_into_postgres(dump, url)
    return url


def _sqlite_rows_into_postgres(dump: Path, url: str) -> None:
    """PostgreSQL's schema at the dump's version (its migrations, unchanged since), then the rows."""
    import psycopg

    source = sqlite3.connect(":memory:")
    source.executescript(dump.read_text())
    version = schema_of(dump)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE endstate_schema (version INTEGER NOT NULL, applied_at DOUBLE PRECISION)")
        for number, sql in migrations("postgres"):
            if number <= version:
                for statement in split_statements(sql):
                    conn.execute(statement.encode())  # type: ignore[call-overload]
                conn.execute("INSERT INTO endstate_schema VALUES (%s, 0)", (number,))
        for table in TABLES:
            if not source.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
                continue
            types = dict(
                conn.execute(
                    "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s",
                    (table,),
                ).fetchall()
            )
            cursor = source.execute(f"SELECT * FROM {table}")
            names = [d[0] for d in cursor.description]
            for row in cursor.fetchall():
                values = [
                    bool(v) if types[c] == "boolean" and v is not None else v
                    for c, v in zip(names, row, strict=True)
                ]
                marks = ", ".join("%s" for _ in names)
                conn.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})", values)  # type: ignore[arg-type]
    source.close()
