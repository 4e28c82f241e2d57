"""journal49: the lists of waiting runs (`endstate pending`, GET /pending, the inbox) mark a run whose
stored journal lost its end as damaged, not answerable; before, it was shown as answerable and the
answer failed. The list finds it from the length the run's row records (schema 15) with one look-up
a run; a store of the previous schema is upgraded in place, and its waiting runs are answered."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from damaged_journals import drop_entry
from test_durable47_damaged_journal import asked
from test_runner_agents import catalog
from test_service_defences import AUTH, TOKEN, Build, build  # noqa: F401 - the fixture
from test_store_waiting import sent

from agent.cli.main import main
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.durable.store._sql import ENTRIES, SCHEMA_TABLE, TABLE, SqlStore, latest_version
from agent.result import StopReason

SAME = {"Origin": "http://127.0.0.1:8000", "Sec-Fetch-Site": "same-origin"}


def _run_sql(store_url: str, *statements: str) -> None:
    """Statements run on the store as a hand edit (or an older Endstate) would."""
    store = open_store(store_url)
    try:
        assert isinstance(store, SqlStore)
        for sql in statements:
            store._rows(sql)
    finally:
        store.close()


def _waiting(store_url: str, limit: int = 50, offset: int = 0) -> dict[str, str | None]:
    """The waiting runs of a page, each with why it is damaged (None: it is not)."""
    store = open_store(store_url)
    try:
        return {r.run_id: r.damage for r in store.waiting(limit, offset)}
    finally:
        store.close()


def _block(out: str, run_id: str) -> str:
    """The lines `endstate pending` prints for `run_id`: its line and those indented under it."""
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(run_id))
    rest = lines[first + 1 :]
    end = next((i for i, line in enumerate(rest) if not line.startswith(" ")), len(rest))
    return "\n".join(lines[first : first + 1 + end])


def _article(page: str, run_id: str) -> str:
    """The inbox's article of `run_id`."""
    start = page.rindex("<article", 0, page.index(f'id="run-{run_id}"'))
    return page[start : page.index("</article>", start)]


def test_the_waiting_list_marks_a_run_whose_journal_lost_its_end(store_url: str, tmp_path: Path) -> None:
    runs = [asked(store_url, tmp_path / str(i)) for i in range(3)]
    drop_entry(store_url, runs[1], last=True)
    listed = _waiting(store_url)
    assert list(listed) == runs
    assert listed[runs[0]] is None and listed[runs[2]] is None
    said = listed[runs[1]]
    assert said is not None and f"run {runs[1]}: its journal lacks its last entries" in said
    assert "cannot be answered" in said and f"`endstate end {runs[1]}`" in said
    assert _waiting(store_url, 1, 1) == {runs[1]: said}  # on a page past an offset too


def test_a_run_whose_length_was_never_recorded_is_listed_as_before(store_url: str, tmp_path: Path) -> None:
    run_id = asked(store_url, tmp_path / "a")
    _run_sql(store_url, f"UPDATE {TABLE} SET journal_length = NULL")
    drop_entry(store_url, run_id, last=True)
    assert _waiting(store_url) == {run_id: None}  # no length to check against: unchecked, as before


def test_endstate_pending_says_damaged_and_gives_no_command_to_answer_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_url = str(tmp_path / "runs.db")
    damaged, fine = asked(store_url, tmp_path / "d"), asked(store_url, tmp_path / "f")
    drop_entry(store_url, damaged, last=True)
    capsys.readouterr()
    assert main(["pending", "--store", store_url]) == 0
    out = capsys.readouterr().out
    mine = _block(out, damaged)
    assert (
        "DAMAGED" in mine.splitlines()[0] and "not answerable" in mine and f"`endstate end {damaged}`" in mine
    )
    assert f"endstate answer {damaged}" not in out and f"endstate answer {fine}" in out
    assert main(["pending", "--store", store_url, "--json"]) == 0
    items = {i["run_id"]: i for i in map(json.loads, capsys.readouterr().out.splitlines())}
    assert items[fine]["damaged"] is None
    assert f"`endstate end {damaged}`" in items[damaged]["damaged"]


def test_get_pending_and_the_inbox_show_a_damaged_run_as_not_answerable(
    build: Build,  # noqa: F811
    tmp_path: Path,
) -> None:
    api = build(runs=2)
    damaged, fine = [p["run_id"] for p in api.get("/pending").json()["pending"]]
    drop_entry(str(tmp_path / "runs.db"), damaged, last=True)
    items = {p["run_id"]: p for p in api.get("/pending").json()["pending"]}
    assert items[fine]["damaged"] is None
    assert f"run {damaged}: its journal lacks its last entries" in items[damaged]["damaged"]
    signed_in = api.post("/inbox/login", data={"token": TOKEN}, headers=SAME, follow_redirects=False)
    assert signed_in.status_code == 303
    page = api.get("/inbox").text
    article = _article(page, damaged)
    assert '<article class="run damaged"' in article and "Damaged:" in article and "endstate end" in article
    assert "<form" not in article  # nothing to answer with
    assert "<form" in _article(page, fine)
    refused = api.post(f"/runs/{damaged}/answer", json={"answer": "INV-0913"}, headers=AUTH)
    assert refused.status_code == 409, refused.text  # answered all the same: refused as damaged


def test_a_store_of_the_previous_schema_is_upgraded_and_its_waiting_runs_are_answered(
    store_url: str, tmp_path: Path
) -> None:
    runs = [asked(store_url, tmp_path / str(i)) for i in range(2)]
    previous = 14  # as the Endstate before journal49 left it (its schema 15 added journal_length)
    _run_sql(
        store_url,
        f"ALTER TABLE {TABLE} DROP COLUMN journal_length",
        f"DELETE FROM {SCHEMA_TABLE} WHERE version > {previous}",
    )
    assert _waiting(store_url) == {r: None for r in runs}  # upgraded on open: listed, answerable
    runner = Runner(open_store(store_url), catalog())
    try:
        assert runner.store.schema_version() == latest_version("sqlite")
        for run_id in runs:
            assert asyncio.run(runner.resume(run_id, "2")).reason is StopReason.SUCCESS
        store = runner.store
        assert isinstance(store, SqlStore)
        for run_id in runs:
            record = store.get(run_id)
            held = store._rows(f"SELECT COUNT(*) AS n FROM {ENTRIES} WHERE run_id = ?", (run_id,))[0]["n"]
            assert record is not None and record.journal_length == held  # recorded by its next write
    finally:
        runner.store.close()


def test_the_mark_is_one_look_up_of_the_entries_key_a_run(store_url: str) -> None:
    """The page's check looks each run's last entry up by its key, on the page's rows only: never a
    scan of the entries (PostgreSQL, planning with the statistics of a store of 300 waiting runs,
    made a NOT EXISTS check a hash of the whole entries table)."""
    store = open_store(store_url)
    try:
        assert isinstance(store, SqlStore)
        _fill(store, 300, 5)
        [(sql, params)] = sent(store, lambda s: s.waiting(50, 200))
        plan = _plan(store, sql, params)
    finally:
        store.close()
    assert "SEARCH e USING PRIMARY KEY (run_id=? AND seq=?)" in plan or "endstate_entries_pkey" in plan, plan
    assert "Seq Scan on endstate_entries" not in plan and "SCAN e" not in plan, plan


def _fill(store: SqlStore, runs: int, entries: int) -> None:
    """`runs` waiting runs of `entries` journal entries each, written straight into the store."""
    for i in range(runs):
        run_id = f"w{i:04d}"
        store._rows(
            f"INSERT INTO {TABLE} (run_id, agent, task, task_type, status, started_at, updated_at, "
            "suspended_at, snapshot, journal_length) VALUES (?, 'a', 't', 't', 'waiting', 0, 0, ?, '{}', ?)",
            (run_id, float(i), entries),
        )
        marks = ", ".join("(?, ?, ?)" for _ in range(entries))
        store._rows(
            f"INSERT INTO {ENTRIES} (run_id, seq, entry) VALUES {marks}",
            [v for seq in range(entries) for v in (run_id, seq, "{}")],
        )
    if store.dialect != "sqlite":
        store._rows(f"ANALYZE {TABLE}")
        store._rows(f"ANALYZE {ENTRIES}")


def _plan(store: SqlStore, sql: str, params: tuple[object, ...]) -> str:
    """The plan the store's database makes for `sql`, as it would (no planner setting changed)."""
    if store.dialect == "sqlite":
        rows = store._rows(f"EXPLAIN QUERY PLAN {sql}", params)
        return "\n".join(str(r["detail"]) for r in rows)
    return "\n".join(str(r["QUERY PLAN"]) for r in store._rows(f"EXPLAIN {sql}", params))
