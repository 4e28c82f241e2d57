"""A SQLite store's write-ahead log (`runs.db-wal`) or index (`runs.db-shm`) deleted while a process
has the store open (an operator who takes them for temporary files).

- The log: every commit since it was last folded into the file is only in the deleted log, which
  the process goes on writing to, and which is gone when it is killed: every such run was said to be
  stored and was lost (and a process opening the store failed with "disk I/O error").
- The index: the process keeps its own, which no process opening the store since shares: their
  writes overwrite each other, and when this process closed the store it folded its log by its own
  index and deleted it, so another process's write, said to be stored, was lost.
Now the log or index gone is found with the file at the next look at the paths (every
`FILE_CHECK_SECONDS`), or at close: the process writes no more and says why; what it wrote to a lost
log is folded into the file first, and it no longer folds its log at close.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from store_files import live_store, new_run, run_ids
from test_probe36c_commit_check import child_writes

from agent.durable.store import Lease, StoreError, sqlite

NOW = 1_800_000_000.0


def test_runs_written_before_the_log_was_deleted_survive_a_killed_process(tmp_path: Path) -> None:
    """(The log's path is looked at with the file's, every `FILE_CHECK_SECONDS`: here at each call.)"""
    path = tmp_path / "runs.db"
    said = child_writes(path, "Path(str(path) + '-wal').unlink()", looks=0.0)
    assert said.startswith("refused:"), said
    assert f"write-ahead log {path}-wal was deleted or replaced" in said, said
    assert "was folded into" in said and "nothing is lost" in said, said
    assert "Restart this process" in said, said
    assert run_ids(path) == {"before"}  # in the lost log only, folded into the file; "after" was refused


def _other_process_writes(path: Path, run_id: str) -> None:
    script = f"""
from agent.durable.store import Lease, NewRun, open_store
store = open_store({str(path)!r})
store.create(NewRun({run_id!r}, "test-agent", "t", "default"), Lease("b", 30.0), {NOW})
store.close()
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def test_another_processs_write_survives_this_process_after_the_index_was_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.db"
    # (the store's close, at the block's end, folded the log by this process's own index, and deleted it)
    with live_store(path, monkeypatch, looks=0.0) as store:
        store.create(new_run("before"), Lease("a", 30.0), NOW)
        Path(f"{path}-shm").unlink()
        _other_process_writes(path, "other")
        with pytest.raises(StoreError) as refused:
            store.create(new_run("after"), Lease("a", 30.0), NOW)
        message = str(refused.value)
        assert f"shared-memory index {path}-shm was deleted or replaced" in message, message
        assert "Restart this process" in message, message
        with pytest.raises(StoreError, match="shared-memory index"):
            store.get("before")  # every call, for good
    assert run_ids(path) == {"before", "other"}


def test_a_store_closed_after_its_index_was_deleted_keeps_another_processs_write(tmp_path: Path) -> None:
    """Closed with no call after the deletion (within a quarter of a second, say): the close looks."""
    path = tmp_path / "runs.db"
    with live_store(path) as store:
        store.create(new_run("before"), Lease("a", 30.0), NOW)
        Path(f"{path}-shm").unlink()
        _other_process_writes(path, "other")
    assert run_ids(path) == {"before", "other"}


def test_a_store_whose_files_stay_in_place_writes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Copying the store and its log beside it, and many commits (the log folded meanwhile), change
    nothing."""
    path = tmp_path / "runs.db"
    with live_store(path, monkeypatch, looks=0.0) as store:
        for i in range(sqlite.FOLD_EVERY + 5):
            store.create(new_run(f"r{i}"), Lease("a", 30.0), NOW)
            if i == 3:
                for end in ("", "-wal", "-shm"):
                    shutil.copy(f"{path}{end}", tmp_path / f"copy.db{end}")
        store.answers()
    assert len(run_ids(path)) == sqlite.FOLD_EVERY + 5


def test_a_log_found_gone_by_a_failing_call_is_said_and_its_runs_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process that opens the store after the log went fails ("disk I/O error") and leaves a
    new, empty log at the path; this process's next read failed with "disk I/O error" too, its next
    write was said to be stored, and at its close every run was gone. A failing call looks at the
    paths (as at close), so it says what happened, and the runs written so far are folded in."""
    path = tmp_path / "runs.db"
    with live_store(path, monkeypatch, looks=3600.0) as store:  # only a failing call, or the close, looks
        store.create(new_run("before"), Lease("a", 30.0), NOW)
        Path(f"{path}-wal").unlink()
        opens = f"from agent.durable.store import open_store; open_store({str(path)!r})"
        assert subprocess.run([sys.executable, "-c", opens], capture_output=True).returncode != 0
        with pytest.raises(StoreError) as refused:
            store.get("before")
        message = str(refused.value)
        assert f"write-ahead log {path}-wal was deleted or replaced" in message, message
        assert "nothing is lost" in message, message
        with pytest.raises(StoreError, match="write-ahead log"):
            store.create(new_run("after"), Lease("a", 30.0), NOW)
    assert run_ids(path) == {"before"}
