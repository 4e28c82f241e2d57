"""listings53: the listings of one agent, task type or status (`endstate runs`, GET /runs, `audit
--list`, `pending`, the review queue) read what they show, not the whole store (schema 16's indexes),
on SQLite and PostgreSQL; a store of schema 15 is upgraded in place and lists what it held.

Before: with no index on the runs' agent or task type, nor on the order of `audit --list`, a page of
a rare agent's runs walked the start time's index through every other run (45 ms with 200,000 runs),
a page of audits read and sorted every audit, and on SQLite a page of the waiting runs of one agent
read every waiting run. What a listing reads is measured, not timed: on SQLite the virtual machine's steps
(counted by a progress handler) against those of the first page of every run (served by the start
time's index since schema 1); on PostgreSQL the rows its plan reads (`EXPLAIN ANALYZE`, over
statistics as autovacuum gathers them, with sequential scans priced out as in tests/test_store_waiting:
a table of a test is small enough that a scan would do)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pg
import pytest
from test_store import checkpoint_of, lease, suspended
from test_store_waiting import sent

from agent.audit import AuditOutcome
from agent.durable.review import QUEUE_REASONS
from agent.durable.store import RunStatus, open_store
from agent.durable.store._sql import (
    AUDITS,
    SCHEMA_TABLE,
    TABLE,
    SqlStore,
    checkpoint_rows,
    checkpoint_update,
    latest_version,
)

RUNS = 2000
T0 = 1_800_000_000.0
NEW_INDEXES = {  # schema 16's, on both stores (SQLite has more: see its migration)
    "endstate_runs_agent", "endstate_runs_type",
    "endstate_audits_listed", "endstate_audits_outcome", "endstate_audits_agent", "endstate_audits_type",
}  # fmt: skip
HEAD = json.dumps({"head": "x" * 1000})  # a finished run's saved head, about as wide as a real one


def run_row(i: int) -> dict[str, Any]:
    """Run `i` of the store (started a minute after run i-1): an agent one run in a hundred is of
    ('rare'), one in ten ('mid'), or the rest; a task type of two runs in a hundred ('odd'); half of
    them waiting for a person (and half the rare agent's); the rest finished, a tenth of them and
    every run of the rare agent having given up."""
    agent = "rare" if i % 100 == 7 else "mid" if i % 10 == 3 else "busy"
    started = T0 + 60 * i
    row: dict[str, Any] = {
        "run_id": f"r{i:05d}",
        "agent": agent,
        "task_type": "odd" if i % 100 in (7, 43) else "plain",
    }
    row |= {"task": "do it", "started_at": started, "updated_at": started, "snapshot": HEAD}
    if i % 4 in (1, 2) or i % 200 == 7:
        return row | {"status": "waiting", "suspended_at": started + 10, "question": "which one?"}
    gave_up = i % 100 == 7 or i % 10 == 0
    return row | {
        "status": "finished",
        "ended_at": started + 30,
        "stop_reason": "gave_up" if gave_up else "success",
    }


def audit_row(i: int) -> dict[str, Any] | None:
    """The audit of run `i`, if it has one (it succeeded): those of type 'odd' found false, one in a
    hundred still due, the others confirmed."""
    run = run_row(i)
    if run["status"] != "finished" or run["stop_reason"] != "success":
        return None
    due = run["ended_at"] + 86_400
    if i % 100 == 9:
        return {"run_id": run["run_id"], "agent": run["agent"], "task_type": run["task_type"], "due_at": due}
    outcome = AuditOutcome.FALSE_SUCCESS if run["task_type"] == "odd" else AuditOutcome.CONFIRMED
    made = {"outcome": str(outcome), "checked_at": due + 3600}
    return {
        "run_id": run["run_id"],
        "agent": run["agent"],
        "task_type": run["task_type"],
        "due_at": due,
    } | made


def fill(store: SqlStore) -> None:
    """Write the `RUNS` runs and their audits straight into the store, 100 rows a statement."""
    audits = [a for i in range(RUNS) if (a := audit_row(i)) is not None]
    for table, rows in ((TABLE, [run_row(i) for i in range(RUNS)]), (AUDITS, audits)):
        columns = sorted({c for row in rows for c in row})
        for start in range(0, len(rows), 100):
            chunk = rows[start : start + 100]
            marks = ", ".join("(" + ", ".join("?" for _ in columns) + ")" for _ in chunk)
            params = [row.get(c) for row in chunk for c in columns]
            store._rows(f"INSERT INTO {table} ({', '.join(columns)}) VALUES {marks}", params)
    if store.dialect != "sqlite":
        store._rows(f"ANALYZE {TABLE}")
        store._rows(f"ANALYZE {AUDITS}")


@pytest.fixture(scope="module", params=pg.BACKENDS)
def filled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a store of `RUNS` runs (read only by the tests: built once a backend)."""
    url = pg.url_for(request.param, tmp_path_factory.mktemp("listings53"))
    store = open_store(url)
    try:
        assert isinstance(store, SqlStore)
        fill(store)
    finally:
        store.close()
    yield url


def ids(listing: Any) -> list[str]:
    return [r.run_id for r in listing]


Call = Callable[[Any], Any]
BASELINE: Call = lambda s: s.list_runs(limit=10)  # noqa: E731 - the first page of every run
BOTH, SQLITE = tuple(pg.BACKENDS), ("sqlite",)
LISTINGS: dict[str, tuple[Call, tuple[str, ...]]] = {  # each listing, and the stores it is checked on
    "runs of an agent": (lambda s: s.list_runs(limit=10, agent="rare"), BOTH),
    "runs of a task type": (lambda s: s.list_runs(limit=10, task_type="odd"), BOTH),
    "finished runs of an agent": (lambda s: s.list_runs(RunStatus.FINISHED, 10, agent="rare"), BOTH),
    # PostgreSQL plans these from statistics, over the agent's, the task type's or the status's index
    # (a bitmap of two, read whole), the start time's or schema 10's partial (status, agent, task
    # type) one: SQLite, which has no statistics, has an index for each
    "runs of an agent's task type": (lambda s: s.list_runs(limit=10, agent="mid", task_type="odd"), SQLITE),
    "finished runs": (lambda s: s.list_runs(RunStatus.FINISHED, 10), SQLITE),
    "audits made": (lambda s: s.list_audits(limit=10), BOTH),
    "audits made and due": (lambda s: s.list_audits(limit=10, due=True), BOTH),
    "audits of an outcome": (lambda s: s.list_audits(AuditOutcome.CONFIRMED, 10), BOTH),
    # SQLite read a rare outcome's few audits over schema 6's (outcome, due) index, and sorted them
    "audits of a rare outcome": (lambda s: s.list_audits(AuditOutcome.FALSE_SUCCESS, 10), ("postgres",)),
    "audits of an agent": (lambda s: s.list_audits(limit=10, agent="mid"), BOTH),
    "audits of a task type": (lambda s: s.list_audits(limit=10, task_type="odd"), BOTH),
    "waiting runs of an agent": (lambda s: s.waiting(5, agent="rare"), SQLITE),
    "waiting runs of a task type": (lambda s: s.waiting(5, task_type="odd"), SQLITE),
    "review queue of an agent": (lambda s: s.review_queue(QUEUE_REASONS, 0.05, 10, agent="rare"), BOTH),
    "review queue of a task type": (lambda s: s.review_queue(QUEUE_REASONS, 0.05, 10, task_type="odd"), BOTH),
}


def statement(url: str, call: Call) -> tuple[str, tuple[Any, ...]]:
    """The statement (and its parameters) that lists what `call` lists."""
    store = open_store(url)
    try:
        return sent(store, call)[-1]
    finally:
        store.close()


def sqlite_steps(url: str, sql: str, params: tuple[Any, ...]) -> int:
    """How many virtual machine steps (in tens) SQLite takes to list `sql`'s rows."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    with contextlib.closing(sqlite3.connect(url)) as conn:
        conn.set_progress_handler(count, 10)
        conn.execute(sql, params).fetchall()
    return steps


def postgres_rows(url: str, sql: str, params: tuple[Any, ...]) -> int:
    """How many rows (index entries and table rows) PostgreSQL's plan of `sql` reads, looked up
    rows of a subquery counted once each."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        [(plan,)] = conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + sql.replace("?", "%s"), params
        ).fetchall()
    return _read(plan[0]["Plan"])


def _read(node: dict[str, Any]) -> int:
    """The rows the scans under a plan node read: each scan's rows and those its filter dropped."""
    here = 0
    if "Scan" in node["Node Type"]:
        kept = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
        here = kept * node["Actual Loops"]
    return here + sum(_read(child) for child in node.get("Plans", []))


@pytest.mark.parametrize(
    ("filled", "listing"),
    [(backend, listing) for listing, (_, backends) in LISTINGS.items() for backend in backends],
    indirect=["filled"],
)
def test_a_filtered_listing_reads_what_it_shows(filled: str, listing: str) -> None:
    call, _ = LISTINGS[listing]
    sqlite = not filled.startswith("postgresql://")
    sql, params = statement(filled, call)
    if sqlite:
        baseline = sqlite_steps(filled, *statement(filled, BASELINE))
        steps = sqlite_steps(filled, sql, params)
        assert steps <= 2 * baseline, (steps, baseline, explain_sqlite(filled, sql, params))
    else:
        assert postgres_rows(filled, sql, params) <= 40, explain_postgres(filled, sql, params)


def explain_sqlite(url: str, sql: str, params: tuple[Any, ...]) -> str:
    with contextlib.closing(sqlite3.connect(url)) as conn:
        return "\n".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params))


def explain_postgres(url: str, sql: str, params: tuple[Any, ...]) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        rows = conn.execute("EXPLAIN ANALYZE " + sql.replace("?", "%s"), params).fetchall()
    return "\n".join(r[0] for r in rows)


EXPECTED = {  # what the listings hold: the same with the indexes as without them
    "runs of an agent": [f"r{i:05d}" for i in range(1907, 1006, -100)],
    "finished runs of an agent": [f"r{i:05d}" for i in range(1907, 0, -200)][:10],
    "runs of an agent's task type": [f"r{i:05d}" for i in range(1943, 1042, -100)],
    "audits of a rare outcome": [f"r{i:05d}" for i in range(1943, 1042, -100)],
    "waiting runs of an agent": [f"r{i:05d}" for i in range(7, 1000, 200)],
    "review queue of an agent": [f"r{i:05d}" for i in range(107, 2000, 200)],
}


@pytest.mark.parametrize("listing", list(EXPECTED))
def test_a_filtered_listing_lists_what_it_did(filled: str, listing: str) -> None:
    store = open_store(filled)
    try:
        assert ids(LISTINGS[listing][0](store)) == EXPECTED[listing]
    finally:
        store.close()


def test_a_store_of_schema_15_gets_the_indexes_and_lists_what_it_held(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    for backend in pg.BACKENDS:
        url = pg.url_for(backend, tmp_path / backend)
        (tmp_path / backend).mkdir()
        store = open_store(url)
        try:
            assert isinstance(store, SqlStore)
            fill(store)
            for name in _indexes(store) - OLD_INDEXES:  # as the Endstate before schema 16 left it
                store._rows(f"DROP INDEX {name}")
            store._rows(f"DELETE FROM {SCHEMA_TABLE} WHERE version > 15")
        finally:
            store.close()
        store = open_store(url)
        try:
            assert isinstance(store, SqlStore)
            assert store.schema_version() == latest_version(store.dialect) >= 16
            assert _indexes(store) >= NEW_INDEXES, backend
            for listing, expected in EXPECTED.items():
                assert ids(LISTINGS[listing][0](store)) == expected, (backend, listing)
        finally:
            store.close()


OLD_INDEXES = {  # the indexes of schema 15 (primary keys aside)
    "endstate_runs_status", "endstate_runs_started", "endstate_reviews_run", "endstate_runs_ended",
    "endstate_audits_due", "endstate_runs_waiting", "endstate_runs_waiting_by",
}  # fmt: skip


def _indexes(store: SqlStore) -> set[str]:
    """The store's indexes but its primary keys'."""
    if store.dialect == "sqlite":
        rows = store._rows("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        return {r["name"] for r in rows}
    rows = store._rows("SELECT indexname AS name FROM pg_indexes WHERE tablename LIKE 'endstate_%'")
    return {r["name"] for r in rows if not r["name"].endswith("_pkey")}


def test_a_checkpoint_writes_none_of_the_listings_indexes_on_sqlite(tmp_path: Path, make_agent: Any) -> None:
    """SQLite updates only the indexes holding a column an UPDATE sets: the checkpoint's (each turn's)
    sets none of schema 16's, so they cost a turn nothing. Read from the statement's program: the
    b-trees it opens to write."""
    url = str(tmp_path / "runs.db")
    store = open_store(url)
    store.close()
    snap = suspended(make_agent).snapshot
    assert snap is not None
    values, _ = checkpoint_rows(checkpoint_of(snap), lease(), T0)
    assert isinstance(store, SqlStore)
    sql = checkpoint_update(tuple(values), store.clock)
    with contextlib.closing(sqlite3.connect(url)) as conn:
        program = conn.execute("EXPLAIN " + sql, [None] * (len(values) + 3)).fetchall()
        roots = dict(conn.execute("SELECT name, rootpage FROM sqlite_master WHERE type = 'index'").fetchall())
    written = {r[2] for r in program if r[1] == "OpenWrite"}
    new = {
        name: root
        for name, root in roots.items()
        if name not in OLD_INDEXES and not name.startswith("sqlite_")
    }
    assert {"endstate_runs_agent", "endstate_runs_status_agent", "endstate_runs_ended_type"} <= set(new)
    assert not written & set(new.values()), {name for name, root in new.items() if root in written}
    assert (
        written & {roots["endstate_runs_started"]} == set()
    )  # nor the older ones: the start time is set once
