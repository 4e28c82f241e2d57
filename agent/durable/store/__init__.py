"""Durable runs: where runs, their snapshots and checkpoints live between processes.

`open_store(url)` opens one: a SQLite file (the default, `./.endstate/runs.db`
or `$ENDSTATE_STORE`) or a PostgreSQL database (`postgresql://...`). A SQLite
URL is `sqlite:///relative/runs.db` (three slashes: relative to the working
directory) or `sqlite:////absolute/runs.db` (four); a plain path works too.
"""

from __future__ import annotations

import os
from pathlib import Path

from agent._valid import seconds_in
from agent.durable.store.base import (
    DEFAULT_TIMEOUT,
    MAX_STORE_TIMEOUT,
    DamagedRun,
    Lease,
    LeaseLost,
    NewRun,
    NotClaimable,
    Outcome,
    RunExists,
    RunRecord,
    RunStatus,
    RunStore,
    StartingNow,
    StoreError,
    StoreTimeout,
    UnknownRun,
)
from agent.durable.store.urls import conninfo, mistyped_url, shown_url, sqlite_path
from agent.errors import ConfigError

DEFAULT_PATH = Path(".endstate") / "runs.db"
ENV_STORE = "ENDSTATE_STORE"
ENV_STORE_TIMEOUT = "ENDSTATE_STORE_TIMEOUT"

__all__ = [
    "DEFAULT_PATH",
    "DEFAULT_TIMEOUT",
    "DamagedRun",
    "ENV_STORE",
    "ENV_STORE_TIMEOUT",
    "MAX_STORE_TIMEOUT",
    "Lease",
    "LeaseLost",
    "NewRun",
    "NotClaimable",
    "Outcome",
    "RunExists",
    "StartingNow",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "StoreError",
    "StoreTimeout",
    "UnknownRun",
    "default_url",
    "open_store",
    "store_timeout",
]


def default_url() -> str:
    """`$ENDSTATE_STORE`, or the SQLite file `./.endstate/runs.db`."""
    return os.environ.get(ENV_STORE) or str(DEFAULT_PATH)


def store_timeout(value: float | str | None = None, name: str = "--store-timeout") -> float:
    """The seconds a store call may wait for its database server: `value` (given as `name`), else
    `$ENDSTATE_STORE_TIMEOUT`, else `DEFAULT_TIMEOUT`; a number above 0 and at most
    `MAX_STORE_TIMEOUT`, or a `ConfigError` naming where the bad value came from."""
    if value is None:
        value, name = os.environ.get(ENV_STORE_TIMEOUT) or DEFAULT_TIMEOUT, f"${ENV_STORE_TIMEOUT}"
    seconds = seconds_in(value, MAX_STORE_TIMEOUT)
    if seconds is None:
        raise ConfigError(
            f"{name} must be a number of seconds above 0 and at most {MAX_STORE_TIMEOUT:g} (how long a "
            f"store call may wait for the database server before it fails), not {str(value)[:40]!r}"
        )
    return seconds


def open_store(
    url: str | os.PathLike[str] | None = None, *, create: bool = True, timeout: float | str | None = None
) -> RunStore:
    """Open (and migrate) the store at `url`: `postgresql://...`, `sqlite:///path`, or a file path.

    A new SQLite store is made owner-only (its folder 0700, its file 0600). With
    `create=False` (commands that only read) a SQLite file that does not exist
    is a `StoreError` and nothing is created.

    `timeout` (see `store_timeout`) bounds each call: to a PostgreSQL server, connecting (unless
    the URL sets `connect_timeout`) and each statement; on a SQLite file, the wait for another
    process's lock and each statement. A store that does not answer in time fails the call with
    `StoreTimeout`.
    """
    seconds = store_timeout(timeout)  # checked for every store: a bad value is said at once
    url = url or default_url()
    if not isinstance(url, str | os.PathLike):
        raise StoreError(
            f"a store URL is a string (a file path, sqlite:///path or postgresql://...), not {url!r}"
        )
    url = os.fspath(url)
    if url.startswith(("postgresql://", "postgres://")):
        from agent.durable.store.postgres import PostgresStore

        return PostgresStore(url, seconds)
    path = sqlite_path(url)
    if path is None:
        raise StoreError(
            f"unknown store URL {shown_url(url)!r}: use a file path, sqlite:///relative/path, "
            "sqlite:////absolute/path or postgresql://..."
        )
    if path.is_dir():
        raise StoreError(
            f"the run store {path} is a folder, not a file: give the path of a file in it, "
            f"such as {path / 'runs.db'}"
        )
    if path.exists() and not path.is_file():  # SQLite said only "disk I/O error" of /dev/null
        raise StoreError(
            f"the run store {path} is not a regular file (a device, a pipe or a socket): give the path "
            "of a store file, such as runs.db"
        )
    if not path.exists():
        _refuse_conninfo(url)
        _refuse_options(url, path)
        _new_sqlite_file(path, create)
    from agent.durable.store.sqlite import SqliteStore

    return SqliteStore(str(path), seconds)


def _refuse_conninfo(url: str) -> None:
    """Refuse libpq's key=value form (`host=db user=u password=p dbname=runs`) and a URL whose `://`
    is mistyped (`postgresql:/u:p@h/db`): taken as a path, each made a SQLite file of that name, the
    password in it, and the runs went there, not to PostgreSQL."""
    if (shown := conninfo(url)) is not None:
        raise StoreError(
            f"the store {shown!r} is a libpq connection string (key=value), which Endstate does not take "
            "(nothing was created): write it as a URL, postgresql://user:password@host:port/dbname"
        )
    if (shown := mistyped_url(url)) is not None:
        raise StoreError(
            f"the store {shown!r} looks like a URL whose '://' is mistyped (nothing was created): write "
            "postgresql://user:password@host:port/dbname, or a file path (sqlite:///relative/runs.db)"
        )


def _refuse_options(url: str, path: Path) -> None:
    """Refuse a `sqlite:` URL with a query (`?mode=ro`, `?timeout=30`, as SQLAlchemy and SQLite URIs
    take) naming no store: its options would silently become part of a new file's name, and the
    runs go to a store no other command with the plain URL reads."""
    if url.startswith("sqlite:") and "?" in url:
        name, _, options = url.partition("?")
        raise StoreError(
            f"the SQLite store URL {url!r} has options ({options}), which Endstate does not take: with "
            f"them it names the file {str(path)!r}, and there is none (nothing was created). Give the "
            f"URL without them ({name}); the wait for a lock is --store-timeout"
        )


def _new_sqlite_file(path: Path, create: bool) -> None:
    if not create:
        raise StoreError(
            f"there is no run store at {path} (nothing was created). Check --store or $ENDSTATE_STORE: "
            "sqlite:///relative/runs.db is relative to the working directory, "
            "sqlite:////absolute/runs.db is absolute"
        )
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass  # made by another process meanwhile
    except OSError as exc:
        raise StoreError(f"cannot create the run store {path}: {exc.strerror or exc}") from exc
