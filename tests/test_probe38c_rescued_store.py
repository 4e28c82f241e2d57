"""A SQLite store file deleted (or replaced) under a running process (probe38c): the runs it held live
only in the unlinked file this process still has open, gone once it exits. The store copies that file,
as this process reads it, to `runs.db.rescued-<pid>-<time>` beside it and says how to restore it."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest

from agent.durable.store import Lease, NewRun, StoreError, open_store, sqlite

NOW = 1_800_000_000.0
LEASE = Lease("probe38c", 30.0)
FILES = ("runs.db", "runs.db-wal", "runs.db-shm")


def _new(run_id: str) -> NewRun:
    return NewRun(run_id, "test-agent", "t", "default")


def _rm(path: Path) -> None:
    for name in FILES:
        (path.parent / name).unlink(missing_ok=True)


def _rescued(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"runs.db.rescued-{os.getpid()}-*"))


def _ids(path: Path) -> set[str]:
    store = open_store(str(path))
    try:
        return {r.run_id for r in store.list_runs()}
    finally:
        store.close()


def test_a_write_to_a_deleted_store_is_rescued_with_every_run_and_restores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """(No look at the path between calls: the write that commits to the unlinked file finds it.)"""
    monkeypatch.setattr(sqlite, "FILE_CHECK_SECONDS", 3600.0)
    path = tmp_path / "runs.db"
    store = open_store(str(path))
    try:
        store.create(_new("before"), LEASE, NOW)
        _rm(path)
        with caplog.at_level(logging.ERROR, "endstate.store"), pytest.raises(StoreError) as refused:
            store.create(_new("after"), LEASE, NOW)
        [copy] = _rescued(tmp_path)
        message = str(refused.value)
        assert f"this write too, is saved in {copy}" in message and f"mv {copy} {path}" in message, message
        assert f"mv {copy} {path}" in caplog.text, caplog.text
        with pytest.raises(StoreError, match="saved in"):
            store.get("before")
    finally:
        store.close()
    assert _rescued(tmp_path) == [copy]  # once, not again at each call or at close
    copy.rename(path)  # the restore the message says
    assert _ids(path) == {"before", "after"}


def test_a_store_deleted_before_a_call_is_rescued_with_the_runs_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite, "FILE_CHECK_SECONDS", 0.0)
    path = tmp_path / "runs.db"
    store = open_store(str(path))
    try:
        store.create(_new("one"), LEASE, NOW)
        store.create(_new("two"), LEASE, NOW)
        _rm(path)
        with pytest.raises(StoreError, match="nothing was changed") as refused:
            store.create(_new("three"), LEASE, NOW)
        [copy] = _rescued(tmp_path)
        assert str(copy) in str(refused.value)
    finally:
        store.close()
    assert _ids(copy) == {"one", "two"}


def test_a_store_replaced_under_the_process_is_rescued_and_the_new_file_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite, "FILE_CHECK_SECONDS", 0.0)
    path = tmp_path / "runs.db"
    other = open_store(str(tmp_path / "other.db"))
    other.create(_new("theirs"), LEASE, NOW)
    other.close()
    store = open_store(str(path))
    try:
        store.create(_new("ours"), LEASE, NOW)
        _rm(path)
        (tmp_path / "other.db").rename(path)  # a backup put in its place
        with pytest.raises(StoreError, match="replaced by another file"):
            store.answers()
    finally:
        store.close()
    [copy] = _rescued(tmp_path)
    assert (_ids(copy), _ids(path)) == ({"ours"}, {"theirs"})


def test_a_moved_store_is_not_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Moved, the file still has a name (the message says where): nothing to rescue."""
    monkeypatch.setattr(sqlite, "FILE_CHECK_SECONDS", 0.0)
    path = tmp_path / "runs.db"
    store = open_store(str(path))
    try:
        store.create(_new("kept"), LEASE, NOW)
        shutil.move(path, tmp_path / "runs.old")
        with pytest.raises(StoreError, match="it is now at"):
            store.answers()
    finally:
        store.close()
    assert _rescued(tmp_path) == []
