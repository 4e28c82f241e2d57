"""Durable runs: where runs, their snapshots and checkpoints live between processes.

`open_store(url)` opens one: a SQLite file (the default, `./.endstate/runs.db`
or `$ENDSTATE_STORE`) or a PostgreSQL database (`postgresql://...`).
"""

from __future__ import annotations

import os
from pathlib import Path

from agent.store.base import (
    Lease,
    LeaseLost,
    NewRun,
    NotClaimable,
    Outcome,
    RunExists,
    RunRecord,
    RunStatus,
    RunStore,
    StoreError,
    UnknownRun,
)

DEFAULT_PATH = Path(".endstate") / "runs.db"
ENV_STORE = "ENDSTATE_STORE"

__all__ = [
    "DEFAULT_PATH",
    "ENV_STORE",
    "Lease",
    "LeaseLost",
    "NewRun",
    "NotClaimable",
    "Outcome",
    "RunExists",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "StoreError",
    "UnknownRun",
    "default_url",
    "open_store",
]


def default_url() -> str:
    """`$ENDSTATE_STORE`, or the SQLite file `./.endstate/runs.db`."""
    return os.environ.get(ENV_STORE) or str(DEFAULT_PATH)


def open_store(url: str | None = None) -> RunStore:
    """Open (and migrate) the store at `url`: `postgresql://...`, `sqlite:///path`, or a file path."""
    url = url or default_url()
    if url.startswith(("postgresql://", "postgres://")):
        from agent.store.postgres import PostgresStore

        return PostgresStore(url)
    if url.startswith("sqlite:"):  # sqlite:///relative.db, sqlite:////absolute.db, sqlite:path
        path = url.removeprefix("sqlite:")
        url = path[3:] if path.startswith("///") else path
    if "://" in url:
        raise StoreError(f"unknown store URL {url!r}: use a file path, sqlite:///path or postgresql://...")
    from agent.store.sqlite import SqliteStore

    return SqliteStore(url)
