"""svc42: a SQLite store that cannot be written says why and what to do, and loses no run.

Before, a store file that reached the process's file-size limit (`ulimit -f`, a container's or
systemd's LimitFSIZE) failed every write with SQLite's bare "disk I/O error", on every warning and
on the last line: nothing said that a limit was reached, which one, or what to do. Now the error says
the limit and the file that reached it (or that the disk is full), how to fix it, and that `endstate
recover` continues the run, which it then does.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_runner_agents import env_with_tests

from agent.durable.store import RunStatus, open_store
from agent.durable.store import sqlite as sqlite_store

LIMIT = 100_000  # bytes a file of the limited process may have: past the store of one run


def endstate(*args: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    """`endstate ARGS`, its files capped at `limit` bytes (Python ignores SIGXFSZ: a write past it
    fails with EFBIG, as SQLite sees it on a disk a limit caps)."""

    def capped() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env_with_tests(),
        preexec_fn=capped,
    )


def test_a_store_at_the_file_size_limit_says_so_and_recover_finishes_the_run(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    start = ["start", "csv-cleaner", "Clean it", "--scenario", "csv/clean", "--store", store]
    assert endstate(*start).returncode == 0  # the store made, with one run
    start[2] = "Clean it " + "x" * 30_000  # a task that makes the next run's writes pass the limit
    capped = endstate(*start, limit=LIMIT)
    assert capped.returncode == 2 and "Traceback" not in capped.stderr, capped.stderr
    last = capped.stderr.splitlines()[-1]
    assert last.startswith("endstate: the run store ") and "disk I/O error" in last
    assert f"may write files of at most {LIMIT} bytes (its file-size limit, `ulimit -f`" in last, last
    assert "raise the limit" in last and "`endstate recover` continues each run" in last
    recovered = endstate("recover", "--store", store)
    assert recovered.returncode == 0, recovered.stderr
    opened = open_store(store)
    try:
        runs = opened.list_runs()
    finally:
        opened.close()
    assert len(runs) == 2 and all(r.status is RunStatus.FINISHED for r in runs), runs  # none lost
    assert all(r.stop_reason == "success" for r in runs)


def test_a_full_disk_is_said_with_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    full = os.statvfs_result((4096, 4096, 1000, 0, 0, 100, 0, 0, 0, 255))  # no block free

    monkeypatch.setattr(sqlite_store.os, "statvfs", lambda path: full)
    error = sqlite3.OperationalError("database or disk is full")
    error.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
    hint = sqlite_store.write_hint(tmp_path / "runs.db", error)
    assert f"The file system holding {tmp_path} is full (0 bytes free): free space" in hint
    assert sqlite_store.write_hint(tmp_path / "runs.db", sqlite3.OperationalError("no such table")) == ""
