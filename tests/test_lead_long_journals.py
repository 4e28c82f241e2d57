"""A long run's journal written in one go (a version-1 snapshot upgraded in place, a journal stored
whole) goes into the store however long it is. Each entry took three bound values of one INSERT:
PostgreSQL takes at most 65,535 values a statement (21,845 entries), and SQLite builds since 3.32 take
32,766 by default (10,922 entries; Debian's build takes more). Past that the upgrade failed, and a
store holding one version-1 run of 11,000 turns could not be opened at all: every run in it
stranded."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import pg
import pytest
from old_stores import write_old_store

from agent.durable.store import open_store
from agent.durable.store import sqlite as sqlite_store
from agent.journal import Result

FIXTURE = json.loads((Path(__file__).with_name("fixtures") / "v1_store_rows.json").read_text())
TURNS = 11_000  # 22,001 entries: past both limits


def long_v1_row() -> dict[str, Any]:
    """The fixture's version-1 run that a shutdown cancelled, made TURNS turns long."""
    row = copy.deepcopy(next(r for r in FIXTURE["rows"] if r["run_id"] == "v1-cancelled"))
    snap = json.loads(row["snapshot"])
    messages, calls = [snap["messages"][0]], []
    for i in range(TURNS):
        use_id, customer = f"toolu_{i:05d}", f"C{i}"
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": use_id, "name": "lookup", "input": {"customer": customer}}
        ]})  # fmt: skip
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use_id, "content": f"{customer}: net 30"}
        ]})  # fmt: skip
        calls.append({"name": "lookup", "arguments": {"customer": customer}, "result": f"{customer}: net 30",
                      "is_error": False})  # fmt: skip
    snap |= {"messages": messages, "calls": calls}
    return row | {"snapshot": json.dumps(snap), "turns": TURNS}


@pytest.fixture
def default_sqlite_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite connections of the store take at most 32,766 values a statement, as most builds do."""
    connect = sqlite_store.connect

    def limited(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 32_766)
        return conn

    monkeypatch.setattr(sqlite_store, "connect", limited)


@pytest.mark.parametrize("backend", pg.BACKENDS)
def test_a_version_1_run_of_11000_turns_is_upgraded_whole(
    backend: str, tmp_path: Path, default_sqlite_limit: None
) -> None:
    url = pg.url_for(backend, tmp_path)
    write_old_store(url, FIXTURE["schema_version"], [long_v1_row()])
    store = open_store(url)  # was: "too many SQL variables" / "number of parameters must be ..."
    try:
        snap = store.snapshot("v1-cancelled")
        assert snap is not None and len(snap.journal) == 2 * TURNS + 1
        last = snap.journal[-1]
        assert isinstance(last, Result) and (last.call_id, last.text) == (
            f"toolu_{TURNS - 1:05d}",
            f"C{TURNS - 1}: net 30",
        )
    finally:
        store.close()
