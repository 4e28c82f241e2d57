"""The copy of a SQLite store file deleted under a live process (probe39b) is made without the
writer's lock: a call on the writer that hangs (here: waiting for another connection's write lock)
neither holds up the copy nor is held up by it, and a write that commits after the copy began is
copied too, so the copy holds every write the process was told was stored."""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from store_files import new_run, rm_store, run_ids

from agent.durable.store import Lease, StoreError, sqlite

NOW = 1_800_000_000.0
LEASE = Lease("probe39b", 30.0)


def _until(condition: Callable[[], bool]) -> None:
    """Wait (at most 10 s) for `condition()` to hold: a look every few milliseconds."""
    give_up, pause = time.monotonic() + 10, threading.Event()
    while not condition() and time.monotonic() < give_up:
        pause.wait(0.005)
    assert condition(), "the condition never held"


def test_a_deleted_store_is_copied_while_a_write_hangs_and_the_write_landing_after_is_copied_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite, "FILE_CHECK_SECONDS", 0.0)
    path = tmp_path / "runs.db"
    store = sqlite.SqliteStore(path, timeout=20.0)  # (a write waits this long for another's lock)
    other = sqlite3.connect(path, isolation_level=None)
    outcome: list[BaseException | None] = []
    try:
        store.create(new_run("before"), LEASE, NOW)
        assert store.get("before") is not None  # a process reads as it goes
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock: the next write waits

        def write() -> None:
            try:
                store.create(new_run("late"), LEASE, NOW)
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        _until(lambda: store.waited() > 0)  # the write holds the writer's lock, waiting
        rm_store(path)
        with pytest.raises(StoreError, match="saved in") as refused:
            store.get("before")
        assert writer.is_alive() and outcome == []  # the copy did not wait for the hanging write
        [copy] = tmp_path.glob(f"runs.db.rescued-{os.getpid()}-*")
        assert str(copy) in str(refused.value)
        other.execute("ROLLBACK")  # the write goes on, into the deleted file
        writer.join(30)
        [late] = outcome
        assert isinstance(late, StoreError) and f"this write too, is saved in {copy}" in str(late), late
    finally:
        other.close()
        store.close()
    assert list(tmp_path.glob(f"runs.db.rescued-{os.getpid()}-*")) == [copy]
    copy.rename(path)
    assert run_ids(path) == {"before", "late"}


def test_a_read_that_fails_on_a_deleted_store_copies_it_without_waiting_for_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader had not read yet (a process that only wrote): its read of the deleted file fails,
    and the look that failure makes copies the file by the writer, without waiting out the call's
    allowance for the reader's lock, which that very call holds."""
    monkeypatch.setattr(sqlite, "FILE_CHECK_SECONDS", 3600.0)  # no look but the failing call's
    path = tmp_path / "runs.db"
    store = sqlite.SqliteStore(path, timeout=30.0)
    try:
        store.create(new_run("before"), LEASE, NOW)
        rm_store(path)
        began = time.monotonic()
        with pytest.raises(StoreError, match="saved in") as refused:
            store.get("before")
        assert time.monotonic() - began < store.timeout / 2
        [copy] = tmp_path.glob(f"runs.db.rescued-{os.getpid()}-*")
        assert str(copy) in str(refused.value)
    finally:
        store.close()
    assert run_ids(copy) == {"before"}


def _waits_for_the_writer(thread: threading.Thread) -> bool:
    """True when `thread` is in a store call, past its look at the path, waiting for the writer's
    lock (its innermost frame is the call's entry, in the lock's C code)."""
    frame = sys._current_frames().get(thread.ident or 0)
    return (
        frame is not None
        and frame.f_code.co_name == "__enter__"
        and frame.f_code.co_filename == sqlite.__file__
    )


def test_a_write_that_waited_for_the_writer_while_the_file_was_copied_is_in_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writes in flight when the file is deleted: the first copies it; the second, which had
    looked at the path before and waited for the writer's lock, lands after the copy. It was told it
    was saved in the copy, which lacked it (gone when the process exited); now it copies it again."""
    monkeypatch.setattr(sqlite, "FILE_CHECK_SECONDS", 3600.0)  # the writes find it as they commit
    path = tmp_path / "runs.db"
    store = sqlite.SqliteStore(path, timeout=20.0)
    other = sqlite3.connect(path, isolation_level=None)
    outcome: dict[str, BaseException | None] = {}

    def write(run_id: str) -> None:
        try:
            store.create(new_run(run_id), LEASE, NOW)
            outcome[run_id] = None
        except BaseException as exc:
            outcome[run_id] = exc

    try:
        store.create(new_run("before"), LEASE, NOW)
        other.execute("BEGIN IMMEDIATE")  # the first write waits for it, holding the writer's lock
        first, second = (threading.Thread(target=write, args=(r,)) for r in ("first", "second"))
        first.start()
        _until(lambda: store.waited() > 0)
        second.start()
        _until(lambda: _waits_for_the_writer(second))
        rm_store(path)
        other.execute("ROLLBACK")
        first.join(30)
        second.join(30)
    finally:
        other.close()
        store.close()
    [copy] = tmp_path.glob(f"runs.db.rescued-{os.getpid()}-*")
    for run_id in ("first", "second"):
        assert f"this write too, is saved in {copy}" in str(outcome[run_id]), outcome
    assert run_ids(copy) == {"before", "first", "second"}
