"""journal49: the run row records its journal's length, so a journal that lost its last entries is a
damaged run, not an earlier point to resume from.

The run row recorded no entry count: a run whose last journal entries were lost (a damaged file, a
row deleted by hand, an older backup of the entries restored) loaded as if whole, and resumed from an
earlier point, running a recorded tool call again. Every write of entries now records the length
with them (schema 15), and every read of the journal checks it: a shorter one is a `DamagedJournal`
(a 409 over HTTP) saying how to fix it. Rows from before schema 15 are read as before until their
next write records it. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_runner_agents import Crash, catalog, counted, counter_state, outlive_leases

from agent.durable.runner import Runner
from agent.durable.store import RunStatus, open_store
from agent.durable.store._sql import ENTRIES, TABLE, SqlStore
from agent.durable.store.base import DamagedJournal
from agent.result import RunResult, StopReason
from agent.service.http import status_of


def _sql(store_url: str, sql: str, params: tuple[object, ...] = ()) -> int:
    """Run one statement on the store as a hand edit would; the rows it changed."""
    store = open_store(store_url)
    try:
        assert isinstance(store, SqlStore)
        return store._count(sql, params)
    finally:
        store.close()


def _length(store_url: str, run_id: str) -> tuple[int | None, int]:
    """The journal length the run's row records, and the entries the store holds."""
    store = open_store(store_url)
    try:
        assert isinstance(store, SqlStore)
        record = store.get(run_id)
        assert record is not None
        held = store._rows(f"SELECT COUNT(*) AS n FROM {ENTRIES} WHERE run_id = ?", (run_id,))[0]["n"]
        return record.journal_length, int(held)
    finally:
        store.close()


def _crashed(store_url: str, folder: Path) -> str:
    """A `crash` counter run whose worker died after count(1..3); its lease has run out. Its id."""
    runner = Runner(open_store(store_url), catalog(), lease_seconds=600)
    try:
        with pytest.raises(Crash):
            asyncio.run(runner.start("counter", "c", state=counter_state(folder, "crash"), run_id="crashed"))
    finally:
        runner.store.close()
    assert outlive_leases(store_url, 601, runner.owner) == 1
    return "crashed"


def _drop_tail(store_url: str, run_id: str, entries: int) -> None:
    """Delete the run's last `entries` journal entries (an older backup restored, rows deleted)."""
    store = open_store(store_url)
    try:
        assert isinstance(store, SqlStore)
        held = int(store._rows(f"SELECT COUNT(*) AS n FROM {ENTRIES} WHERE run_id = ?", (run_id,))[0]["n"])
    finally:
        store.close()
    assert held > entries
    sql = f"DELETE FROM {ENTRIES} WHERE run_id = ? AND seq >= ?"
    assert _sql(store_url, sql, (run_id, held - entries)) == entries


def _waiting(store_url: str, folder: Path) -> RunResult:
    """A counter run started to wait for a person (its store closed after)."""
    runner = Runner(open_store(store_url), catalog())
    try:
        return asyncio.run(runner.start("counter", "c", state=counter_state(folder / "a", "ask")))
    finally:
        runner.store.close()


def test_every_write_of_entries_records_the_journal_length(store_url: str, tmp_path: Path) -> None:
    runner = Runner(open_store(store_url), catalog())
    try:
        asked = asyncio.run(runner.start("counter", "c", state=counter_state(tmp_path / "a", "ask")))
        assert asked.reason is StopReason.NEED_HELP  # its result, with its final snapshot
        recorded, held = _length(store_url, asked.run_id)
        assert recorded == held > 0
        assert asyncio.run(runner.resume(asked.run_id, "2")).reason is StopReason.SUCCESS  # checkpoints
        recorded_after, held_after = _length(store_url, asked.run_id)
        assert recorded_after == held_after > held
    finally:
        runner.store.close()


def test_a_crashed_run_whose_journal_lost_its_end_is_not_resumed_from_an_earlier_point(
    store_url: str, tmp_path: Path
) -> None:
    """Recovery read the shortened journal as whole and ran count(3) again: [1, 2, 3, 3, 4]."""
    folder = tmp_path / "run"
    run_id = _crashed(store_url, folder)
    _drop_tail(store_url, run_id, 2)  # count(3)'s call and its result
    runner = Runner(open_store(store_url), catalog())
    try:
        asyncio.run(runner.recover())
        assert counted(folder) == [1, 2, 3]  # no recorded call ran again
        record = runner.store.get(run_id)
        assert record is not None and record.status is RunStatus.FINISHED
        assert record.stop_reason is StopReason.ERROR
        assert "its last 2 are missing" in record.note, record.note
    finally:
        runner.store.close()


@pytest.mark.parametrize("lost", [1, 3])
def test_an_answer_to_a_waiting_run_whose_journal_lost_its_end_is_refused_409(
    store_url: str, tmp_path: Path, lost: int
) -> None:
    asked = _waiting(store_url, tmp_path)
    _drop_tail(store_url, asked.run_id, lost)
    runner = Runner(open_store(store_url), catalog())
    try:
        before = runner.store.get(asked.run_id)
        with pytest.raises(DamagedJournal) as refused:
            runner.store.snapshot(asked.run_id)
        said = str(refused.value)
        assert f"run {asked.run_id}: its journal ends after" in said and "nothing was changed" in said
        assert "restore" in said and f"`endstate end {asked.run_id}`" in said
        assert status_of(refused.value) == 409
        with pytest.raises(DamagedJournal):
            asyncio.run(runner.resume(asked.run_id, "2"))
        assert runner.store.get(asked.run_id) == before and counted(tmp_path / "a") == [1]
    finally:
        runner.store.close()


def test_a_row_from_before_the_length_was_recorded_reads_as_before_until_its_next_write(
    store_url: str, tmp_path: Path
) -> None:
    asked = _waiting(store_url, tmp_path)
    _sql(store_url, f"UPDATE {TABLE} SET journal_length = NULL WHERE run_id = ?", (asked.run_id,))
    runner = Runner(open_store(store_url), catalog())
    try:
        assert runner.store.snapshot(asked.run_id) is not None  # unchecked: nothing recorded
        assert asyncio.run(runner.resume(asked.run_id, "2")).reason is StopReason.SUCCESS
    finally:
        runner.store.close()
    recorded, held = _length(store_url, asked.run_id)
    assert recorded == held  # its next write recorded it


def test_endstate_end_ends_a_run_whose_journal_lost_its_end_as_its_message_says(
    store_url: str, tmp_path: Path
) -> None:
    asked = _waiting(store_url, tmp_path)
    _drop_tail(store_url, asked.run_id, 1)
    runner = Runner(open_store(store_url), catalog())
    try:
        ended = runner.end(asked.run_id)
        assert ended.reason is StopReason.ERROR
        record = runner.store.get(asked.run_id)
        assert record is not None and record.status is RunStatus.FINISHED
    finally:
        runner.store.close()
