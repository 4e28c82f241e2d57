"""A real PostgreSQL server for tests, started from the Debian binaries on a free loopback port.

`PostgresServer()` runs `initdb` in a temporary folder and `pg_ctl start` on
127.0.0.1 with trust authentication; `new_database()` gives a fresh, empty
database URL; `stop()` shuts the server down and removes the folder. As root
the programs run as the `postgres` user (initdb refuses root).

When the binaries are missing the tests fail with a message saying what to
install; set ENDSTATE_SKIP_PG=1 to skip them instead.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from ports import PortTaken, on_free_port, port_clash
from reaper import Reaper

SKIP_ENV = "ENDSTATE_SKIP_PG"
BIN_DIRS = [os.environ.get("ENDSTATE_PG_BIN", ""), *sorted(Path("/usr/lib/postgresql").glob("*/bin"))]


def pg_bin(name: str) -> str:
    """The path of a PostgreSQL program, or fail (skip with ENDSTATE_SKIP_PG=1) saying what is missing."""
    for folder in BIN_DIRS:
        if folder and (Path(folder) / name).exists():
            return str(Path(folder) / name)
    found = shutil.which(name)
    if found:
        return found
    message = (
        f"PostgreSQL's {name} was not found (looked in /usr/lib/postgresql/*/bin and PATH). "
        "Install it (apt-get install -y postgresql) or set ENDSTATE_PG_BIN; "
        f"set {SKIP_ENV}=1 to skip the PostgreSQL tests."
    )
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


class PostgresServer:
    """One throwaway PostgreSQL cluster."""

    def __init__(self) -> None:
        self._pg_ctl = pg_bin("pg_ctl")  # missing: fails here, before any folder is made
        self.port = 0  # chosen by the first start
        self.dir = Path(tempfile.mkdtemp(prefix="endstate-pg-"))
        self.data = self.dir / "data"
        self._as_postgres = os.geteuid() == 0
        self._names = itertools.count(1)
        if self._as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")
        # pg_ctl's postmaster is in a session of its own: stopped by the reaper if this process dies
        self._reaper = Reaper(run=[self._command(*self._stop_argv())], remove=[str(self.dir)])
        try:
            self._run(pg_bin("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
            on_free_port(self._start_on, "PostgreSQL")
        except BaseException:  # an interrupted start may have left a postmaster running
            self.stop()
            raise

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def new_database(self) -> str:
        """A fresh, empty database on this server; its URL."""
        import psycopg

        name = f"endstate_test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def pause(self) -> None:
        """Stop the server (a fast shutdown: clients are disconnected); `resume` starts it again."""
        self._run(pg_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def _start_on(self, port: int) -> None:
        """The first start, on `port`: `PortTaken` when PostgreSQL could not bind it."""
        self.port = port
        log = self.dir / "log"
        seen = log.stat().st_size if log.exists() else 0
        try:
            self.resume()
        except RuntimeError as exc:
            said = log.read_bytes()[seen:].decode(errors="replace") if log.exists() else ""
            if port_clash(said):
                raise PortTaken(said.strip()[-500:]) from exc
            raise

    def resume(self) -> None:
        """Start the server on its port (the same one after a `pause`: the URLs given out name it)."""
        self._run(
            pg_bin("pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "log"), "-w", "-t", "60",
            "-o", f"-h 127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off -c max_connections=200",
            "start",
        )  # fmt: skip

    def stop(self) -> None:
        """Stop the server (whether it runs or not) and remove its folder."""
        try:
            subprocess.run(self._command(*self._stop_argv()), capture_output=True, timeout=120, cwd=self.dir)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            self._reaper.done()

    def _stop_argv(self) -> tuple[str, ...]:
        return (self._pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def _command(self, *argv: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv] if self._as_postgres else list(argv)

    def _run(self, *argv: str) -> None:
        cmd = self._command(*argv)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=self.dir)
        if done.returncode != 0:
            log = self.dir / "log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(argv[:1])} failed ({done.returncode}): {done.stderr}\n{tail}")


_shared: PostgresServer | None = None


def shared_server() -> PostgresServer:
    """One server for the whole test process, started on first use and stopped at exit."""
    global _shared
    if _shared is None:
        _shared = PostgresServer()
        atexit.register(_shared.stop)
    return _shared


BACKENDS = ["sqlite", "postgres"]


def url_for(backend: str, tmp_path: Path) -> str:
    """A fresh run store URL: a SQLite file in `tmp_path`, or a new database on the shared server.

    Test modules parametrize a `store_url` fixture over `BACKENDS` with it, so
    that each test runs on both stores.
    """
    if backend == "sqlite":
        return str(tmp_path / "runs.db")
    return shared_server().new_database()
