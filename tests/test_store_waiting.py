"""The runs waiting for a person, read a page at a time: ordered, filtered, cut and counted in SQL
(schema 10), on SQLite and a real PostgreSQL server; and GET /pending and the inbox built on it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from test_service_defences import INVOICE
from test_store import edit_row, lease, suspended

from agent.cli import runs
from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import NewRun, Outcome, RunStatus, RunStore, open_store
from agent.durable.store._sql import SqlStore, latest_version
from agent.examples.scenarios import example_catalog
from agent.result import RunResult
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.service.http import waiting_page
from telemetry import MetricsHooks

NOW = 1_800_000_000.0
AGENTS = ("ci-fixer", "invoice-downloader")
TYPES = ("fix_ci", "invoice")


@pytest.fixture
def asked(make_agent: Any) -> RunResult:
    return suspended(make_agent)


def wait(store: RunStore, asked: RunResult, run_id: str, agent: str, task_type: str, at: float) -> None:
    """Store a run of `agent` and `task_type` that asked a person at `at`."""
    store.create(NewRun(run_id, agent, "task", task_type, {}), lease(), NOW)
    assert asked.suspension is not None
    asking = dataclasses.replace(asked.suspension, suspended_at=at, deadline=at + 3600)
    store.record(
        run_id, Outcome.of(dataclasses.replace(asked, run_id=run_id, suspension=asking)), lease(), NOW
    )


def fill(store: RunStore, asked: RunResult, n: int = 23) -> list[tuple[float, str, str, str]]:
    """`n` waiting runs asked at times out of order (some at the same time: then by run id), beside
    a running one; (asked at, run id, agent, task type) of the waiting ones, in the order expected."""
    expected = []
    for i, (agent, task_type) in zip(range(n), itertools.cycle(itertools.product(AGENTS, TYPES))):
        at, run_id = NOW - (i * 7 % 10) * 10, f"r{i * 31 % 97:02d}x{i:02d}"  # ten times: some asked at once
        wait(store, asked, run_id, agent, task_type, at)
        expected.append((at, run_id, agent, task_type))
    store.create(NewRun("still-running", AGENTS[0], "task", TYPES[0], {}), lease(), NOW)
    return sorted(expected)


def ids(listing: list[Any]) -> list[str]:
    return [r.run_id for r in listing]


def test_waiting_runs_come_oldest_request_first_a_page_at_a_time(store: RunStore, asked: RunResult) -> None:
    expected = fill(store, asked)
    every = [run_id for _, run_id, _, _ in expected]
    assert ids(store.waiting(100)) == every  # the running run is not among them
    pages = [ids(store.waiting(5, offset)) for offset in range(0, 30, 5)]
    assert [r for page in pages for r in page] == every and [len(p) for p in pages] == [5, 5, 5, 5, 3, 0]
    first = store.waiting(3)
    assert [r.suspended_at for r in first] == [at for at, *_ in expected[:3]] and first.damaged == []


def test_waiting_runs_are_filtered_by_agent_and_task_type_in_the_same_order(
    store: RunStore, asked: RunResult
) -> None:
    expected = fill(store, asked)
    for agent, task_type in [(AGENTS[0], None), (None, TYPES[1]), (AGENTS[1], TYPES[0]), ("nobody", None)]:
        want = [r for _, r, a, t in expected if agent in (None, a) and task_type in (None, t)]
        assert ids(store.waiting(100, agent=agent, task_type=task_type)) == want
        assert ids(store.waiting(2, 1, agent, task_type)) == want[1:3]


def test_waiting_counts_are_by_agent_and_task_type(store: RunStore, asked: RunResult) -> None:
    expected = fill(store, asked)
    counted = Counter((a, t) for _, _, a, t in expected)
    assert store.waiting_counts() == [(a, t, n) for (a, t), n in sorted(counted.items())]
    assert sum(n for *_, n in store.waiting_counts()) == 23


def test_a_damaged_waiting_row_is_named_and_hides_no_other(
    store_url: str, store: RunStore, asked: RunResult
) -> None:
    for i in range(3):
        wait(store, asked, f"r{i}", AGENTS[0], TYPES[0], NOW - 100 + i)
    edit_row(store_url, "UPDATE endstate_runs SET pending = ? WHERE run_id = 'r1'", '{"x": 1}')
    page = store.waiting(10)
    assert ids(page) == ["r0", "r2"] and page.damaged == ["r1"]
    assert store.waiting_counts() == [(AGENTS[0], TYPES[0], 3)]  # counted: it still waits


def test_a_waiting_row_whose_time_is_text_is_named_on_the_last_page(tmp_path: Path, asked: RunResult) -> None:
    """SQLite keeps text typed into a REAL column: it sorts after every number, so such a row is
    met on the last page and named there (the page before sorted it in Python: a 500)."""
    url = str(tmp_path / "runs.db")
    store = open_store(url)
    try:
        for i in range(4):
            wait(store, asked, f"r{i}", AGENTS[0], TYPES[0], NOW - 100 + i)
        edit_row(url, "UPDATE endstate_runs SET suspended_at = 'soon' WHERE run_id = 'r0'")
        assert ids(store.waiting(3)) == ["r1", "r2", "r3"]
        last = store.waiting(3, 3)
        assert ids(last) == [] and last.damaged == ["r0"]
    finally:
        store.close()


READS = {  # each read of the waiting runs, and the index it must be served from
    "page": (lambda s: s.waiting(50), "endstate_runs_waiting"),
    "page of an agent": (lambda s: s.waiting(50, agent=AGENTS[0]), "endstate_runs_waiting"),
    "page of an agent's type": (lambda s: s.waiting(50, 50, AGENTS[0], TYPES[0]), "endstate_runs_waiting_by"),
    "counts": (lambda s: s.waiting_counts(), "endstate_runs_waiting_by"),
    "the help gauges": (lambda s: s.pending_groups(), "endstate_runs_waiting_by"),
}


@pytest.mark.parametrize("read", list(READS))
def test_each_read_of_the_waiting_runs_walks_their_index_and_sorts_nothing(
    store_url: str, store: RunStore, read: str
) -> None:
    """What makes a page cost what it shows: the store walks the waiting runs' index in order and
    stops after the page, rather than reading every run and sorting them; the counts and the help
    gauges read that index alone, never the runs' rows."""
    call, index = READS[read]
    [(sql, params)] = sent(store, call)
    plan = explain(store_url, sql, params)
    assert index in plan, plan
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan
    if read in ("counts", "the help gauges"):
        assert "COVERING INDEX" in plan or "Index Only Scan" in plan, plan


def sent(store: Any, call: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """The statements (and their parameters) `call(store)` sent."""
    seen: list[tuple[str, tuple[Any, ...]]] = []
    send = store._rows

    def spy(sql: str, params: Any = (), retry: bool = False) -> Any:
        seen.append((sql, tuple(params)))
        return send(sql, params, retry)

    store._rows = spy
    try:
        call(store)
    finally:
        del store._rows
    return seen


def explain(store_url: str, sql: str, params: tuple[Any, ...]) -> str:
    """The query plan of `sql` (PostgreSQL's with sequential scans priced out: its tables in a test
    are small enough that any plan would do)."""
    if store_url.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store_url, autocommit=True) as conn:
            conn.execute("SET enable_seqscan = off")
            rows = conn.execute("EXPLAIN " + sql.replace("?", "%s"), params).fetchall()
        return "\n".join(r[0] for r in rows)
    with contextlib.closing(sqlite3.connect(store_url)) as conn, conn:
        return "\n".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params))


def test_a_store_of_version_9_gets_the_index_and_keeps_its_waiting_runs(
    store_url: str, asked: RunResult
) -> None:
    """Schema 10 adds only indexes: a store written at 9 opens, upgrades, and pages what it held."""
    store = open_store(store_url)
    try:
        for i in range(3):
            wait(store, asked, f"r{i}", AGENTS[i % 2], TYPES[0], NOW - i)
    finally:
        store.close()
    for sql in ("DROP INDEX endstate_runs_waiting", "DROP INDEX endstate_runs_waiting_by"):
        edit_row(store_url, sql)
    edit_row(store_url, "DELETE FROM endstate_schema WHERE version = 10")
    store = open_store(store_url)
    try:
        assert store.schema_version() == latest_version(store.dialect)  # type: ignore[attr-defined]
        assert ids(store.waiting(10)) == ["r2", "r1", "r0"]
        assert ids(store.waiting(10, agent=AGENTS[1])) == ["r1"]
    finally:
        store.close()


# -- GET /pending and the inbox over it ----------------------------------------------------------


class WholeReads:
    """A store that cannot page (as Temporal's visibility): only `list_runs`."""

    def __init__(self, store: RunStore) -> None:
        self.list_runs = store.list_runs


@pytest.mark.parametrize(("agent", "task_type"), [(None, None), (AGENTS[0], None), (None, TYPES[1]), AGENTS])
def test_a_page_read_in_sql_is_the_page_the_whole_list_gave(
    store: RunStore, asked: RunResult, agent: str | None, task_type: str | None
) -> None:
    """The inbox and /pending show what they showed when they read every waiting run: the same
    runs in the same order on every page, the same total and the same counts by agent and type."""
    fill(store, asked)
    for offset, limit in [(0, 50), (0, 4), (4, 4), (20, 4), (40, 4)]:
        paged = asyncio.run(waiting_page(store, offset, limit, agent, task_type))
        whole = asyncio.run(waiting_page(WholeReads(store), offset, limit, agent, task_type))
        assert ids(paged.records) == ids(whole.records)
        assert (paged.total, paged.counts, paged.damaged) == (whole.total, whole.counts, [])


@pytest.fixture
def api(store_url: str, tmp_path: Path) -> Iterator[TestClient]:
    """A client of a service over the store at `store_url`, with three runs waiting for a person."""
    store = open_store(store_url)
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    for _ in range(3):
        asyncio.run(runner.start(**INVOICE))
    service = Service(runner, Token("test-token-0123456789abcdef"), sweep_interval=3600, page_size=2)
    with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as client:
        yield client
    runner.catalog.close()
    store.close()


def test_pending_and_the_inbox_never_read_every_waiting_run(api: TestClient) -> None:
    store = api.app.state.service.runner.store  # type: ignore[attr-defined]
    every = [p["run_id"] for p in api.get("/pending").json()["pending"]]

    def whole_list(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("every waiting run was read for one page")

    store.list_runs = whole_list
    first = api.get("/pending", params={"limit": 2}).json()
    assert [p["run_id"] for p in first["pending"]] == every[:2] and first["total"] == 3
    assert [p["run_id"] for p in api.get(first["next"]).json()["pending"]] == every[2:]
    page = api.get("/inbox", params={"page": 2})
    assert page.status_code == 200 and f'data-run-id="{every[2]}"' in page.text, page.text
    assert "(3 waiting)" in page.text and "invoice-downloader (3)" in page.text


def test_pending_names_a_damaged_row_of_its_page_and_pages_on_past_it(
    api: TestClient, store_url: str
) -> None:
    every = [p["run_id"] for p in api.get("/pending").json()["pending"]]
    edit_row(store_url, "UPDATE endstate_runs SET pending = ? WHERE run_id = ?", '{"x": 1}', every[1])
    first = api.get("/pending", params={"limit": 2}).json()
    assert [p["run_id"] for p in first["pending"]] == every[:1] and first["damaged"] == [every[1]]
    assert first["total"] == 3 and first["next"].endswith("offset=2&limit=2")
    rest = api.get(first["next"]).json()
    assert [p["run_id"] for p in rest["pending"]] == every[2:] and "damaged" not in rest
    assert f'data-run-id="{every[2]}"' in api.get("/inbox", params={"page": 2}).text


# -- the help gauges and `endstate pending` read what they show ------------------------------------


def test_the_help_gauges_from_counts_in_the_store_equal_those_from_every_waiting_run(
    store: RunStore, asked: RunResult
) -> None:
    """The gauges read one row per (agent, task type), counted in SQL, and show what they showed
    when they read one row per waiting run: how many wait, and how long the oldest has (a run with
    no asking time counted, never the oldest)."""
    now = time.time()
    for i, (agent, task_type) in enumerate(
        itertools.islice(itertools.cycle(itertools.product(AGENTS, TYPES)), 11)
    ):
        wait(store, asked, f"r{i:02d}", agent, task_type, now - 3600 * (i * 7 % 11) - 60)
    wait(store, asked, "untimed", AGENTS[1], TYPES[0], 0.0)  # a store may not know when it asked
    every_run = [
        (r.agent, r.task_type, r.suspended_at or 0.0) for r in store.list_runs(RunStatus.WAITING, None)
    ]
    assert len(store.pending_groups()) == 4 and sum(g[2] for g in store.pending_groups()) == 12
    counted, listed = gauges(store.pending_groups), gauges(lambda: every_run)
    assert set(counted) == set(listed) and len(counted) == 8
    for key, value in listed.items():
        assert counted[key] == pytest.approx(value, abs=60), key  # ages read a moment apart


def gauges(source: Any) -> dict[tuple[str, str, str], float]:
    """{(metric, agent, task type): value} of the help gauges, scraped once from `source`."""
    registry = MetricsHooks(pending=source).registry
    return {
        (sample.name, sample.labels["agent"], sample.labels["task_type"]): sample.value
        for family in registry.collect()
        if family.name in ("agent_help_pending", "agent_help_oldest_pending_seconds")
        for sample in family.samples
    }


def test_endstate_pending_lists_every_waiting_run_oldest_first_a_page_at_a_time(
    store_url: str, store: RunStore, asked: RunResult, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    for i in range(5):
        wait(store, asked, f"r{i}", AGENTS[i % 2], TYPES[0], NOW - 100 * ((i * 3) % 5))
    edit_row(store_url, "UPDATE endstate_runs SET pending = ? WHERE run_id = 'r2'", '{"x": 1}')
    pages: list[tuple[int, int]] = []
    real = SqlStore.waiting

    def paged(self: Any, limit: int, offset: int = 0, *rest: Any) -> Any:
        pages.append((limit, offset))
        return real(self, limit, offset, *rest)

    monkeypatch.setattr(SqlStore, "waiting", paged)
    monkeypatch.setattr(SqlStore, "list_runs", lambda *_: pytest.fail("read every run"))
    monkeypatch.setattr(runs, "PENDING_PAGE", 2)
    assert main(["pending", "--store", store_url, "--json"]) == 0
    listed = [json.loads(line)["run_id"] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["r3", "r1", "r4", "r0"]  # asked 400, 300, 200 and 0 s before NOW (r2: damaged)
    assert pages == [(2, 0), (2, 2), (2, 4)]
    assert main(["pending", "--store", store_url]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines() if line.startswith("r")] == listed
    assert "1 run in" in out and "left out" in out and "r2" in out
