"""Something standing where a SQLite store needs a file: a folder named `runs.db-wal` or `runs.db-shm`
(SQLite keeps its write-ahead log and shared memory there), or a store path that is a symbolic link
to a folder that does not exist. SQLite says only "unable to open database file" or, for the shared
memory, "attempt to write a readonly database" (it is not read-only); the message now names what is
in the way and how to clear it, from the store and from the command line (exit 2).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_service_support import endstate

from agent.durable.store import Lease, NewRun, StoreError, open_store

LEASE = Lease("probe35a", 30.0)


def _stored(path: Path) -> None:
    """A store at `path` with one run, closed (its -wal and -shm files gone with it)."""
    store = open_store(str(path))
    store.create(NewRun("kept", "test-agent", "t", "default"), LEASE, time.time())
    store.close()


@pytest.mark.parametrize(("side", "what"), [("-wal", "write-ahead log"), ("-shm", "shared memory")])
def test_a_folder_where_sqlite_keeps_a_file_beside_the_store_is_named_with_the_fix(
    tmp_path: Path, side: str, what: str
) -> None:
    path = tmp_path / "runs.db"
    _stored(path)
    blocker = tmp_path / f"runs.db{side}"
    blocker.mkdir()
    with pytest.raises(StoreError) as refused:  # at the open, or at the first write
        store = open_store(str(path))
        try:
            store.create(NewRun("new", "test-agent", "t", "default"), LEASE, time.time())
        finally:
            store.close()
    message = str(refused.value)
    assert f"{blocker} is a folder, where SQLite keeps the store's {what}: move it away" in message, message
    blocker.rmdir()
    store = open_store(str(path))  # moved away: the store is whole
    try:
        assert [r.run_id for r in store.list_runs()] == ["kept"]
    finally:
        store.close()


def test_pending_says_the_write_ahead_log_is_a_folder_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    _stored(path)
    (tmp_path / "runs.db-wal").mkdir()
    done = endstate("pending", store=str(path))
    assert done.returncode == 2, done.stderr
    assert "runs.db-wal is a folder" in done.stderr and "move it away" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_store_path_linked_to_a_missing_folder_says_so(tmp_path: Path) -> None:
    link = tmp_path / "runs.db"
    link.symlink_to(tmp_path / "gone" / "runs.db")
    with pytest.raises(StoreError) as refused:
        open_store(str(link))
    message = str(refused.value)
    assert f"is a symbolic link to {tmp_path / 'gone' / 'runs.db'}, which does not exist" in message, message
    assert "fix the link" in message
