"""A SQLite store file deleted (or replaced) under a running process (probe38c): the runs it held live
only in the unlinked file this process still has open, gone once it exits. The store copies that file,
as this process reads it, to `runs.db.rescued-<pid>-<time>` beside it and says how to restore it."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest
from store_files import live_store, new_run, rm_store, run_ids

from agent.durable.store import Lease, StoreError, open_store

NOW = 1_800_000_000.0
LEASE = Lease("probe38c", 30.0)


def _rescued(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"runs.db.rescued-{os.getpid()}-*"))


def test_a_write_to_a_deleted_store_is_rescued_with_every_run_and_restores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """(No look at the path between calls: the write that commits to the unlinked file finds it.)"""
    path = tmp_path / "runs.db"
    with live_store(path, monkeypatch, looks=3600.0) as store:
        store.create(new_run("before"), LEASE, NOW)
        rm_store(path)
        with caplog.at_level(logging.ERROR, "endstate.store"), pytest.raises(StoreError) as refused:
            store.create(new_run("after"), LEASE, NOW)
        [copy] = _rescued(tmp_path)
        message = str(refused.value)
        assert f"this write too, is saved in {copy}" in message and f"mv {copy} {path}" in message, message
        assert f"mv {copy} {path}" in caplog.text, caplog.text
        with pytest.raises(StoreError, match="saved in"):
            store.get("before")
    assert _rescued(tmp_path) == [copy]  # once, not again at each call or at close
    copy.rename(path)  # the restore the message says
    assert run_ids(path) == {"before", "after"}


def test_a_store_deleted_before_a_call_is_rescued_with_the_runs_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    with live_store(path, monkeypatch, looks=0.0) as store:
        store.create(new_run("one"), LEASE, NOW)
        store.create(new_run("two"), LEASE, NOW)
        rm_store(path)
        with pytest.raises(StoreError, match="nothing was changed") as refused:
            store.create(new_run("three"), LEASE, NOW)
        [copy] = _rescued(tmp_path)
        assert str(copy) in str(refused.value)
    assert run_ids(copy) == {"one", "two"}


def test_a_store_replaced_under_the_process_is_rescued_and_the_new_file_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    other = open_store(str(tmp_path / "other.db"))
    other.create(new_run("theirs"), LEASE, NOW)
    other.close()
    with live_store(path, monkeypatch) as store:
        store.create(new_run("ours"), LEASE, NOW)
        rm_store(path)
        (tmp_path / "other.db").rename(path)  # a backup put in its place
        with pytest.raises(StoreError, match="replaced by another file"):
            store.answers()
    [copy] = _rescued(tmp_path)
    assert (run_ids(copy), run_ids(path)) == ({"ours"}, {"theirs"})


def test_a_moved_store_is_not_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Moved, the file still has a name (the message says where): nothing to rescue."""
    path = tmp_path / "runs.db"
    with live_store(path, monkeypatch, looks=0.0) as store:
        store.create(new_run("kept"), LEASE, NOW)
        shutil.move(path, tmp_path / "runs.old")
        with pytest.raises(StoreError, match="it is now at"):
            store.answers()
    assert _rescued(tmp_path) == []
