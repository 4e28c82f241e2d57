"""A store whose schema table holds a version that is no whole number (edited by hand, or written by
another program) is a damaged store: opening it says so, as a `StoreError` (one line from the CLI,
exit 2), never a Python traceback, and nothing in it is changed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_service_support import endstate

from agent.durable.store import StoreError, open_store
from agent.durable.store._sql import SCHEMA_TABLE


def spoil_schema_table(url: str, value: str) -> None:
    """Record `value` (text) as an applied schema version of the store at `url`."""
    if not url.startswith("postgresql"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        conn.execute(f"INSERT INTO {SCHEMA_TABLE} (version, applied_at) VALUES (?, 0)", (value,))
        conn.commit()
        conn.close()
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"ALTER TABLE {SCHEMA_TABLE} ALTER COLUMN version TYPE text")
        conn.execute(f"INSERT INTO {SCHEMA_TABLE} (version, applied_at) VALUES (%s, 0)", (value,))


def versions_of(url: str) -> list[str]:
    """The schema table's versions as text, in order."""
    sql = f"SELECT CAST(version AS TEXT) AS v FROM {SCHEMA_TABLE} ORDER BY applied_at, 1"
    if not url.startswith("postgresql"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        rows = [r[0] for r in conn.execute(sql)]
        conn.close()
        return rows
    import psycopg

    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(sql)]


@pytest.mark.parametrize("value", ["x", "12abc", ""])
def test_a_schema_version_that_is_no_whole_number_is_a_damaged_store(store_url: str, value: str) -> None:
    open_store(store_url).close()
    spoil_schema_table(store_url, value)
    before = versions_of(store_url)
    with pytest.raises(StoreError, match="damaged") as caught:
        open_store(store_url).close()
    assert SCHEMA_TABLE in str(caught.value) and repr(value) in str(caught.value)
    assert "backup" in str(caught.value)  # says how to fix it
    assert versions_of(store_url) == before  # nothing migrated or written


def test_the_cli_says_a_damaged_schema_table_in_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    open_store(url).close()
    spoil_schema_table(url, "x")
    for command in (["runs"], ["pending"], ["recover"]):
        done = endstate(*command, store=url)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("endstate: ") and "damaged" in done.stderr
        assert "Traceback" not in done.stderr
