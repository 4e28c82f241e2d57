"""A store written by version-1 code is upgraded in place and its runs finish, on both backends.

tests/fixtures/v1_store_rows.json holds the rows that Endstate's version-1 code
wrote (schema 3, Messages-API snapshots) for four runs of tests/v1_agents.py: a
question and an approval waiting for a person, a run whose worker was killed
mid-turn (a checkpoint with one result of two), and a run a shutdown cancelled.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pg
import pytest
import v1_agents
from old_stores import write_old_store

from agent import StopReason
from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store
from agent.durable.store._sql import latest_version
from agent.errors import SnapshotError
from agent.snapshot import SnapshotKind

FIXTURE = json.loads((Path(__file__).with_name("fixtures") / "v1_store_rows.json").read_text())


@pytest.fixture(params=pg.BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    url = pg.url_for(request.param, tmp_path)
    write_old_store(url, FIXTURE["schema_version"], FIXTURE["rows"])  # version 1 wrote schema 3
    return url


def drive(url: str, how: Callable[[Runner], Coroutine[Any, Any, Any]]) -> Any:
    """Run `how` with a fresh runner on the store at `url`, and close the store after; the
    runner's clock reads as a minute after the fixture's runs were suspended."""
    store = open_store(url)
    try:
        return asyncio.run(how(Runner(store, v1_agents.catalog(), clock=v1_agents.AsWritten())))
    finally:
        store.close()


def test_the_upgrade_rewrites_every_snapshot_as_a_head_and_a_journal(store_url: str) -> None:
    store = open_store(store_url)
    try:
        assert store.schema_version() == latest_version(store.dialect)  # type: ignore[attr-defined]
        kinds = {r.run_id: store.snapshot(r.run_id) for r in store.list_runs(limit=None)}
        assert {k: s.kind if s else None for k, s in kinds.items()} == {
            "v1-question": SnapshotKind.SUSPENDED,
            "v1-approval": SnapshotKind.SUSPENDED,
            "v1-crashed": SnapshotKind.CHECKPOINT,
            "v1-cancelled": SnapshotKind.CANCELLED,
        }
        for run_id, snap in kinds.items():
            assert snap is not None and snap.version == 2 and snap.task, run_id
            record = store.get(run_id)
            assert record is not None and json.loads(record.snapshot_json or "{}")["version"] == 2
    finally:
        store.close()
    again = open_store(store_url)  # a second open changes nothing
    try:
        assert again.schema_version() == latest_version(again.dialect)  # type: ignore[attr-defined]
    finally:
        again.close()


def test_runs_suspended_before_the_upgrade_are_answered_after_it(store_url: str) -> None:
    v1_agents.COUNTS.clear()
    answered = drive(store_url, lambda r: r.resume("v1-question", "EU"))
    assert answered.reason is StopReason.SUCCESS and answered.output == "EU share: 40%"
    approved = drive(store_url, lambda r: r.resume("v1-approval", approved=True))
    assert approved.reason is StopReason.SUCCESS
    assert v1_agents.COUNTS == {"send_invoice": 1}  # the recorded lookup is not run again


def test_runs_cut_off_before_the_upgrade_are_recovered_without_repeating_recorded_calls(
    store_url: str,
) -> None:
    v1_agents.COUNTS.clear()
    results = drive(store_url, lambda r: r.recover())
    assert sorted((r.run_id, r.reason) for r in results) == [
        ("v1-cancelled", StopReason.SUCCESS),
        ("v1-crashed", StopReason.SUCCESS),
    ]
    assert v1_agents.COUNTS == {"lookup": 2}  # BETA and GAMMA for the crashed run; none for the cancelled
    store = open_store(store_url)
    try:
        done = {r.run_id: r.status for r in store.list_runs(limit=None)}
        assert done["v1-crashed"] is RunStatus.FINISHED and done["v1-cancelled"] is RunStatus.FINISHED
    finally:
        store.close()


@pytest.mark.parametrize("backend", pg.BACKENDS)
def test_a_version_1_row_with_a_malformed_tool_call_is_kept_and_the_others_upgrade(
    backend: str, tmp_path: Path
) -> None:
    rows = json.loads(json.dumps(FIXTURE["rows"]))
    [cancelled] = [r for r in rows if r["run_id"] == "v1-cancelled"]
    snapshot = json.loads(cancelled["snapshot"])
    snapshot["messages"][1]["content"][0].pop("id")  # a hand edit, or a bug of the old code
    cancelled["snapshot"] = json.dumps(snapshot)
    url = pg.url_for(backend, tmp_path)
    write_old_store(url, FIXTURE["schema_version"], rows)
    store = open_store(url)  # the upgrade goes on past the row it cannot read
    try:
        assert store.schema_version() == latest_version(store.dialect)  # type: ignore[attr-defined]
        snap = store.snapshot("v1-question")
        assert snap is not None and snap.version == 2
        with pytest.raises(SnapshotError, match=r"messages\[1\].*tool_use.*'id'"):
            store.snapshot("v1-cancelled")  # kept as it was: resuming it says what is wrong
        store._rows(  # type: ignore[attr-defined]
            "UPDATE endstate_runs SET snapshot = ? WHERE run_id = ?",
            (next(r for r in FIXTURE["rows"] if r["run_id"] == "v1-cancelled")["snapshot"], "v1-cancelled"),
        )  # fixed by hand: read (and upgraded) as it is resumed, never stranded
    finally:
        store.close()
    result = drive(url, lambda runner: runner.resume("v1-cancelled"))
    assert result.reason is StopReason.SUCCESS


def test_a_run_suspended_on_a_version_8_sqlite_store_is_answered_after_the_upgrade(tmp_path: Path) -> None:
    """Version 9 moves SQLite's journal entries to a WITHOUT ROWID table: every entry, and the
    fully spelled entry JSON that version-8 code wrote, is kept, and the run finishes."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    v1_agents.COUNTS.clear()
    store = open_store(url)
    first = asyncio.run(Runner(store, v1_agents.catalog()).start("v1-question", "EU share?"))
    assert first.reason is StopReason.NEED_HELP
    store.close()
    conn = sqlite3.connect(tmp_path / "runs.db")  # back to version 8's table, entries as it wrote them
    rows = conn.execute("SELECT run_id, seq, entry FROM endstate_entries ORDER BY seq").fetchall()
    spelled = [(r, s, json.dumps(_spelled(json.loads(e)))) for r, s, e in rows]
    conn.executescript(
        "DROP TABLE endstate_entries; DELETE FROM endstate_schema WHERE version = 9;"
        "CREATE TABLE endstate_entries (run_id TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL,"
        " PRIMARY KEY (run_id, seq))"
    )
    conn.executemany("INSERT INTO endstate_entries VALUES (?, ?, ?)", spelled)
    conn.commit()
    conn.close()
    answered = drive(url, lambda r: r.resume(first.run_id, "EU"))
    assert answered.reason is StopReason.SUCCESS and answered.output == "EU share: 40%"
    assert v1_agents.COUNTS == {"lookup": 1}  # the recorded lookup is not run again
    conn = sqlite3.connect(tmp_path / "runs.db")
    [(sql,)] = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'endstate_entries'").fetchall()
    assert "WITHOUT ROWID" in sql
    assert conn.execute("SELECT MAX(version) FROM endstate_schema").fetchone() == (latest_version("sqlite"),)
    assert conn.execute("SELECT COUNT(*) FROM endstate_entries").fetchone()[0] > len(rows)
    conn.close()


def _spelled(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as version-8 code wrote it: every field, those at their defaults too."""
    defaults = {
        "reply": {"cache_read_tokens": 0, "cache_write_tokens": 0, "response_id": ""},
        "result": {"is_error": False, "ran": None, "seen": ""},
        "stopped": {"limit": None, "note": ""},
    }
    return defaults.get(entry["type"], {}) | entry


OPENER = textwrap.dedent(
    """
    import json, sys
    from agent.durable.store import open_store
    print("ready", flush=True)
    sys.stdin.readline()  # all of them open the store at once
    store = open_store(sys.argv[1])
    runs = {r.run_id: len(store.snapshot(r.run_id).journal) for r in store.list_runs(limit=None)}
    print(json.dumps([store.schema_version(), runs]), flush=True)
    store.close()
    """
)


def test_a_version_1_store_opened_by_four_processes_at_once_is_upgraded_once(store_url: str) -> None:
    """Each process finds the store at version 3 and sets out to upgrade it: one does, the others
    wait for it and find the upgrade done; no journal entry is written twice, no run is lost."""
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, store_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    try:
        for opener in openers:
            assert opener.stdout is not None and opener.stdout.readline().strip() == "ready"
        for opener in openers:
            assert opener.stdin is not None
            opener.stdin.write("go\n")
            opener.stdin.flush()
        seen = [opener.communicate(timeout=120) for opener in openers]
    finally:
        for opener in openers:
            opener.kill() if opener.poll() is None else None
    assert [(o.returncode, err) for o, (_, err) in zip(openers, seen, strict=True)] == [(0, "")] * 4
    views = [json.loads(out) for out, _ in seen]
    version, journals = views[0]
    assert all(view == views[0] for view in views)  # every process read the same upgraded store
    assert version == latest_version("postgres" if store_url.startswith("postgresql") else "sqlite")
    assert journals == {"v1-question": 5, "v1-approval": 4, "v1-crashed": 3, "v1-cancelled": 6}
    v1_agents.COUNTS.clear()
    answered = drive(store_url, lambda r: r.resume("v1-question", "EU"))
    assert answered.reason is StopReason.SUCCESS and answered.output == "EU share: 40%"
    assert v1_agents.COUNTS == {}  # the recorded lookup is not run again


def test_runs_a_version_1_worker_claimed_with_an_answer_and_died_with_are_finished_with_that_answer(
    tmp_path: Path,
) -> None:
    """Version 1 stored the answer a run was claimed with (schema 2), so that whoever took the run
    over gave it again: a run claimed with "EU", and one claimed with an approval, whose worker died
    before its first checkpoint, are recovered after the upgrade with those answers."""
    rows = {r["run_id"]: dict(r) for r in json.loads(json.dumps(FIXTURE["rows"]))}
    dead = {"status": "running", "owner": "gone-host:1:dead", "lease_until": 1.0}  # its lease long over
    question = (
        rows["v1-question"] | dead | {"answer": "EU", "answered_at": rows["v1-question"]["suspended_at"] + 10}
    )
    approval = (
        rows["v1-approval"] | dead | {"approved": 1, "answered_at": rows["v1-approval"]["suspended_at"] + 10}
    )
    for backend in pg.BACKENDS:
        (tmp_path / backend).mkdir()
        url = pg.url_for(backend, tmp_path / backend)
        write_old_store(url, FIXTURE["schema_version"], [question, approval])
        v1_agents.COUNTS.clear()
        results = drive(url, lambda r: r.recover())
        assert sorted((r.run_id, r.reason, r.output) for r in results) == [
            ("v1-approval", StopReason.SUCCESS, "billed"),
            ("v1-question", StopReason.SUCCESS, "EU share: 40%"),
        ], backend
        assert v1_agents.COUNTS == {"send_invoice": 1}, backend  # the recorded lookups never ran again
