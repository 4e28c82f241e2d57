"""The run store for many workers: PostgreSQL through psycopg 3."""

from __future__ import annotations

import functools
import hashlib
import math
import select
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agent.durable.store._deadline import CUT_AFTER, MIGRATION_SECONDS, Watch, Watchdog
from agent.durable.store._sql import (
    ENTRIES,
    ENTRY_ROWS,
    SCHEMA_TABLE,
    TABLE,
    Row,
    SqlStore,
    checkpoint_rows,
    checkpoint_update,
    latest_version,
    lease_lost,
    log,
)
from agent.durable.store.base import (
    DEFAULT_TIMEOUT,
    Lease,
    RunStatus,
    StartingNow,
    StoreError,
    StoreTimeout,
    WriteRefused,
    column_text,
)
from agent.durable.store.urls import MASK, scrub, secrets_in, shown_url, take_option
from agent.snapshot import Checkpoint

MIGRATION_LOCK = 7_260_401  # pg_advisory_xact_lock key: one migrator at a time
STARTING = b"endstate start "  # a run id's advisory lock key while a start holds it: see `starting`
# How long a statement waits for a lock another session holds (an operator's open transaction, say),
# unless the server, the role or the URL sets lock_timeout: then a StoreError, not a wait without end
# (a claim waited on the service's event loop, and the whole service with it).
LOCK_TIMEOUT = "5s"
LOCK_NOT_AVAILABLE = "55P03"
STATEMENT_TIMED_OUT = "57014"  # query_canceled: statement_timeout, or a cancel request
READ_ONLY = "25006"  # read_only_sql_transaction: a standby, or default_transaction_read_only on
# A named prepared statement missing (26000) or already there (42P05): a pooler in transaction mode
# gave the statement another client's server connection.
PREPARED_ELSEWHERE = ("26000", "42P05")
UNTRANSLATABLE = "22P05"  # a character the database's encoding (LATIN1, say) has no place for
NO_PRIVILEGE = "42501"  # insufficient_privilege: a role that may not create, or read or write, a table
GRANT = "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}"
# Endstate's own URL option (taken out before libpq reads the URL): `?pool_mode=transaction` when a
# pooler (PgBouncer's `pool_mode = transaction`) gives each transaction any server connection.
POOL_MODE = "pool_mode"
POOL_MODES = ("session", "transaction")
POOL_FULL = (
    ", or a pooler whose server connections are all taken: each start being prepared holds one, so give "
    "its pool more (PgBouncer's default_pool_size) than the starts prepared at once"
)
# TCP keepalives and the user timeout, unless the URL sets them: an idle connection to a peer that
# vanished (no RST) is found dead within about a minute, and one whose sent data is not acknowledged
# within `TCP_USER_TIMEOUT_MS` is closed by the kernel.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}
TCP_USER_TIMEOUT_MS = 30_000
# The server's clock, which every worker's lease is set and judged by (not the worker's own clock):
# the time at the statement, not the transaction's start (`now()`).
CLOCK = "EXTRACT(EPOCH FROM clock_timestamp())::double precision"
# At the end of a migration that changed the schema, in its transaction: the leases that were live
# when it began (it took the migration lock at `?`) get back the time it held the runs table, in which
# no worker could renew them, so a migration longer than a lease has no run taken over from a live
# worker the moment it commits.
GIVE_LEASES_BACK = (
    f"UPDATE {TABLE} SET lease_until = lease_until + ({CLOCK} - ?) WHERE status = ? AND lease_until > ?"
)


class PostgresStore(SqlStore):
    """`RunStore` in PostgreSQL; claims are single `UPDATE ... RETURNING` statements.

    One connection per store object (autocommit), guarded by a lock. A broken
    connection (a restarted server, a dropped socket) is replaced: a statement
    that is safe to repeat (reads, checkpoints, heartbeats) is sent again on the
    new one; any other fails with `StoreError`, and the next call reconnects.

    Every call waits at most `timeout` seconds (plus `CUT_AFTER`): connecting, and each statement
    or transaction. A server that stops answering without closing the connection has it cut, and
    the call fails with `StoreTimeout` (not sent again: the same server would keep it waiting as
    long); the next call connects anew. See `connect_options` for the keepalives.
    """

    dialect = "postgres"
    clock = CLOCK
    octets = "octet_length({})"
    waiting_order = "suspended_at NULLS FIRST, run_id"  # as the index of schema 10 keeps them

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        try:
            import psycopg  # noqa: F401  (optional dependency, checked here)
        except ImportError as exc:
            raise StoreError("a postgresql:// store needs psycopg: pip install 'psycopg[binary]'") from exc
        self.shown = shown_url(url)
        self.url, self.pooled = pool_mode(url, self.shown)
        self.timeout = timeout
        self._options = connect_options(self.url, self.shown, timeout)
        self._watchdog = Watchdog(timeout + CUT_AFTER)
        self._allowance = timeout + CUT_AFTER  # per call (longer while migrating: see `_prepare`)
        self._lock = threading.RLock()
        self._in_tx = False
        self._shut = False  # closed: no call connects again (a late write would leak its connection)
        self._conn: Any = self._connect()
        self._sender = _Sender(self.url, self.shown, self._options, self._watchdog, self.pooled)
        try:
            self._prepare()
            if self.pooled:
                self._say_unbounded()
        except BaseException:
            self._conn.close()
            self._watchdog.close()
            raise

    def _connect(self) -> Any:
        import psycopg
        from psycopg.rows import dict_row

        conn = connect(self.url, self.shown, self._options, row_factory=dict_row)
        conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED  # its transactions (`_tx`), pooled too
        with self._watchdog.socket_call(conn.pgconn.socket, self.timeout + CUT_AFTER) as watch:
            try:
                return conn if self.pooled else bounded(conn, self.timeout)
            except psycopg.Error as exc:
                conn.close()
                raise failure(exc, watch, self.shown, self.url, self.pooled) from exc

    def _prepare(self) -> None:
        """Migrate the schema if it is behind, one process at a time. Its statements get
        `MIGRATION_SECONDS` each (they may wait for another process's migration, or build an index
        over every run); a store already up to date is known from one read within the timeout."""
        if self._up_to_date():
            return
        allowance, self._allowance = self._allowance, MIGRATION_SECONDS
        try:
            self._migrate()
        except StoreError as exc:
            if sqlstate_of(exc.__cause__) != NO_PRIVILEGE:
                raise
            raise StoreError(self._may_not_migrate(exc.__cause__)) from exc
        finally:
            self._allowance = allowance

    def _may_not_migrate(self, cause: BaseException | None) -> str:
        """What to do when the store's role may not migrate its schema (a least-privilege app role, its
        tables made by their owner): open it once as the owner, then grant the role the new tables."""
        found = self._rows(
            "SELECT current_user AS role, current_schema() AS schema, to_regclass(?) IS NOT NULL AS e",
            (SCHEMA_TABLE,),
        )[0]
        role, schema = found["role"], found["schema"]
        where = "it has no tables yet"
        if found["e"]:
            where = f"its tables are at schema version {self.schema_version()}, and this Endstate needs "
            where += str(latest_version(self.dialect))
        return (
            f"the PostgreSQL run store {self.shown}: the role {role!r} may not migrate it ({where}; "
            f"{said(str(cause), self.url)}). "
            "Nothing was changed. Open it once with this Endstate as the role that owns its tables (or may "
            "create them): any command migrates it, `endstate runs --store 'postgresql://OWNER@HOST/DB'`. "
            f"Then give {role} the tables a migration made: {GRANT.format(schema=schema, role=role)} (as "
            f"the owner, ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT SELECT, INSERT, UPDATE, DELETE "
            f"ON TABLES TO {role} grants the tables of later migrations too)"
        )

    def _say_unbounded(self) -> None:
        """Behind a pooler in transaction mode the store sets no session setting (see `bounded`): warn
        when the role or database leaves one it would set otherwise, naming the ALTER ROLE that sets
        it. Without them a statement whose call was cut after --store-timeout may still run, and land,
        and under repeatable read a claim that waited for a row fails where it would read it anew."""
        row = self._rows(
            "SELECT current_user AS role, current_setting('statement_timeout') AS st, "
            "current_setting('lock_timeout') AS lt, current_setting('default_transaction_isolation') AS iso"
        )[0]
        wanted = [
            ("statement_timeout", f"{self.timeout:g}s", row["st"] == "0"),
            ("lock_timeout", LOCK_TIMEOUT, row["lt"] == "0"),
            ("default_transaction_isolation", "read committed", row["iso"] != "read committed"),
        ]
        unset = [
            f"ALTER ROLE {row['role']} SET {name} = '{value}'" for name, value, missing in wanted if missing
        ]
        if unset:
            log.warning(
                "the PostgreSQL run store %s is opened with pool_mode=transaction, where Endstate cannot set "
                "its sessions' settings: set them for its role (%s). Without them a statement whose call "
                "gave up after --store-timeout may still run and land, or a claim fail where it would wait",
                self.shown,
                "; ".join(unset),
            )

    def _up_to_date(self) -> bool:
        """True when every migration is applied (a newer schema is not: `_migrate` refuses it)."""
        exists = self._rows("SELECT to_regclass(?) IS NOT NULL AS e", (SCHEMA_TABLE,))[0]["e"]
        return bool(exists) and super()._up_to_date()

    def _migrate(self) -> None:
        with self._tx():
            self._rows("SET LOCAL lock_timeout = 0")  # another process's migration may take a while
            self._rows("SET LOCAL statement_timeout = 0")  # and so may an index over every run
            self._rows("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            began = self._rows(f"SELECT {CLOCK} AS t")[0]["t"]
            self._rows(
                f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} "
                "(version INTEGER NOT NULL, applied_at DOUBLE PRECISION)"
            )
            if self._apply_migrations():
                self._rows(GIVE_LEASES_BACK, (began, RunStatus.RUNNING, began))

    def checkpoint(self, run_id: str, checkpoint: Checkpoint, lease: Lease, now: float) -> None:
        """`send_checkpoint`, waited for: the statement prepared on the sender's connection, where
        psycopg's cursor (its parameters adapted, its rows made into dicts, the watch's socket
        duplicated at every call) took about 60 us of CPU more a checkpoint (the service's runner and
        every retry write checkpoints so). One that gave up waiting for a lock that a migration of
        the schema holds is sent again on the store's connection, waiting for it (`_after_migration`)."""
        sent = self.send_checkpoint(run_id, checkpoint, lease, now)
        try:
            sent.result()
        except StoreError:
            if sent.sqlstate != LOCK_NOT_AVAILABLE or not self._migrating():
                raise
            with self._lock:
                held = self._after_migration(sent.sql, sent.params).fetchone()["n"]
            if int(held) != 1:
                raise lease_lost(run_id, lease) from None

    def _record_rows(
        self, sql: str, params: list[Any], run_id: str, entries: list[tuple[int, str]]
    ) -> list[Row]:
        """The record's `UPDATE ... RETURNING` with the entries added in the same statement (one round
        trip): the entries go in only if the row was updated (the lease held)."""
        if not entries:
            return self._rows(sql, params)
        update, returning = sql.split(" RETURNING ", 1)
        rows = _entry_rows(len(entries))
        with_entries = (
            f"WITH updated AS ({update} RETURNING {returning}), added AS (INSERT INTO {ENTRIES} "
            f"(run_id, seq, entry) SELECT updated.run_id, v.seq, v.entry FROM updated, {rows} "
            "ON CONFLICT DO NOTHING RETURNING 1) SELECT * FROM updated"
        )
        return self._rows(with_entries, [*params, *entry_params(entries)])

    def send_checkpoint(self, run_id: str, checkpoint: Checkpoint, lease: Lease, now: float) -> Sent:
        """Send a checkpoint's statement and return at once: the server writes it while the caller
        goes on, and `Sent.result()` reads how it went (on a connection of its own, one at a time)."""
        values, entries = checkpoint_rows(checkpoint, lease, now)
        sql, params = append_statement(run_id, values, entries, lease)
        return self._sender.send(run_id, lease, sql, params)

    @contextmanager
    def starting(self, run_id: str) -> Iterator[None]:
        """Hold `run_id` while a start with that id prepares and stores it: another start of it, from
        any process, is refused (`StartingNow`) before it prepares. A transaction's advisory lock on a
        connection of its own, the transaction left open meanwhile (a pooler in transaction mode keeps
        its server connection this client's only while it is: a session's lock would stay on a server
        connection other clients then use), let go at its end (a process that dies lets go too)."""
        import psycopg

        conn = self._connect_again()
        try:
            with self._watchdog.socket_call(conn.pgconn.socket, self._allowance) as watch:
                try:
                    conn.execute("BEGIN")
                    conn.execute("SET LOCAL idle_in_transaction_session_timeout = 0")  # prepare may be long
                    # the key written out, not a parameter: a statement with parameters leaves its portal,
                    # and the portal's snapshot, open until the transaction ends (holding back vacuum)
                    key = int(_start_key(run_id))
                    held = conn.execute(f"SELECT pg_try_advisory_xact_lock({key}) AS held")
                    free = bool(held.fetchone()["held"])
                except psycopg.Error as exc:
                    raise failure(exc, watch, self.shown, self.url, self.pooled) from exc
            if not free:
                raise StartingNow(
                    f"a run with id {run_id!r} is being started now, by another process (its catalog's "
                    "prepare runs); nothing was changed. Send the same request again once that start has "
                    "been answered"
                )
            yield
        finally:
            _let_go(conn, self._watchdog, self._allowance)

    def _execute(self, sql: str, params: Sequence[Any], retry: bool) -> Any:
        with self._lock:
            try:
                return self._send(sql, params)
            except StoreTimeout:  # the server did not answer: it would keep a second try waiting too
                raise
            except StoreError as exc:
                if self._waits_for_migration(exc):
                    return self._after_migration(sql, params)
                if not (retry and self._conn.broken and not self._in_tx):
                    raise
            return self._send(sql, params)  # the connection broke: once more, on a new one

    def _waits_for_migration(self, exc: StoreError) -> bool:
        """True when a statement (not in a transaction) gave up waiting for a lock that a migration
        of the schema holds: another process opening the store with a newer Endstate, whose
        transaction holds the tables until it commits (an index built over every run, say)."""
        if self._in_tx or sqlstate_of(exc.__cause__) != LOCK_NOT_AVAILABLE:
            return False
        return self._migrating()

    def _migrating(self) -> bool:
        """True while another session holds the migration lock (migrating the schema)."""
        with self._lock:
            rows = self._send("SELECT NOT pg_try_advisory_xact_lock_shared(%s) AS m", (MIGRATION_LOCK,))
            return bool(rows.fetchone()["m"])

    def _after_migration(self, sql: str, params: Sequence[Any]) -> Any:
        """Send the statement again, waiting for its lock as long as a migration may take
        (`MIGRATION_SECONDS`): it lands as soon as the migration commits, in its place in the queue,
        so a checkpoint or a lease's renewal is not lost to a migration (a lock wait gave up after
        `LOCK_TIMEOUT`, and a run's checkpoint after a few of them). It failed with no change: safe."""
        allowance, self._allowance = self._allowance, MIGRATION_SECONDS
        wait = f"{round(MIGRATION_SECONDS * 1000)}ms"
        try:
            with self._tx():
                self._send("SELECT set_config('lock_timeout', %s, true)", (wait,))
                self._send("SELECT set_config('statement_timeout', %s, true)", (wait,))
                return self._send(sql, params)
        finally:
            self._allowance = allowance

    def _send(self, sql: str, params: Sequence[Any]) -> Any:
        import psycopg

        if self._conn.closed or self._conn.broken or (not self._in_tx and ended_while_idle(self._conn)):
            self._conn.close()  # its socket, whatever state libpq has it in
            self._conn = self._connect_again()
        with self._watchdog.socket_call(self._conn.pgconn.socket, self._allowance) as watch:
            try:
                try:
                    return self._conn.execute(
                        sql.replace("?", "%s"), tuple(map(storable, params)) if params else None
                    )
                except UnicodeEncodeError:  # a lone surrogate (no UTF-8), refused before it was sent
                    return self._conn.execute(sql.replace("?", "%s"), tuple(map(column_text, params)))
            except psycopg.errors.IntegrityError as exc:
                raise WriteRefused(f"the run store refused a write: {exc}") from exc
            except psycopg.Error as exc:
                raise failure(exc, watch, self.shown, self.url, self.pooled) from exc

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
            if self._conn.closed or self._conn.broken or ended_while_idle(self._conn):
                self._conn.close()
                self._conn = self._connect_again()
            # the whole transaction within the allowance: BEGIN and COMMIT are calls too
            with self._watchdog.socket_call(self._conn.pgconn.socket, self._allowance) as watch:
                try:
                    with self._conn.transaction():
                        self._in_tx = True
                        yield
                except psycopg.Error as exc:  # BEGIN or COMMIT on a connection that broke
                    raise failure(exc, watch, self.shown, self.url, self.pooled) from exc
                finally:
                    self._in_tx = False

    def answers(self) -> None:
        """Return once the server answered and takes writes (`/readyz`): a hot standby, or a database
        or role set `default_transaction_read_only`, answers reads while every write fails."""
        rows = self._rows("SELECT current_setting('transaction_read_only') AS read_only", retry=True)
        if rows[0]["read_only"] == "on":
            raise StoreError(
                f"the PostgreSQL run store {self.shown} takes no writes (a hot standby, or "
                "default_transaction_read_only set on the database or role): point --store at the "
                "primary, or set it off"
            )

    def waited(self) -> float:
        """How long the oldest call now in flight has waited for the server (0 when none is): the
        service refuses requests queued behind a store that stopped answering."""
        return self._watchdog.waited()

    def _connect_again(self) -> Any:
        """A new connection, for a call after the last one broke; a `StoreError` once the store was
        closed: a call made after `close` (a late callback's write, a heartbeat) opened a connection
        nobody closed, left open until the garbage collector found it."""
        if self._shut:
            raise StoreError(f"the PostgreSQL run store {self.shown} was closed; open it again to use it")
        return self._connect()

    def close(self) -> None:
        with self._lock:
            self._shut = True
            self._conn.close()
        self._sender.close()
        self._watchdog.close()


_POOLED_HINT = (
    "; a connection pooler in transaction mode (PgBouncer's pool_mode = transaction) gives each "
    "transaction another server connection: add ?pool_mode=transaction to the store URL, or pool "
    "Endstate's connections in session mode"
)
# What to do about a statement the server refused, by its SQLSTATE (`hints`)
_HINTS = {
    READ_ONLY: (
        "; the server takes no writes (a standby replica, or default_transaction_read_only on for the "
        "database or role): point --store at the primary, or turn that setting off. Nothing was changed"
    ),
    LOCK_NOT_AVAILABLE: (
        "; another database session holds a lock on the run store's rows (an open transaction?): "
        "find it in pg_stat_activity (wait_event_type 'Lock', or a long 'idle in transaction') and end it. "
        f"If it held it only briefly (another worker's write), the wait was too short: Endstate waits "
        f"{LOCK_TIMEOUT} unless the role or database sets lock_timeout (ALTER ROLE ... SET lock_timeout: "
        "raise it there)"
    ),
    STATEMENT_TIMED_OUT: (
        "; the statement ran past its statement_timeout (it changed nothing). If the server is only slow, "
        "raise --store-timeout (or $ENDSTATE_STORE_TIMEOUT), which Endstate sets it to unless the role or "
        "database sets it (ALTER ROLE ... SET statement_timeout: raise it there) or the URL does "
        "(?options=-c%20statement_timeout%3D30s, which overrides the role's)"
    ),
    **dict.fromkeys(PREPARED_ELSEWHERE, _POOLED_HINT),
    NO_PRIVILEGE: (
        "; the store's role lacks a privilege on its tables: as their owner, "
        f"{GRANT.format(schema='public', role='<the role>')} (the schema that holds them), and "
        "ALTER DEFAULT PRIVILEGES to grant the tables of later migrations too"
    ),
    UNTRANSLATABLE: (
        "; the database's encoding cannot hold every text a run carries (nothing was changed): move "
        "the store to a database created with ENCODING 'UTF8'"
    ),
}


def pool_mode(url: str, shown: str) -> tuple[str, bool]:
    """`url` without Endstate's `pool_mode` option, and whether it says `transaction` (a pooler that
    gives each transaction any server connection); a `StoreError` for a value it cannot be."""
    rest, mode = take_option(url, POOL_MODE)
    if mode is not None and mode not in POOL_MODES:
        raise StoreError(
            f"the PostgreSQL store URL {shown} has pool_mode={mode!r}: it takes pool_mode=transaction "
            "(a pooler such as PgBouncer in transaction mode between Endstate and the server) "
            "or pool_mode=session"
        )
    return rest, mode == "transaction"


def connect_options(url: str, shown: str, timeout: float) -> dict[str, Any]:
    """What each connection is opened with besides the URL: a connect timeout of `timeout` and TCP
    keepalives (`KEEPALIVES`, `TCP_USER_TIMEOUT_MS`), each only where the URL does not set it; UTF-8;
    and no statement psycopg prepares on the server by itself. It names them `_pg3_0`, `_pg3_1`, ... in every
    client, so behind a pooler in transaction mode (URL without `pool_mode=transaction`) one could run
    another client's statement of that name, with its own values, on the server connection it got.
    (The store's connection makes a few statements a run: planning them again costs nothing to see.
    The checkpoints, many a run, are prepared by `_Sender`: its statements of one name in two clients
    differ, if at all, in their parameters' number or types, so one run in another's place fails.)"""
    from psycopg.conninfo import conninfo_to_dict

    try:
        given = conninfo_to_dict(url)
    except Exception as exc:  # psycopg.ProgrammingError: a URL libpq cannot parse
        raise StoreError(f"the PostgreSQL store URL {shown} cannot be read: {said(str(exc), url)}") from exc
    wanted = {"connect_timeout": max(1, math.ceil(timeout)), **KEEPALIVES}
    wanted["tcp_user_timeout"] = TCP_USER_TIMEOUT_MS
    # UTF-8 always, whatever the URL, $PGCLIENTENCODING or the database's default says: the store's
    # texts and its checkpoints' bytes are UTF-8 (LATIN1 raised UnicodeEncodeError on a Japanese task)
    return {
        **{k: v for k, v in wanted.items() if k not in given},
        "client_encoding": "UTF8",
        "prepare_threshold": None,
    }


def ended_while_idle(conn: Any) -> bool:
    """True when the server ended `conn` while it sat idle (its `idle_session_timeout`, a backend an
    operator terminated, a pooler's `client_idle_timeout`): it sent its last word and closed, which
    the connection learns only when it reads. A statement not sent yet goes on a new connection
    rather than failing on this one. One `select` that does not wait, when nothing came."""
    from psycopg import pq

    pgconn = conn.pgconn
    try:
        for _ in range(3):  # the farewell, then the end of the stream (a notice: then nothing more)
            if not select.select([pgconn.socket], [], [], 0)[0]:
                return False
            pgconn.consume_input()
            if pgconn.status != pq.ConnStatus.OK:
                return True
    except Exception:  # psycopg.OperationalError: the socket is gone
        return True
    return False


def connect(url: str, shown: str, options: dict[str, Any], **more: Any) -> Any:
    """A new autocommit connection (within the connect timeout), or a `StoreError` saying why not."""
    import psycopg

    try:
        return psycopg.connect(url, autocommit=True, **options, **more)
    except psycopg.errors.ConnectionTimeout as exc:
        waited = options.get("connect_timeout")
        within = f" within {waited} s" if waited else " within the URL's connect_timeout"
        raise StoreTimeout(
            f"cannot connect to the PostgreSQL run store {shown}: it did not answer{within} (a server "
            "that accepts connections but hangs, or a network that drops packets); nothing was changed"
        ) from exc
    except psycopg.Error as exc:
        raise StoreError(
            f"cannot connect to the PostgreSQL run store {shown}: {said(str(exc), url)}{masked(url)}"
            f"{connections_hint(str(exc))}"
        ) from exc


# How the server (or PgBouncer) says it takes no more connections: of this role or database (their
# CONNECTION LIMIT), or of any (max_connections, or those kept for superusers), or PgBouncer's.
_NO_MORE_CONNECTIONS = ("too many connections", "remaining connection slots", "no more connections allowed")


def connections_hint(message: str) -> str:
    """What to do when the server refused a connection for want of slots; '' for any other refusal."""
    if not any(said in message for said in _NO_MORE_CONNECTIONS):
        return ""
    return (
        ". Each Endstate process holds two connections to its store (one more while a start with a given "
        "run id prepares, and each command run from a shell its own): raise the role's or database's "
        "CONNECTION LIMIT or the server's max_connections, or put PgBouncer in front (see pool_mode)"
    )


def masked(url: str) -> str:
    """What to do when the URL's password is the mask a printed command shows in its place (a
    `-> endstate answer ID --store 'postgresql://app:***@...'` pasted as it was printed), else ''."""
    if MASK not in secrets_in(url):
        return ""
    return (
        f". The password in this URL is {MASK}, which Endstate prints in place of a password: put "
        "the real one there, or leave it out of the URL and set PGPASSWORD, or set the whole URL "
        "in $ENDSTATE_STORE and leave out --store"
    )


def failure(exc: Exception, watch: Watch, shown: str, url: str, pooled: bool = False) -> StoreError:
    """The `StoreError` for a call that failed: a `StoreTimeout` when the deadline cut it off."""
    if watch.cut:
        return StoreTimeout(
            f"the PostgreSQL run store {shown} did not answer within {watch.seconds:g} s, so its "
            "connection was cut (a server that hangs without closing, or a network that drops packets"
            f"{POOL_FULL if pooled else ''}); the next call connects again. If the server is only slow, "
            "raise --store-timeout (or $ENDSTATE_STORE_TIMEOUT)"
        )
    sqlstate = getattr(exc, "sqlstate", None)
    return StoreError(f"the PostgreSQL run store {shown} failed: {said(str(exc), url)}{hints(sqlstate)}")


def sqlstate_of(exc: BaseException | None) -> str | None:
    """The SQLSTATE of a psycopg error (None for anything else)."""
    sqlstate = getattr(exc, "sqlstate", None)
    return sqlstate.decode() if isinstance(sqlstate, bytes) else sqlstate


def hints(sqlstate: str | bytes | None) -> str:
    """What to do about a statement the server refused with `sqlstate`, when there is something to do
    ('' for any other failure)."""
    return _HINTS.get((sqlstate.decode() if isinstance(sqlstate, bytes) else sqlstate) or "", "")


def pool_hint(sqlstate: str | None) -> str:
    """What to do when a prepared statement was missing or there already: a pooler in transaction
    mode (PgBouncer's `pool_mode = transaction`) between Endstate and the server; '' otherwise."""
    return hints(sqlstate) if sqlstate in PREPARED_ELSEWHERE else ""


def said(text: str, url: str) -> str:
    """A libpq or server message as one line, without the URL's password: libpq spreads its own over
    lines ("Connection refused", then a tab and "Is the server running on that host ..."), and a
    command line says each error in one."""
    return " ".join(scrub(text, url).split())


def bounded(conn: Any, timeout: float) -> Any:
    """`conn`, its lock waits bounded by `LOCK_TIMEOUT` and its statements by `timeout` seconds,
    each unless the server, the role or the URL set it already; its transactions read committed,
    whatever the database's default (the store's claims are written for it: under repeatable read,
    a claim that waited for a row another session changed failed instead of reading it anew)."""
    conn.execute("SELECT set_config('default_transaction_isolation', 'read committed', false)")
    conn.execute(
        "SELECT set_config('lock_timeout', %s, false) WHERE current_setting('lock_timeout') = '0'",
        (LOCK_TIMEOUT,),
    )
    conn.execute(
        "SELECT set_config('statement_timeout', %s, false) WHERE current_setting('statement_timeout') = '0'",
        (f"{max(1, round(timeout * 1000))}ms",),
    )
    return conn


def _let_go(conn: Any, watchdog: Watchdog, allowance: float) -> None:
    """End `starting`'s transaction and close its connection (a pooler keeps a server connection
    whose client left inside a transaction from the pool: it closes it)."""
    import psycopg

    try:
        with watchdog.socket_call(conn.pgconn.socket, allowance):
            conn.execute("ROLLBACK")
    except (psycopg.Error, OSError, ValueError):
        pass  # the connection broke: the server ended the transaction, and its lock, with it
    finally:
        conn.close()


def _start_key(run_id: str) -> int:
    """The advisory lock key of a run id's start: 64 bits of a digest, signed as a bigint."""
    return int.from_bytes(hashlib.sha256(STARTING + run_id.encode()).digest()[:8], "big", signed=True)


def storable(value: Any) -> Any:
    """PostgreSQL text cannot hold NUL: in plain text columns it becomes U+FFFD (and so does a lone
    surrogate: see `column_text`, which the callers fall back on when encoding fails).

    (JSON columns are unaffected: their NULs are escaped as \\u0000 before they get here.)
    """
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def append_statement(
    run_id: str, values: dict[str, Any], entries: list[tuple[int, str]], lease: Lease
) -> tuple[str, list[Any]]:
    """The checkpoint as one statement: update the row if `lease` holds it, add the entries; it
    returns one row, `n` = 1 when the lease held."""
    params = [*values.values(), run_id, lease.owner, RunStatus.RUNNING, *entry_params(entries)]
    return _append_sql(tuple(values), min(len(entries), ENTRY_ROWS + 1)), params


@functools.lru_cache(maxsize=64)  # one shape per number of entries: a few in practice
def _append_sql(columns: tuple[str, ...], entries: int) -> str:
    """`append_statement`'s text for a row update of `columns` and `entries` entries (made once each;
    past ENTRY_ROWS, one for any number: see `_entry_rows`)."""
    sql = f"WITH held AS ({checkpoint_update(columns, CLOCK)} RETURNING run_id)"
    if entries:
        sql += (
            f", added AS (INSERT INTO {ENTRIES} (run_id, seq, entry) SELECT held.run_id, v.seq, v.entry "
            f"FROM held, {_entry_rows(entries)} ON CONFLICT DO NOTHING RETURNING 1)"
        )
    return sql + " SELECT COUNT(*) AS n FROM held"


def _entry_rows(entries: int) -> str:
    """The rows `v (seq, entry)` of a statement adding `entries` entries (`entry_params` their values).

    Up to ENTRY_ROWS entries, a VALUES list of two values each (a checkpoint holds a few: as planned as
    ever). Past that two arrays, whatever their length: PostgreSQL takes at most 65,535 values a
    statement, and a checkpoint of 32,768 entries (a reply of as many parallel calls answered) or a
    record carrying a long unsaved tail failed, so the run could not be saved."""
    if entries > ENTRY_ROWS:
        return "unnest(?::integer[], ?::text[]) AS v (seq, entry)"
    return f"(VALUES {', '.join('(?::integer, ?::text)' for _ in range(entries))}) AS v (seq, entry)"


def entry_params(entries: list[tuple[int, str]]) -> list[Any]:
    """The values of `_entry_rows(len(entries))`: each entry's seq and JSON, or past ENTRY_ROWS the two
    as array literals (the store's JSON holds no NUL or lone surrogate: it writes them as escapes)."""
    if len(entries) <= ENTRY_ROWS:
        return [x for e in entries for x in e]
    seqs = ",".join(str(seq) for seq, _ in entries)
    texts = ",".join(_element(text) for _, text in entries)
    return [f"{{{seqs}}}", f"{{{texts}}}"]


def _element(text: str) -> str:
    """`text` as a quoted element of an array literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Sent:
    """A checkpoint sent to the server; `result()` waits for its outcome (once; then it is kept)."""

    def __init__(self, sender: _Sender, run_id: str, lease: Lease, sql: str, params: list[Any]) -> None:
        self._sender, self.run_id, self.lease = sender, run_id, lease
        self.sql, self.params = sql, params  # sent once more, on a new connection, if this one broke
        self._outcome: BaseException | None = None
        self.read = False
        self.sqlstate: str | None = None  # the server's error code, when it refused the statement

    def result(self) -> None:
        """Return when the checkpoint is written; raise `LeaseLost` or `StoreError` when it was not."""
        if not self.read:
            self._sender.finish(self)
        if self._outcome is not None:
            raise self._outcome

    def settle(self, outcome: BaseException | None) -> None:
        self._outcome, self.read = outcome, True


class _Sender:
    """A connection of the store's own for checkpoints sent ahead (libpq's asynchronous calls):
    a statement goes out at once and its result is read later, so the server writes it while the
    loop goes on. One is in flight at a time: sending the next reads the one before first. Each
    statement shape (a checkpoint of n entries) is prepared once per connection, the first time it
    is sent: a round trip waited for then, and the server does not plan it again."""

    def __init__(
        self, url: str, shown: str, options: dict[str, Any], watchdog: Watchdog, pooled: bool = False
    ) -> None:
        self._url, self._shown, self._options, self._pooled = url, shown, options, pooled
        self._watchdog, self._wait = watchdog, watchdog.period  # a call's allowance: see `PostgresStore`
        self._lock = threading.Lock()
        self._conn: Any = None
        self._shut = False  # closed with its store: see `PostgresStore._connect_again`
        self._in_flight: Sent | None = None
        self._prepared: dict[str, bytes] = {}

    def send(self, run_id: str, lease: Lease, sql: str, params: list[Any]) -> Sent:
        with self._lock:
            if self._in_flight is not None:
                self._read(self._in_flight)
            sent = Sent(self, run_id, lease, sql, params)
            failure = self._start(sent, again=True)
            if failure is not None:
                sent.settle(failure)
            else:
                self._in_flight = sent
            return sent

    def _start(self, sent: Sent, again: bool) -> StoreError | None:
        """Send the statement; why not, if it could not be. A connection found broken (a restarted
        server, a dropped socket) is replaced and the statement sent on the new one (`again`): a
        checkpoint is safe to send twice (the same row values; its entries are inserted once)."""
        failure, lost = self._try_send(sent)
        if failure is not None and lost and again:
            failure, _ = self._try_send(sent)
        return failure

    def _try_send(self, sent: Sent) -> tuple[StoreError | None, bool]:
        """(why it was not sent, or None; whether the connection broke)."""
        try:
            pgconn = self._pgconn()
        except StoreError as exc:  # no server to connect to: sending again would not help
            return exc, False
        try:
            params = [_text(p) for p in sent.params]
            if self._pooled:  # behind a pooler in transaction mode: an unnamed statement, in one go
                pgconn.send_query_params(_numbered(sent.sql).encode(), params)
            else:
                pgconn.send_query_prepared(self._prepare(pgconn, sent), params)
        except StoreTimeout as exc:  # the server hangs: it would keep a second try waiting too
            return exc, False
        except StoreError as exc:
            return exc, self._lost()
        except Exception as exc:
            return self._failed(exc), True
        return None, False

    def finish(self, sent: Sent) -> None:
        with self._lock:
            if not sent.read:
                self._read(sent)

    def _read(self, sent: Sent, again: bool = True) -> None:
        """Wait for the statement in flight and settle it; if the connection broke meanwhile, send
        it once more on a new one (see `_start`) and wait for that."""
        self._in_flight = None
        outcome, lost = self._receive(sent)
        if lost and again:
            failure = self._start(sent, again=False)
            if failure is None:
                return self._read(sent, again=False)
            outcome = failure
        sent.settle(outcome)
        return None

    def _receive(self, sent: Sent) -> tuple[BaseException | None, bool]:
        """The outcome of the statement in flight (waiting on the socket, without the GIL), and
        whether the connection broke."""
        try:
            pgconn = self._conn.pgconn
            give_up = time.monotonic() + self._wait
            if not _flushed(pgconn, give_up):
                return self._timed_out(), False  # the server reads nothing: it hangs
            pgconn.consume_input()
            while pgconn.is_busy():
                if (left := give_up - time.monotonic()) <= 0:
                    return self._timed_out(), False  # not sent again: the server hangs
                select.select([pgconn.socket], [], [], left)
                pgconn.consume_input()
            results = []
            while (res := pgconn.get_result()) is not None:
                results.append(res)
        except Exception as exc:
            return self._failed(exc), True
        outcome = self._outcome_of(sent, results)
        return outcome, outcome is not None and self._lost()

    def _lost(self) -> bool:
        """True when the connection is gone (closed, or its socket broke)."""
        from psycopg import pq

        conn = self._conn
        return conn is None or conn.closed or conn.pgconn.status != pq.ConnStatus.OK

    def _outcome_of(self, sent: Sent, results: list[Any]) -> BaseException | None:
        from psycopg import pq

        for res in results:
            if res.status == pq.ExecStatus.TUPLES_OK:
                return None if res.get_value(0, 0) == b"1" else lease_lost(sent.run_id, sent.lease)
            if res.status == pq.ExecStatus.FATAL_ERROR:
                message = said((res.error_message or b"").decode(errors="replace"), self._url)
                sqlstate = res.error_field(pq.DiagnosticField.SQLSTATE) or b""
                sent.sqlstate = sqlstate.decode()
                if sqlstate.startswith(b"23"):
                    return WriteRefused(f"the run store refused a write: {message}")
                return StoreError(
                    f"the PostgreSQL run store {self._shown} failed: {message}{hints(sqlstate)}"
                )
        return StoreError(f"the PostgreSQL run store {self._shown} gave no result for a checkpoint")

    def _pgconn(self) -> Any:
        from psycopg import pq

        if self._conn is None or self._conn.closed or self._conn.pgconn.status != pq.ConnStatus.OK:
            import psycopg

            if self._shut:  # closed with its store: a checkpoint sent after that connects no more
                raise StoreError(f"the PostgreSQL run store {self._shown} was closed; open it again")

            if self._conn is not None:
                self._conn.close()
            self._prepared.clear()
            self._conn = connect(self._url, self._shown, self._options)
            with self._watchdog.socket_call(self._conn.pgconn.socket, self._wait) as watch:
                try:
                    if not self._pooled:  # a session setting would stay on a pooled server connection
                        bounded(self._conn, self._wait - CUT_AFTER)
                except psycopg.Error as exc:
                    self._conn.close()
                    raise failure(exc, watch, self._shown, self._url) from exc
        return self._conn.pgconn

    def _prepare(self, pgconn: Any, sent: Sent) -> bytes:
        """The name of `sent`'s statement prepared on this connection (prepared now, the first time:
        a server that refuses it, one that waited out its lock timeout say, gives `sent` its code)."""
        from psycopg import pq

        sql = sent.sql
        name = self._prepared.get(sql)
        if name is None:
            name = f"endstate_checkpoint_{len(self._prepared)}".encode()
            with self._watchdog.socket_call(pgconn.socket, self._wait) as watch:  # a blocking round trip
                res = pgconn.prepare(name, _numbered(sql).encode())
            if res.status != pq.ExecStatus.COMMAND_OK:
                sent.sqlstate = (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()
                message = said((res.error_message or b"").decode(errors="replace"), self._url)
                raise failure(StoreError(message + pool_hint(sent.sqlstate)), watch, self._shown, self._url)
            self._prepared[sql] = name
        return name

    def _timed_out(self) -> StoreTimeout:
        """The checkpoint in flight got no answer in time: its connection is dropped (its state is
        unknown; the next checkpoint connects anew) and the checkpoint fails."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        return StoreTimeout(
            f"the PostgreSQL run store {self._shown} did not answer a checkpoint within {self._wait:g} s, "
            "so its connection was dropped (a server that hangs without closing, or a network that drops "
            "packets). If the server is only slow, raise --store-timeout (or $ENDSTATE_STORE_TIMEOUT)"
        )

    def _failed(self, exc: Exception) -> StoreError:
        if self._conn is not None:  # its state is unknown now: a new connection next time
            self._conn.close()
            self._conn = None
        return StoreError(f"the PostgreSQL run store {self._shown} failed: {said(str(exc), self._url)}")

    def close(self) -> None:
        with self._lock:
            self._shut = True
            if self._in_flight is not None:
                self._read(self._in_flight)
            if self._conn is not None:
                self._conn.close()


def _flushed(pgconn: Any, give_up: float) -> bool:
    """Send what of the statement libpq still holds (a nonblocking connection keeps what the socket's
    buffers did not take: a checkpoint of megabytes) before its answer is waited for; False when the
    server took none of it by `give_up` (`time.monotonic()`)."""
    while pgconn.flush():  # 1: some is left, the socket is full
        if (left := give_up - time.monotonic()) <= 0:
            return False
        readable, _, _ = select.select([pgconn.socket], [pgconn.socket], [], left)
        if readable:  # the server may answer (an error) before it read the whole statement
            pgconn.consume_input()
    return True


def _numbered(sql: str) -> str:
    """`?` placeholders as PostgreSQL's `$1, $2, ...`."""
    parts = sql.split("?")
    return "".join(f"{part}${i}" for i, part in enumerate(parts[:-1], 1)) + parts[-1]


def _text(value: Any) -> bytes | None:
    """A parameter in PostgreSQL's text format. A checkpoint sends some twenty, most of them plain
    integers and floats: told by their exact type first."""
    kind = type(value)
    if kind is int:
        return b"%d" % value
    if kind is float:
        return repr(value).encode()
    if value is None:
        return None
    if isinstance(value, str):  # NUL is rare: checked inline, `storable` only when there is one
        try:
            return (value if "\x00" not in value else storable(value)).encode()
        except UnicodeEncodeError:
            return str(column_text(value)).encode()
    return repr(value).encode() if isinstance(value, float) else b"%d" % value
