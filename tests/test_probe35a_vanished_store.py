"""A SQLite store file deleted, moved or replaced while a process has it open (an operator's `rm`,
a restore that moves a backup over it, a volume remounted under the service): SQLite goes on writing
to the file it opened, which no other process sees and which is gone once this one exits. Each
such write said it was stored, and `/readyz` said ready, while every run started or answered since
was lost. Now every write, and `/readyz`, is refused with a message saying what happened and what to
do; nothing is written to the lost file.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from store_files import live_store, new_run, rm_store

from agent.durable.runner import Runner
from agent.durable.store import Lease, StoreError, open_store, sqlite
from agent.durable.store.sqlite import SqliteStore
from agent.examples.scenarios import example_catalog
from agent.service.app import Service, create_app
from agent.service.auth import Token

NOW = 1_800_000_000.0
LEASE = Lease("probe35a", 30.0)
TOKEN = "t" * 32
AUTH = {"Authorization": f"Bearer {TOKEN}"}
INVOICE = {
    "agent": "invoice-downloader",
    "task": "Get the invoice",
    "state": {"scenario": "invoice/which-one"},
}


def _main_deleted(path: Path) -> None:
    """`rm runs.db`: only the file goes (its -wal and -shm stay)."""
    path.unlink()


def _moved(path: Path) -> None:
    """`mv runs.db runs.old`: the file is still whole, under another name."""
    path.rename(path.with_name("runs.old"))


def _replaced(path: Path) -> None:
    """A backup moved over it (`mv backup.db runs.db`): another file under the same name."""
    backup = path.with_name("backup.db")
    shutil.copy(path, backup)
    rm_store(path)
    backup.rename(path)


GONE: dict[str, Callable[[Path], None]] = {
    "deleted": rm_store,
    "main-file-deleted": _main_deleted,
    "moved": _moved,
    "replaced": _replaced,
}


@pytest.mark.parametrize("how", GONE)
def test_a_write_to_a_store_file_gone_from_its_path_is_refused_saying_why(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(The store looks at its path every `FILE_CHECK_SECONDS`, a quarter of a second: here at each call.)"""
    path = tmp_path / "runs.db"
    with live_store(path, monkeypatch) as store:
        store.create(new_run("before"), LEASE, NOW)
        GONE[how](path)
        with pytest.raises(StoreError) as refused:
            store.create(new_run("after"), LEASE, NOW)
        message = str(refused.value)
        assert str(path) in message and "while this process had it open" in message, message
        assert "restart" in message and "nothing was changed" in message, message
        with pytest.raises(StoreError, match="while this process had it open"):
            store.answers()  # what /readyz asks
        with pytest.raises(StoreError, match="while this process had it open"):
            store.get("before")  # a read of the lost file says so too, not "disk I/O error"
    if path.exists():  # the file now at the path never got the run said to be stored
        again = open_store(str(path))
        try:
            assert again.get("after") is None
        finally:
            again.close()


def test_a_store_whose_file_is_in_place_is_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Touching, copying or reading the file beside the service changes nothing."""
    path = tmp_path / "runs.db"
    with live_store(path, monkeypatch) as store:
        store.create(new_run("one"), LEASE, NOW)
        os.utime(path)
        shutil.copy(path, tmp_path / "copy.db")
        store.create(new_run("two"), LEASE, NOW)
        store.answers()
        assert isinstance(store, SqliteStore)
        assert [r.run_id for r in store.list_runs()] == ["two", "one"]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[TestClient]:
    """A service over a SQLite store at tmp_path/runs.db, one run waiting."""
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, example_catalog(tmp_path / "worlds"))
    asyncio.run(runner.start(**INVOICE))
    app = create_app(Service(runner, Token(TOKEN), sweep_interval=3600))
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        yield client
    runner.catalog.close()
    store.close()


def test_the_service_is_not_ready_and_starts_nothing_once_its_store_file_was_deleted(
    service: TestClient, tmp_path: Path
) -> None:
    assert service.get("/readyz").text == "ready"
    rm_store(tmp_path / "runs.db")
    ready = service.get("/readyz")
    assert ready.status_code == 503 and "while this process had it open" in ready.text, ready.text
    started = service.post("/runs", json=INVOICE, headers=AUTH)
    assert started.status_code == 503, started.text
    error: Any = started.json()["error"]
    assert "while this process had it open" in error and "restart" in error, error


def test_a_store_file_put_back_where_it_was_is_served_again(tmp_path: Path) -> None:
    """Moved away and back (an operator's mistake undone): the store answers again, nothing lost."""
    path = tmp_path / "runs.db"
    with live_store(path) as store:
        store.create(new_run("kept"), LEASE, NOW)
        _moved(path)
        with pytest.raises(StoreError, match=f"it is now at {tmp_path / 'runs.old'}"):
            store.answers()
        (tmp_path / "runs.old").rename(path)
        store.answers()
        store.create(new_run("after"), LEASE, NOW)
        assert {r.run_id for r in store.list_runs()} == {"kept", "after"}


def test_a_store_opened_by_a_relative_path_is_not_refused_after_a_chdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool that changes the working directory (into a repository, say) moves no store: SQLite keeps
    the file it opened, and so does the check."""
    monkeypatch.setattr(sqlite, "FILE_CHECK_SECONDS", 0.0)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///runs.db")
    try:
        monkeypatch.chdir(tmp_path / "work")
        store.create(new_run("after-chdir"), LEASE, NOW)
        store.answers()
        assert [r.run_id for r in store.list_runs()] == ["after-chdir"]
    finally:
        store.close()
    assert not (tmp_path / "work" / "runs.db").exists()


def test_the_stores_folding_thread_works_on_the_store_after_a_chdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The thread that folds the write-ahead log connects at its first folding (after `FOLD_EVERY`
    commits): by the path the store was opened at, never a new `runs.db` in the working directory
    a tool moved to."""
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///runs.db")
    try:
        monkeypatch.chdir(tmp_path / "work")
        for i in range(sqlite.FOLD_EVERY + 1):
            store.create(new_run(f"r{i}"), LEASE, NOW)
    finally:
        store.close()  # after the folding under way
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == []
