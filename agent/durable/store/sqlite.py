"""The embedded run store: one SQLite file, shared by the processes of one host."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import resource
import sqlite3
import struct
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from agent.durable.store._deadline import CUT_AFTER, MIGRATION_SECONDS, Watch, Watchdog
from agent.durable.store._sql import ENTRIES, SCHEMA_TABLE, Row, SqlStore, checkpoint_update
from agent.durable.store._starts import holding
from agent.durable.store.base import (
    DEFAULT_TIMEOUT,
    Lease,
    RunStatus,
    StoreError,
    StoreTimeout,
    WriteRefused,
    column_text,
)

log = logging.getLogger("endstate.store")
# The database's clock, in the statement (this machine's: one SQLite file is one machine's), to the
# millisecond. `unixepoch('subsec')` would say it shorter but needs SQLite 3.42; Debian 12 has 3.40.
CLOCK = "((julianday('now') - 2440587.5) * 86400.0)"
_INSERT_ENTRY = f"INSERT INTO {ENTRIES} (run_id, seq, entry) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
# Commits between two foldings of the write-ahead log into the store, on a thread of the store's own
# (`Folder`). Well under SQLite's own 1,000 pages a commit of a few pages (a checkpoint writes two
# or three) would take: the log is folded (and synced) more often than before, and the writer's
# own folding (still on, as before) is then rare.
FOLD_EVERY = 100
# Seconds between two looks at whether the store's path still names the file this process opened
# (see `SqliteStore.check_file`). A write is looked at as it commits too (`SqliteStore._committed`):
# one that went to a file deleted or replaced under it fails, however soon after.
FILE_CHECK_SECONDS = 0.25
SIDES = ("-wal", "-shm")  # the files SQLite keeps beside the store: its write-ahead log, its index
T = TypeVar("T")
_RUNNING = str(RunStatus.RUNNING)  # as plain text: sqlite3 binds an enum's text after an adapter lookup


class SqliteStore(SqlStore):
    """`RunStore` in a SQLite file (WAL mode; `synchronous=NORMAL` survives a killed process).

    Two connections per store object, each guarded by a lock so threads may share it: one
    writes (and reads inside its transactions), the other only reads. A reader never waits
    for a writer in WAL mode, so reads go on while a write waits for another process's lock.

    Every call waits at most `timeout` seconds (plus `CUT_AFTER`), as on PostgreSQL: for another
    process's write lock (SQLite's busy timeout is `timeout`), for a call of this process before it,
    and for its statement, which the watchdog interrupts past that (a file system that hangs, a
    statement over a huge store); past it the call fails with `StoreTimeout` and changed nothing.
    """

    dialect = "sqlite"
    clock = CLOCK
    octets = "length(CAST({} AS BLOB))"  # `length` of text stops at a NUL, which SQLite keeps

    def __init__(self, path: str | Path, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.path = Path(path)
        self.url = self.shown = f"sqlite:///{self.path}"
        self.timeout = timeout
        self._allowance = timeout + CUT_AFTER  # per call (longer while migrating: see `_prepare`)
        self._watchdog = Watchdog(self._allowance)
        self._lock = threading.RLock()
        self._in_tx: int | None = None  # the thread inside `_tx`, whose reads see its own writes
        self._reader: sqlite3.Connection | None = None  # none for ":memory:" (another database)
        self._rescuing = threading.Lock()  # held by the one copy of a gone file under way (`_rescue`)
        self._making: Path | None = None  # where that copy goes
        self._read_lock = threading.RLock()  # (a reader call that fails copies a gone file: `_rescue`)
        self._conn = self._connect()
        self._folder: Folder | None = None  # none for ":memory:" (no write-ahead log)
        self._file: tuple[int, int] | None = None  # the opened file's (device, inode): see `check_file`
        self._sides: tuple[tuple[Path, tuple[int, int]], ...] = ()  # its -wal and -shm as opened
        self._held: Held | None = None  # the file as opened, looked at as a write commits
        self._lost: str | None = None  # why every call is refused for good (its log or index went)
        self._rescued: Path | None = None  # the copy of its file made once that file lost its name
        self._commits = 0  # the writer's commits so far (see `_rescue`)
        self._rescued_at = -1  # the commits the copy surely holds (those made before it began)
        self._where = self.path.absolute()  # where it was opened (SQLite's too: a later chdir moves neither)
        self._file_due = 0.0  # when `check_file` looks at the path again (time.monotonic)
        try:
            self._prepare()
            self._file = file_id(self._where)
            if str(self.path) != ":memory:":
                self._reader = self._connect()
                self._reader.execute("PRAGMA query_only = 1")
                self._sides = side_files(self._where)
                self._held = Held.of(self._where)
                # not `self._connect`: the folder's thread would keep a store never closed alive (its
                # connections open) for ever; once the store is collected, the thread stops too
                self._folder = Folder(functools.partial(connect, self._where, self.timeout), self._allowance)
        except BaseException:
            self._conn.close()
            self._watchdog.close()
            raise
        # a store dropped without `close`: its connections closed and its folding thread stopped when
        # it is collected (Python 3.13 warns of a connection collected open: ResourceWarning)
        self._dropped = weakref.finalize(self, _dropped, self._conn, self._reader, self._folder, self._held)
        self._dropped.atexit = False

    def _connect(self) -> sqlite3.Connection:
        if str(self.path) != ":memory:":
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the folder for the run store {self.path}: {exc}") from exc
        return connect(self.path, self.timeout)

    def _prepare(self) -> None:
        """Check that the file is an Endstate store (or empty), then migrate it."""
        try:
            tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.OperationalError as exc:
            raise self._unopened(exc) from exc
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_CORRUPT":  # a store cut short, say
                raise StoreError(
                    f"the run store {self.path} is damaged ({exc}): restore it from a backup, "
                    "or move it aside and pass another --store"
                ) from exc
            raise StoreError(f"{self.path} is not an Endstate run store: {exc}") from exc
        if tables and SCHEMA_TABLE not in tables:  # checked before anything is changed in the file
            shown = ", ".join(sorted(tables)[:5])
            raise StoreError(
                f"{self.path} is a SQLite database of something else (tables: {shown}), "
                "not an Endstate run store; pass another --store"
            )
        if SCHEMA_TABLE in tables:
            self._refuse_newer()  # before the switch to WAL: a newer release's file is left as it was
        try:
            self._use_wal()
            self._conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            raise self._unopened(exc) from exc
        if SCHEMA_TABLE in tables and self._up_to_date():
            return  # known from one read, which waits for no other process's write lock
        self._set_busy_timeout(MIGRATION_SECONDS)  # another process's migration may take a while
        allowance, self._allowance = self._allowance, MIGRATION_SECONDS
        try:
            with migrating(self.path), self._tx():  # the flag tells other processes' writes to wait
                self._rows(
                    f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER NOT NULL, applied_at REAL)"
                )
                self._apply_migrations()
        finally:
            self._allowance = allowance
            self._set_busy_timeout(self.timeout)

    def _unopened(self, exc: sqlite3.Error) -> StoreError:
        return StoreError(f"cannot open the run store {self.path}: {exc}{open_hint(self.path, exc)}")

    def _set_busy_timeout(self, seconds: float) -> None:
        self._conn.execute(f"PRAGMA busy_timeout = {max(1, round(seconds * 1000))}")

    def _use_wal(self) -> None:
        """Switch the file to WAL; SQLite does not wait on a lock for this, so wait here.

        (Two processes opening a new store at once would otherwise fail with "database is locked".)
        """
        give_up = time.monotonic() + self.timeout
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > give_up:
                    raise
            time.sleep(0.02)

    def _rows(self, sql: str, params: Sequence[Any] = (), retry: bool = False) -> list[Row]:
        return self._patiently(self._rows_once, sql, params)

    def _rows_once(self, sql: str, params: Sequence[Any]) -> list[Row]:
        conn, lock = self._connection_for(sql)
        with self._call(conn, lock):
            try:
                rows = [dict(r) for r in self._execute(sql, params, conn).fetchall()]
            except sqlite3.IntegrityError as exc:
                raise WriteRefused(f"the run store refused a write: {exc}") from exc
            except sqlite3.Error as exc:
                raise self._failed(exc) from exc
            self._committed(conn)
            return rows

    def _call(self, conn: sqlite3.Connection, lock: Any) -> _Call:
        """Hold `lock` for a call on `conn`, watched: it is interrupted past the allowance. A call of
        this process before it that does not return within the allowance fails this one."""
        return _Call(self, conn, lock)

    def check_file(self, now: bool = False, written: bool = False) -> None:
        """Refuse a call once the store's path no longer names the file this process opened (deleted,
        moved or replaced under it): SQLite would go on writing to the old file, which no other process
        reads and which is gone once this one exits, so a run said to be stored would be lost. The
        path is looked at `now`, or when `FILE_CHECK_SECONDS` passed since it last was (and a write as
        it commits: `_committed`); once gone, every call is refused. So is every call once the store's
        write-ahead log or index left its path (`_lose`): for good, as the message says."""
        if self._lost is not None:
            raise StoreError(self._lost)
        if self._file is None or (not now and time.monotonic() < self._file_due):
            return
        if file_id(self._where) != self._file:
            self._file_due = 0.0  # and every call after it looks again (the file may be put back)
            raise StoreError(file_gone(self._where, self._file, written, self._rescue()))
        for side, opened in self._sides:
            if file_id(side) != opened:
                raise StoreError(self._lose(side, written))
        self._file_due = time.monotonic() + FILE_CHECK_SECONDS

    def _rescue(self, written: bool = False) -> Path | None:
        """Once the file this process opened has no name left (deleted, or replaced by a rename over
        it), copy it as this process still reads it (its write-ahead log too) beside its path, to
        `<name>.rescued-<pid>-<time>`, saying how to restore it: its runs would be gone when this
        process exits. A write that commits after a copy began copies it again, so the copy holds
        every write (later ones are refused before they are sent); that call (`written`) waits for a
        copy under way, another is told of it at once. None while it has a name (moved: it is still
        there) or the copy failed."""
        if self._held is None or not self._held.unlinked():
            return self._rescued
        got = self._rescuing.acquire(timeout=self._allowance) if written else self._rescuing.acquire(False)
        if not got:  # another thread's copy, under way: it holds all this call saw
            return self._making or (self._rescued if self._rescued_at == self._commits else None)
        try:
            if self._rescued is not None and self._rescued_at == self._commits:
                return self._rescued  # no write since the copy began (made meanwhile, maybe)
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            copy = self._rescued or self._where.with_name(f"{self._where.name}.rescued-{os.getpid()}-{stamp}")
            self._making = copy
            commits = self._copy_to(copy)
            if commits is None:
                return self._rescued if self._rescued_at == self._commits else None  # the next call copies
            first, self._rescued, self._rescued_at = (
                self._rescued is None,
                copy,
                max(commits, self._rescued_at),
            )
        except (OSError, sqlite3.Error) as exc:
            log.error(
                "the run store file %s is gone and copying what this process holds of it failed: %s",
                self._where,
                exc,
            )
            return None
        finally:
            self._making = None
            self._rescuing.release()
        if first:
            log.error(
                "the run store file %s was deleted or replaced while this process had it open: what "
                "this process held of it is saved in %s. To restore it, stop every process using the "
                "store, move aside %s (and its -wal and -shm files) if there is one, then `mv %s %s`, "
                "and start them again",
                self._where,
                copy,
                self._where,
                copy,
                self._where,
            )
        return copy

    def _copy_to(self, copy: Path) -> int | None:
        """Copy the store as this process reads it to `copy`: the writer's commits it surely holds
        (those made before it began), or None when it could not be made now. By the reader, under the
        reader's lock alone, so a call on the writer (one that hangs, too) never waits for a large
        store's copy, nor the copy for it; by the writer, under its lock, where the reader cannot (it
        had not read the store before its log lost its name: it would open the log at its path)."""
        if self._reader is not None and self._read_lock.acquire(timeout=self._allowance):
            try:
                commits = self._commits  # read before the copy's read begins: every one is in it
                with contextlib.closing(sqlite3.connect(copy)) as to:
                    self._reader.backup(to)
                return commits
            except sqlite3.Error as exc:
                log.info(
                    "copying the gone store file by its reader failed (%s): copying it by its writer", exc
                )
            finally:
                self._read_lock.release()
        if not self._lock.acquire(timeout=self._allowance):
            return None  # a call that hangs
        try:
            if self._conn.in_transaction:  # (its own thread's call inside `_tx`)
                return None
            commits = self._commits
            with contextlib.closing(sqlite3.connect(copy)) as to:
                self._conn.backup(to)
            return commits
        finally:
            self._lock.release()

    def _gone_written(self) -> StoreError:
        """The error of a write committed to a store file with no name left (`_Committed`), made once
        the writer's lock is given back: the file copied (`_rescue`), this write with it."""
        assert self._file is not None
        return StoreError(file_gone(self._where, self._file, True, self._rescue(written=True)))

    def _lose(self, side: Path, written: bool) -> str:
        """Why the store refuses every call from now on, its write-ahead log or its index (`side`)
        having left its path (`rm runs.db-wal`): this process's connections still use the old ones,
        which no other process sees, so its writes and another process's would overwrite each other.
        What this process wrote to a lost log is folded into the file first (it would be gone when
        the process exits), and its connections will not fold their log at close (`hold_off_folding`:
        by an index another process no longer shares, that folding lost that process's writes)."""
        hold_off_folding(self._where, self._file)
        if self._folder is not None:
            self._folder.stop()
        folded: str | Exception = ""
        if side.name.endswith("-wal"):
            if not self._lock.acquire(timeout=self._allowance):
                return side_gone(self._where, side, written, None)  # a call that hangs: the next one folds
            try:
                if self._conn.in_transaction:  # (its own thread's call inside `_tx`): the next call folds
                    return side_gone(self._where, side, written, None)
                folded = self._fold_lost_log()
            finally:
                self._lock.release()
        self._lost = side_gone(self._where, side, written, folded)
        log.error("%s", self._lost)
        return self._lost

    def _fold_lost_log(self) -> str | Exception:
        """Fold the write-ahead log this process still has open, which left its path, into the file: ''
        when all of it was, else what went wrong."""
        try:
            busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            return exc
        return "another connection kept part of it from being folded" if busy else ""

    def _connection_for(self, sql: str) -> tuple[sqlite3.Connection, Any]:
        """The reader for a read outside this thread's transaction, else the writer; with its lock."""
        if self._reader is not None and sql.startswith("SELECT") and self._in_tx != threading.get_ident():
            return self._reader, self._read_lock
        return self._conn, self._lock

    def _execute(
        self, sql: str, params: Sequence[Any], conn: sqlite3.Connection | None = None
    ) -> sqlite3.Cursor:
        conn = self._conn if conn is None else conn
        try:
            return conn.execute(sql, tuple(params))
        except UnicodeEncodeError:  # a lone surrogate (no UTF-8): its text column keeps U+FFFD
            return conn.execute(sql, tuple(map(column_text, params)))

    def _count(self, sql: str, params: Sequence[Any] = (), retry: bool = False) -> int:
        return self._patiently(self._count_once, sql, params)

    def _count_once(self, sql: str, params: Sequence[Any]) -> int:
        with self._call(self._conn, self._lock):
            try:
                count = self._execute(sql, params).rowcount
            except sqlite3.Error as exc:
                raise self._failed(exc) from exc
            self._committed(self._conn)
            return count

    def _committed(self, conn: sqlite3.Connection) -> None:
        """A call on the writer that ended outside a transaction has committed (or only read): one
        commit more for the folder (see `Folder`). A commit to a store file that has no name any more
        (deleted, or replaced by a rename over it) fails: it is in no file another process reads,
        whatever the time since `check_file` last looked (which it does now, to say what happened).
        A file moved away keeps its name there: found at the next look (`FILE_CHECK_SECONDS`), the
        writes until then are in the moved file."""
        if conn is not self._conn or conn.in_transaction:
            return
        self._commits += 1
        if self._folder is not None:
            self._folder.committed()
        if (held := self._held) is not None and held.unlinked():
            self._file_due = 0.0  # every call looks at the path again (and is refused)
            raise _Committed("a write committed to a store file with no name left")  # see `_Call`

    def _append(
        self, run_id: str, values: dict[str, Any], entries: list[tuple[int, str]], lease: Lease
    ) -> bool:
        return self._patiently(self._append_once, run_id, values, entries, lease)

    def _append_once(
        self, run_id: str, values: dict[str, Any], entries: list[tuple[int, str]], lease: Lease
    ) -> bool:
        """One transaction straight on the connection (a checkpoint a turn: kept lean): update the
        row if `lease` holds it, then add the entries; False when it does not hold it."""
        update = checkpoint_update(tuple(values), CLOCK)
        with self._call(self._conn, self._lock):
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    held = conn.execute(update, (*values.values(), run_id, lease.owner, _RUNNING))
                    if held.rowcount == 1 and entries:
                        conn.executemany(_INSERT_ENTRY, [(run_id, seq, text) for seq, text in entries])
                    conn.execute("COMMIT")
                    self._committed(conn)
                except BaseException:
                    conn.rollback()
                    raise
            except sqlite3.IntegrityError as exc:
                raise WriteRefused(f"the run store refused a write: {exc}") from exc
            except sqlite3.Error as exc:
                raise self._failed(exc) from exc
        return held.rowcount == 1

    def _failed(self, exc: sqlite3.Error) -> StoreError:
        """The error for a statement that failed: a `StoreTimeout` when it waited out the busy timeout
        (saying for what) or the watchdog interrupted it (nothing else interrupts a call)."""
        name = getattr(exc, "sqlite_errorname", "")
        if name.startswith("SQLITE_BUSY"):
            return StoreTimeout(
                f"the run store {self.path} failed: {exc}; another process kept a write transaction "
                f"open on it for over {self.timeout:g} s (a sqlite3 shell left in BEGIN, a stuck "
                "process?): end that transaction; nothing was changed"
            )
        if name == "SQLITE_INTERRUPT":
            return StoreTimeout(
                f"the run store {self.path} did not answer within {self._allowance:g} s, so the call was "
                "interrupted (a file system that hangs or is very slow?); nothing was changed. If the "
                "disk is only slow, raise --store-timeout (or $ENDSTATE_STORE_TIMEOUT)"
            )
        try:  # a file, log or index gone from its path says so, not "disk I/O error"
            self.check_file(now=True)
        except StoreError as gone:
            return gone
        return StoreError(f"the run store {self.path} failed: {exc}{open_hint(self.path, exc)}")

    def waited(self) -> float:
        """How long the oldest call now in flight has waited (0 when none is): see `PostgresStore`."""
        return self._watchdog.waited()

    def answers(self) -> None:
        """Return once the store could be written: its write lock taken and a row written, then rolled
        back (reads never wait in WAL mode, so a store another process keeps locked is found by a
        write; SQLite opens a file it may not write read-only, and only a write finds it). A store
        whose file left its path does not answer (`check_file`)."""
        self.check_file(now=True)
        with contextlib.suppress(_Probed), self._tx():
            self._rows(f"INSERT INTO {SCHEMA_TABLE} (version, applied_at) VALUES (-1, 0)")
            raise _Probed  # the write could be made: rolled back, nothing changed

    @contextmanager
    def _tx(self) -> Iterator[None]:
        """A write transaction, watched as one call: its BEGIN and COMMIT are sent within the call's
        own watch and lock (as `_append` does), not each armed and held again as a call of its own."""
        call = self._patiently(self._begun)
        try:
            self._in_tx = threading.get_ident()
            try:
                yield
            except BaseException:
                self._conn.rollback()
                raise
            finally:
                self._in_tx = None
            self._bare("COMMIT")
            self._committed(self._conn)
        except BaseException as exc:
            call.__exit__(type(exc), exc, exc.__traceback__)
            raise
        call.__exit__()

    def _begun(self) -> _Call:
        """A call on the writer, entered, its write transaction begun (its lock taken)."""
        call = self._call(self._conn, self._lock)
        call.__enter__()
        try:
            self._bare("BEGIN IMMEDIATE")
        except BaseException:
            call.__exit__()
            raise
        return call

    def _patiently(self, call: Callable[..., T], *args: Any) -> T:
        """`call(*args)`; when it gave up waiting for the write lock while another process migrates
        the schema (a newer Endstate opening the file, see `migrating`), sent again, waiting for it
        as long as a migration may take: a checkpoint or a lease's renewal is not lost to it (it
        failed after `timeout` s, a run's checkpoint after a few tries, and the run ended `error`).
        It failed before changing anything (the lock is taken first): safe to send again."""
        try:
            return call(*args)
        except StoreTimeout as exc:
            busy = getattr(exc.__cause__, "sqlite_errorname", "").startswith("SQLITE_BUSY")
            if not busy or self._in_tx == threading.get_ident() or not migration_under_way(self._where):
                raise
        log.warning("the run store %s is being migrated by another process: waiting for it", self.path)
        with self._lock:
            allowance, self._allowance = self._allowance, MIGRATION_SECONDS
            self._set_busy_timeout(MIGRATION_SECONDS)
        try:
            return call(*args)
        finally:
            with self._lock:
                self._allowance = allowance
                self._set_busy_timeout(self.timeout)

    def _bare(self, sql: str) -> None:
        """A statement of no parameters and no rows on the writer (BEGIN, COMMIT), inside a call."""
        try:
            self._conn.execute(sql)
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    @contextmanager
    def starting(self, run_id: str) -> Iterator[None]:
        """Hold `run_id` while a start with that id prepares and stores it: another start of it (from
        another process on this file, or another store object) is refused (`StartingNow`) before it
        prepares. A file lock beside the store, let go with the process (see `_starts`)."""
        if str(self.path) == ":memory:":  # one store object: its runner holds the id itself
            yield
            return
        with holding(Path(os.path.realpath(self._where)), run_id):
            yield

    def close(self) -> None:
        with contextlib.suppress(StoreError):  # a log or index gone since the last look: see `_lose`
            self.check_file(now=True)
        if self._folder is not None:
            self._folder.close()
        with self._lock:
            self._conn.close()
        with self._read_lock:
            if self._reader is not None:
                self._reader.close()
        self._watchdog.close()
        self._dropped.detach()  # its descriptor is closed here, once (descriptor numbers are reused)
        if self._held is not None:
            self._held.close()


class _Call:
    """`SqliteStore._call`: a context manager of its own (slots) rather than a generator's, since one
    is made at every call to the store (every checkpoint)."""

    __slots__ = ("_conn", "_lock", "_store", "_watch")

    def __init__(self, store: SqliteStore, conn: sqlite3.Connection, lock: Any) -> None:
        self._store, self._conn, self._lock = store, conn, lock
        self._watch: Watch | None = None

    def __enter__(self) -> None:
        store = self._store
        store.check_file()
        if not self._lock.acquire(timeout=store._allowance):
            raise StoreTimeout(
                f"the run store {store.path} did not answer: a call to it from this process has not "
                f"returned for over {store._allowance:g} s (a file system that hangs, such as a network "
                "mount that lost its server?); nothing was changed"
            )
        try:  # watched from the moment it holds the lock, as the call's own allowance
            self._watch = watch = store._watchdog.call(self._conn.interrupt, store._allowance)
            watch.__enter__()
        except BaseException:
            self._lock.release()
            raise

    def __exit__(self, _type: object = None, exc: BaseException | None = None, _tb: object = None) -> None:
        try:
            if (watch := self._watch) is not None:
                watch.__exit__()
        finally:
            self._lock.release()
        if isinstance(exc, _Committed):  # the file is copied with the writer's lock given back
            raise self._store._gone_written() from None


class _Probed(Exception):
    """`SqliteStore.answers` made its write: roll it back."""


class _Committed(StoreError):
    """A write committed to a store file that has no name left (`SqliteStore._committed`), raised
    under the writer's lock; `_Call` raises `SqliteStore._gone_written` in its place once it is given
    back, so the file's copy does not hold up the writer's other calls."""


def flag_of(path: Path) -> Path:
    """The file beside the store that a process migrating its schema holds locked (`flock`)."""
    return path.with_name(path.name + "-migrating")


@contextmanager
def migrating(path: Path) -> Iterator[None]:
    """Hold the store's migration flag (`flag_of`) inside the block: another process whose write
    gives up waiting for the lock meanwhile waits for the migration (`SqliteStore._patiently`).
    The flock ends with the process, however it ends. Waits for another migrating process's flag
    as long as a migration may take; with no flag to be had (a read-only folder), migrates without."""
    if str(path) == ":memory:":
        yield
        return
    try:
        fd = os.open(flag_of(path), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        _flock(fd, fcntl.LOCK_EX, MIGRATION_SECONDS)
        yield
    finally:
        os.close(fd)  # gives the flock back


def migration_under_way(path: Path) -> bool:
    """Whether another process holds the store's migration flag now."""
    try:
        fd = os.open(flag_of(path), os.O_RDONLY)
    except OSError:  # no flag: never migrated by an Endstate that sets it
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _flock(fd: int, kind: int, seconds: float) -> None:
    """Take the `kind` flock on `fd`, waiting at most `seconds`; a `StoreTimeout` past them."""
    give_up = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > give_up:
                raise StoreTimeout(
                    f"another process has been migrating this run store for over {seconds:g} s"
                ) from None
        time.sleep(0.05)


def _dropped(
    conn: sqlite3.Connection, reader: sqlite3.Connection | None, folder: Folder | None, held: Held | None
) -> None:
    """What `SqliteStore.close` closes, for a store collected without it (no thread uses them then)."""
    if folder is not None:
        folder.stop()
    conn.close()
    if reader is not None:
        reader.close()
    if held is not None:
        held.close()


def connect(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection to the store file at `path` (its folder made already)."""
    try:
        conn = sqlite3.connect(  # its busy timeout: how long a statement waits for a lock
            path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the run store {path}: {exc}{open_hint(path, exc)}") from exc
    conn.row_factory = sqlite3.Row
    conn.text_factory = text_of
    return conn


def text_of(data: bytes) -> str | bytes:
    """A TEXT value as read: its UTF-8 decoded, or, when it is no UTF-8 (written by another program,
    or a damaged file), its bytes, which the row's readers name as a damaged column of that run
    (`_sql.record_of`): SQLite's own decoding failed the whole query, a listing of every run."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


class Folder:
    """Folds the write-ahead log into the store every `FOLD_EVERY` commits, on a thread and a
    connection of its own: a checkpoint's commit no longer does it now and then on the loop's thread
    (SQLite's automatic folding at 1,000 pages copies the pages back and syncs the log and the store:
    tens of milliseconds, on the loop's clock, every few hundred checkpoints).

    Every commit is as durable as before, and at the same moment (`synchronous=NORMAL`: a commit
    is in the log when it returns; the log is synced when folded, now more often). A passive
    folding waits for no lock and blocks no writer; the writer's own folding stays on behind it."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], allowance: float) -> None:
        self._connect, self._allowance = connect, allowance
        self._commits = 0  # counted under the store's write lock
        self._due = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def committed(self) -> None:
        """One commit more (called under the store's write lock): every `FOLD_EVERY`, a folding."""
        self._commits += 1
        if self._commits % FOLD_EVERY == 0:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="endstate-store-fold", daemon=True)
                self._thread.start()
            self._due.set()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        while self._due.wait() and not self._closed:
            self._due.clear()
            try:
                conn = conn or self._connect()
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except Exception as exc:  # the writer's own folding still runs; a new connection next time
                log.warning("could not fold the run store's write-ahead log (the writer will): %s", exc)
                if conn is not None:
                    conn.close()
                conn = None
        if conn is not None:
            conn.close()

    def stop(self) -> None:
        """Tell the thread to stop (it closes its connection), without waiting for it."""
        self._closed = True
        self._due.set()

    def close(self) -> None:
        """Stop the thread, after the folding it is doing (at most the store's allowance)."""
        self.stop()
        if self._thread is not None:
            self._thread.join(self._allowance)


def file_id(path: Path) -> tuple[int, int] | None:
    """The (device, inode) of the file at `path`; None when there is none (or ":memory:")."""
    if str(path) == ":memory:":
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def file_gone(path: Path, opened: tuple[int, int], written: bool = False, rescued: Path | None = None) -> str:
    """Why a store whose file left its path refuses calls (`written`: a write found it as it committed),
    where that file is now (`rescued`: the copy made of it once it had no name left), and what to do."""
    what = "replaced by another file" if path.exists() else "deleted or moved away"
    now = _open_as(opened)
    where = f"; it is now at {now}" if now is not None and not now.endswith(" (deleted)") else ""
    done = "this write was not stored (it went to that file only)" if written else "nothing was changed"
    if rescued is not None:
        where = (
            f". What this process held of it{', this write too,' if written else ''} is saved in {rescued}"
        )
        back = f"Restore it (stop every process using the store, then `mv {rescued} {path}`)"
    else:
        back = f"Put the file back at {path} (with its -wal file)"
    return (
        f"the run store file {path} was {what} while this process had it open, so {done}: "
        "its writes would go to a file no other process reads, lost once this process exits"
        f"{where}. {back}, or restart this process to use the store now at that path (the runs it "
        "was driving are recovered from their last checkpoint there)"
    )


def side_gone(path: Path, side: Path, written: bool, folded: str | Exception | None) -> str:
    """Why a store whose write-ahead log or index (`side`) left its path refuses every call, what
    became of what this process wrote (`written`: a write found it as it committed; `folded`: '' all
    of it folded into the file, else why not; None not yet), and what to do."""
    log_gone = side.name.endswith("-wal")
    what = "write-ahead log" if log_gone else "shared-memory index"
    too = ", this call's write too," if written else ""
    if not log_gone:
        kept = f"What this process wrote{too} is kept (in {path.name}-wal)"
    elif folded == "":
        kept = f"What this process wrote to the lost log{too} was folded into {path}: nothing is lost"
    elif folded is None:
        kept = f"What this process wrote to the lost log{too} is folded into {path} at its next call"
    else:
        kept = (
            f"Folding what this process wrote to the lost log{too} into {path} failed ({folded}): what it "
            "wrote since the log was last folded is lost when this process exits"
        )
    return (
        f"the run store's {what} {side} was deleted or replaced while this process had the store open, "
        "so it writes no more: its writes and those of any other process that opens the store would "
        f"overwrite each other. {kept}. Restart this process to use the store again"
    )


def side_files(path: Path) -> tuple[tuple[Path, tuple[int, int]], ...]:
    """The write-ahead log and the index beside the store file at `path` (those that exist), with their
    (device, inode): the log first."""
    found = ((path.with_name(path.name + end), file_id(path.with_name(path.name + end))) for end in SIDES)
    return tuple((side, opened) for side, opened in found if opened is not None)


class Held:
    """The store file this process opened, held by an `O_PATH` descriptor (Linux) whose `fstat` says
    whether the file still has a name: none once deleted, or replaced by a rename over it. About a
    microsecond, half a `stat` of its path, a quarter of a `readlink` of /proc/self/fd (which would
    tell a move too: `check_file` finds that). `O_PATH`, because closing any other descriptor of a
    file would drop the POSIX locks SQLite holds on it in this process."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    @classmethod
    def of(cls, path: Path) -> Held | None:
        """The file at `path`, or None where it cannot be held so (no `O_PATH`: not Linux)."""
        if (o_path := getattr(os, "O_PATH", None)) is None:
            return None
        try:
            return cls(os.open(path, o_path))
        except OSError:
            return None

    def unlinked(self) -> bool:
        """Whether the file has no name left."""
        return os.fstat(self._fd).st_nlink == 0

    def close(self) -> None:
        os.close(self._fd)


# SQLite's shared lock on a file is a read lock of these bytes (its os_unix.c: SHARED_FIRST, SHARED_SIZE);
# its exclusive lock, a write lock of them
_SHARED_FIRST, _SHARED_SIZE = 0x40000000 + 2, 510
_HELD_OFF: list[int] = []  # descriptors of `hold_off_folding`, open until the process exits


def hold_off_folding(path: Path, opened: tuple[int, int] | None) -> None:
    """Keep this process's connections to the store file at `path` from folding their write-ahead log
    into it as they close: SQLite does that at its last connection's close, when it gets the file's
    exclusive lock. An open file description's read lock of the same bytes keeps it from that lock,
    until the process exits; it is never closed (closing a descriptor of the file would drop SQLite's
    own locks). Other processes' shared locks are read locks too, so they go on."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    found = os.fstat(fd)
    if (found.st_dev, found.st_ino) != opened:  # another file now: leave it
        os.close(fd)
        return
    lock = struct.pack("hhqqixxxx", fcntl.F_RDLCK, os.SEEK_SET, _SHARED_FIRST, _SHARED_SIZE, 0)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, lock)
    except (OSError, AttributeError) as exc:  # (no F_OFD_SETLK: not Linux)
        log.warning("could not keep the run store %s from being folded at close: %s", path, exc)
    _HELD_OFF.append(fd)


def _open_as(opened: tuple[int, int]) -> str | None:
    """The name this process's open file `opened` (device, inode) has now, by /proc (Linux); None
    when it cannot be told."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for fd in fds:
        link = f"/proc/self/fd/{fd}"
        try:
            found = os.stat(link)
            if (found.st_dev, found.st_ino) == opened:
                return os.readlink(link)
        except OSError:
            continue
    return None


def open_hint(path: Path, exc: sqlite3.Error | None = None) -> str:
    """Why SQLite could not open or write the store, when a file beside it or the path itself says
    (`blocked_hint`), the file or its folder is read-only (`read_only_hint`), or `exc` is a write
    that the disk or a file-size limit refused (`write_hint`); '' otherwise."""
    return blocked_hint(path) or read_only_hint(path) or write_hint(path, exc)


def write_hint(path: Path, exc: sqlite3.Error | None) -> str:
    """What to do when SQLite's write failed with `disk I/O error` or `database or disk is full`:
    the process's file-size limit reached (`ulimit -f`), the disk full, or else what to look at."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name != "SQLITE_FULL" and not name.startswith("SQLITE_IOERR"):
        return ""
    why = size_limit(path) or disk_full(path.parent)
    if not why:
        why = "SQLite could not write it: a full disk or quota, a file-size limit, or a failing disk (dmesg)"
    return (
        f". {why}. Nothing written is lost: the run store keeps what was committed, and `endstate "
        "recover` continues each run whose checkpoint or result was not written once the store can be written"
    )


LIMIT_SLACK = 1024 * 1024  # bytes under the file-size limit at which a store file is taken to have reached it


def size_limit(path: Path) -> str:
    """Why a write failed when a store file has (nearly) reached this process's file-size limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == resource.RLIM_INFINITY:
        return ""
    sizes = {p.name: p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists()}
    if not sizes or max(sizes.values()) + LIMIT_SLACK < soft:
        return ""
    name, size = max(sizes.items(), key=lambda item: item[1])
    return (
        f"This process may write files of at most {soft} bytes (its file-size limit, `ulimit -f`; a "
        f"container's or systemd's LimitFSIZE), and {name} has {size}: raise the limit (`ulimit -f "
        "unlimited`) and start the process again"
    )


def disk_full(folder: Path) -> str:
    """Why a write failed when the file system holding the store has (nearly) no room left."""
    try:
        found = os.statvfs(folder)
    except OSError:
        return ""
    free = found.f_bavail * found.f_frsize
    if free >= LIMIT_SLACK:
        return ""
    return f"The file system holding {folder} is full ({free} bytes free): free space, or move the store"


def blocked_hint(path: Path) -> str:
    """Why SQLite could not open or write the store when something stands where it needs a file: a
    folder (or another non-file) named as its write-ahead log or shared memory, or a symbolic link to
    a folder that does not exist; '' otherwise."""
    for side in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if (side.exists() or side.is_symlink()) and not side.is_file():
            kind = "a folder" if side.is_dir() else "not a regular file"
            return (
                f". {side} is {kind}, where SQLite keeps the store's "
                f"{'write-ahead log' if side.name.endswith('-wal') else 'shared memory'}: move it away "
                "(SQLite makes that file itself)"
            )
    if path.is_symlink() and not path.exists():
        return (
            f". {path} is a symbolic link to {os.readlink(path)}, which does not exist and cannot be made "
            "there (its folder is missing?): fix the link, or pass the store's real path with --store"
        )
    return ""


def read_only_hint(path: Path) -> str:
    """Why SQLite could not open the store for writing, when the file or its folder is read-only
    (it writes `runs.db-wal` and `runs.db-shm` beside the file, to read as well); '' otherwise."""
    folder = path.parent
    try:
        read_only_fs = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return ""
    if read_only_fs:
        where = f"it is on a read-only file system ({folder})"
    elif not os.access(folder, os.W_OK | os.X_OK):
        where = f"its folder {folder} is not writable by this user"
    elif path.exists() and not os.access(path, os.R_OK | os.W_OK):
        where = "the file is not readable and writable by this user"
    else:
        return ""
    return (
        f". The store needs write access even to be read, and {where}: SQLite keeps {path.name}-wal and "
        f"{path.name}-shm beside the file. Make it writable, or copy the store somewhere writable and "
        "pass that with --store"
    )
