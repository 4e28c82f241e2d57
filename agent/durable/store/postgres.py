"""The run store for many workers: PostgreSQL through psycopg 3."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agent.durable.store._sql import ENTRIES, SCHEMA_TABLE, TABLE, Row, SqlStore, assign
from agent.durable.store.base import Lease, RunStatus, StoreError, WriteRefused
from agent.durable.store.urls import scrub, shown_url

MIGRATION_LOCK = 7_260_401  # pg_advisory_xact_lock key: one migrator at a time


class PostgresStore(SqlStore):
    """`RunStore` in PostgreSQL; claims are single `UPDATE ... RETURNING` statements.

    One connection per store object (autocommit), guarded by a lock. A broken
    connection (a restarted server, a dropped socket) is replaced: a statement
    that is safe to repeat (reads, checkpoints, heartbeats) is sent again on the
    new one; any other fails with `StoreError`, and the next call reconnects.
    """

    dialect = "postgres"

    def __init__(self, url: str, connect_timeout: float = 10.0) -> None:
        try:
            import psycopg  # noqa: F401  (optional dependency, checked here)
        except ImportError as exc:
            raise StoreError("a postgresql:// store needs psycopg: pip install 'psycopg[binary]'") from exc
        self.url = url
        self.shown = shown_url(url)
        self._timeout = connect_timeout
        self._lock = threading.RLock()
        self._in_tx = False
        self._conn: Any = self._connect()
        try:
            self._prepare()
        except BaseException:
            self._conn.close()
            raise

    def _connect(self) -> Any:
        import psycopg
        from psycopg.rows import dict_row

        try:
            return psycopg.connect(
                self.url, autocommit=True, row_factory=dict_row, connect_timeout=int(self._timeout)
            )
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot connect to the PostgreSQL run store {self.shown}: {scrub(str(exc), self.url)}"
            ) from exc

    def _prepare(self) -> None:
        with self._tx():
            self._rows("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            self._rows(
                f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} "
                "(version INTEGER NOT NULL, applied_at DOUBLE PRECISION)"
            )
            self._apply_migrations()

    def _append(
        self, run_id: str, values: dict[str, Any], entries: list[tuple[int, str]], lease: Lease
    ) -> bool:
        """One statement (one round trip, safe to resend): update the row if held, add the entries."""
        sql = (
            f"WITH held AS (UPDATE {TABLE} SET {assign(values)}, checkpoints = checkpoints + 1 "
            "WHERE run_id = ? AND owner = ? AND status = ? RETURNING run_id)"
        )
        if entries:
            rows = ", ".join("(?::integer, ?::text)" for _ in entries)
            sql += (
                f", added AS (INSERT INTO {ENTRIES} (run_id, seq, entry) SELECT held.run_id, v.seq, v.entry "
                f"FROM held, (VALUES {rows}) AS v (seq, entry) ON CONFLICT DO NOTHING RETURNING 1)"
            )
        params = [*values.values(), run_id, lease.owner, RunStatus.RUNNING, *(x for e in entries for x in e)]
        return int(self._rows(sql + " SELECT COUNT(*) AS n FROM held", params, retry=True)[0]["n"]) == 1

    def _execute(self, sql: str, params: Sequence[Any], retry: bool) -> Any:
        with self._lock:
            try:
                return self._send(sql, params)
            except StoreError:
                if not (retry and self._conn.broken and not self._in_tx):
                    raise
            return self._send(sql, params)  # the connection broke: once more, on a new one

    def _send(self, sql: str, params: Sequence[Any]) -> Any:
        import psycopg

        if self._conn.closed or self._conn.broken:
            self._conn = self._connect()
        try:
            return self._conn.execute(
                sql.replace("?", "%s"), tuple(map(storable, params)) if params else None
            )
        except psycopg.errors.IntegrityError as exc:
            raise WriteRefused(f"the run store refused a write: {exc}") from exc
        except psycopg.Error as exc:
            raise StoreError(
                f"the PostgreSQL run store {self.shown} failed: {scrub(str(exc), self.url)}"
            ) from exc

    def _rows(self, sql: str, params: Sequence[Any] = (), retry: bool = False) -> list[Row]:
        with self._lock:
            cur = self._execute(sql, params, retry)
            return list(cur.fetchall()) if cur.description else []

    def _count(self, sql: str, params: Sequence[Any] = (), retry: bool = False) -> int:
        with self._lock:
            return int(self._execute(sql, params, retry).rowcount)

    @contextmanager
    def _tx(self) -> Iterator[None]:
        import psycopg

        with self._lock:
            if self._conn.closed or self._conn.broken:
                self._conn = self._connect()
            try:
                with self._conn.transaction():
                    self._in_tx = True
                    yield
            except psycopg.Error as exc:  # BEGIN or COMMIT on a connection that broke
                raise StoreError(
                    f"the PostgreSQL run store {self.shown} failed: {scrub(str(exc), self.url)}"
                ) from exc
            finally:
                self._in_tx = False

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def storable(value: Any) -> Any:
    """PostgreSQL text cannot hold NUL: in plain text columns it becomes U+FFFD.

    (JSON columns are unaffected: their NULs are escaped as \\u0000 before they get here.)
    """
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value
