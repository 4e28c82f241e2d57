"""A real PgBouncer in front of the tests' PostgreSQL server, on a free loopback port.

`PgBouncer(server, pool_mode, extra=...)` (`extra`: more lines of its `[pgbouncer]` section) writes
its own config and auth file in a temporary folder and runs
Debian's `pgbouncer` (1.18) in the foreground, as the `postgres` user when the tests run as root
(PgBouncer refuses root); `url(database_url)` is that database's URL through it, `stop()` stops it
and removes the folder. A missing binary fails the test (install it: `apt-get install -y pgbouncer`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from pg import PostgresServer
from ports import PortTaken, held_by, on_free_port
from reaper import Reaper

USERS = ("postgres", "endstate_app")  # the names a test may connect as (trust: no password)


def pgbouncer_bin() -> str:
    """The path of `pgbouncer`, or fail saying what to install."""
    found = shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
    )
    if found is None:
        pytest.fail("pgbouncer was not found: install it (apt-get install -y pgbouncer)", pytrace=False)
    return found


class PgBouncer:
    """One PgBouncer process pooling connections to `server` in `pool_mode` (transaction or session)."""

    def __init__(self, server: PostgresServer, pool_mode: str, pool_size: int = 4, extra: str = "") -> None:
        self._bin = pgbouncer_bin()
        self.server, self.pool_mode, self.pool_size, self.extra = server, pool_mode, pool_size, extra
        self.dir = Path(tempfile.mkdtemp(prefix="endstate-pgbouncer-"))
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._reaper: Reaper | None = None
        self._as_postgres = os.geteuid() == 0
        (self.dir / "userlist.txt").write_text("".join(f'"{user}" ""\n' for user in USERS))
        if self._as_postgres:
            for path in (self.dir, self.dir / "userlist.txt"):
                shutil.chown(path, "postgres", "postgres")
        try:
            on_free_port(self._start_on, "PgBouncer")
        except BaseException:
            self.stop()
            raise

    def url(self, database_url: str) -> str:
        """`database_url` (a database on `server`) reached through this PgBouncer."""
        parts = urlsplit(database_url)
        user = parts.netloc.rpartition("@")[0]
        return urlunsplit(parts._replace(netloc=f"{user}@127.0.0.1:{self.port}"))

    def _config(self, port: int) -> str:
        return (
            f"[databases]\n* = host=127.0.0.1 port={self.server.port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.dir / 'userlist.txt'}\n"
            f"pool_mode = {self.pool_mode}\ndefault_pool_size = {self.pool_size}\nmax_client_conn = 200\n"
            f"logfile = {self.dir / 'log'}\npidfile = {self.dir / 'pid'}\n"
            "server_check_delay = 0\n" + self.extra
        )

    def _start_on(self, port: int) -> None:
        config = self.dir / "pgbouncer.ini"
        config.write_text(self._config(port))
        as_user = {"user": "postgres", "group": "postgres"} if self._as_postgres else {}
        with (self.dir / "stderr").open("ab") as err:  # a file: a pipe nobody reads would fill and stall it
            self._proc = subprocess.Popen(
                [self._bin, str(config)], stdout=subprocess.DEVNULL, stderr=err, cwd=self.dir, **as_user
            )
        self._reaper = Reaper(pids=[self._proc.pid], remove=[str(self.dir)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                said = self._said()
                self._reaper.done()
                if "address already in use" in said.lower():
                    raise PortTaken(said[-500:])
                raise RuntimeError(f"pgbouncer exited ({self._proc.returncode}): {said[-2000:]}")
            if _answers(port) and held_by(self._proc.pid, port):
                self.port = port
                return
            time.sleep(0.05)
        raise RuntimeError(f"pgbouncer did not listen on {port} within 30 s: {self._said()[-2000:]}")

    def _said(self) -> str:
        said = [
            path.read_text(errors="replace")
            for path in (self.dir / "log", self.dir / "stderr")
            if path.exists()
        ]
        return "".join(said)

    def stop(self) -> None:
        """Stop PgBouncer (SIGTERM: at once, clients disconnected) and remove its folder."""
        try:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait(timeout=10)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            if self._reaper is not None:
                self._reaper.done()


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
