"""A SQLite store whose files are taken away under a live process (an operator's `rm`, a backup moved
over it): the set-up the tests of what the store then does share (probe35a vanished store, probe36c
side files, probe38c rescued store, probe39b rescue unlocked)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent.durable.store import NewRun, open_store, sqlite
from agent.durable.store.sqlite import SqliteStore

FILES = ("runs.db", "runs.db-wal", "runs.db-shm")  # a store's file, its write-ahead log, its index


def new_run(run_id: str) -> NewRun:
    return NewRun(run_id, "test-agent", "t", "default")


@contextmanager
def live_store(
    path: Path, monkeypatch: pytest.MonkeyPatch | None = None, looks: float = 0.0
) -> Iterator[SqliteStore]:
    """The store at `path`, open in this process for the block (closed after it, whatever happened);
    given `monkeypatch`, the store looks at its paths every `looks` seconds (`FILE_CHECK_SECONDS`:
    0, at every call)."""
    if monkeypatch is not None:
        monkeypatch.setattr(sqlite, "FILE_CHECK_SECONDS", looks)
    store = open_store(str(path))
    assert isinstance(store, SqliteStore)
    try:
        yield store
    finally:
        store.close()


def rm_store(path: Path) -> None:
    """`rm runs.db*`: the store's file, its write-ahead log and its index go."""
    for name in FILES:
        (path.parent / name).unlink(missing_ok=True)


def run_ids(path: Path) -> set[str]:
    """The ids of the runs the store at `path` holds, read by a store opened for this."""
    store = open_store(str(path))
    try:
        return {r.run_id for r in store.list_runs(limit=None)}
    finally:
        store.close()
