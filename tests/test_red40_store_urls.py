"""red40: a libpq key=value connection string given as the store is refused, never made a file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.durable.store import StoreError, open_store

CONNINFO = "host=127.0.0.1 port=5432 dbname=runs user=endstate password=s3cret-Q"
SAYS = "is a libpq connection string (key=value), which Endstate does not take (nothing was created)"


@pytest.mark.parametrize(
    "command", [["start", "csv-cleaner", "Clean it", "--scenario", "csv/clean"], ["runs"]]
)
def test_a_conninfo_store_is_refused_without_its_password(tmp_path: Path, command: list[str]) -> None:
    """Before: `endstate start ... --store 'host=db ... password=p'` ran the agent on a new SQLite file
    of that name in the working directory (the password in its name), not on PostgreSQL."""
    env = {**os.environ, "ENDSTATE_WORLDS": str(tmp_path / "worlds")}
    argv = [sys.executable, "-m", "agent.cli", *command, "--store", CONNINFO]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert SAYS in done.stderr and "password=***" in done.stderr and "s3cret" not in done.stderr
    assert "postgresql://user:password@host:port/dbname" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "worlds") == []


def test_a_store_file_of_such_a_name_that_exists_still_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError, match="libpq connection string"):
        open_store("dbname=runs")
    open_store("runs.db").close()
    Path("runs.db").rename("dbname=runs")
    store = open_store("dbname=runs", create=False)
    try:
        assert store.list_runs(None, 5) == []
    finally:
        store.close()


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("postgresql:/endstate:s3cret-Q@db/runs", "postgresql:/endstate:***@db/runs"),
        ("postgresql//endstate:s3cret-Q@db/runs", "postgresql//endstate:***@db/runs"),
        ("postgres:endstate:s3cret-Q@db/runs", "postgres:endstate:***@db/runs"),
        ("mysql:/db/runs", "mysql:/db/runs"),
    ],
)
def test_a_url_with_its_scheme_mistyped_is_refused(tmp_path: Path, given: str, shown: str) -> None:
    """Before: `--store postgresql:/u:p@db/runs` ran the agent on a SQLite file in new folders named
    `postgresql:/u:p@db`, the password in one."""
    env = {**os.environ, "ENDSTATE_WORLDS": str(tmp_path / "worlds")}
    argv = [sys.executable, "-m", "agent.cli", "start", "csv-cleaner", "Clean it", "--scenario", "csv/clean"]
    done = subprocess.run(
        [*argv, "--store", given], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert (
        f"the store {shown!r} looks like a URL whose '://' is mistyped (nothing was created)" in done.stderr
    )
    assert "s3cret" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "worlds") == []


@pytest.mark.parametrize("path", ["runs.db", "runs:old.db", "postgres/runs.db", "C:x"])
def test_paths_that_only_look_odd_are_still_stores(
    tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    open_store(path).close()
    assert Path(path).is_file()
