"""svc42: a SQLite store this process may not write is not "ready".

Before, `endstate serve` over a store file it may only read (mode 444, a volume mounted read-only
under the file) started and answered `/readyz` 200 "ready": SQLite opens such a file read-only
without a word, and the probe (take the write lock, give it back) writes nothing, so it passed;
then every start, answer and checkpoint failed (503). Now the probe writes a row and rolls it back,
so `/readyz` is a 503 saying the file is read-only and what to do, and it changes nothing.

The tests run as root, which writes any file: the probe runs in a process without the capabilities
that let root ignore a file's mode (`CAP_DAC_OVERRIDE`, `CAP_DAC_READ_SEARCH`).
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

from agent.durable.store import open_store

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2

PROBE = """
import sys
from agent.durable.store import StoreError, open_store
store = open_store(sys.argv[1], create=False)
try:
    store.answers()
    print("ready")
except StoreError as exc:
    print("not ready:", exc)
store.close()
"""


def as_a_user() -> None:
    """In the child before it runs Python: root's file-mode override dropped for good."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)


def probe(path: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=as_a_user,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_read_only_store_file_is_not_ready_and_is_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    open_store(str(path)).close()
    assert probe(path) == "ready"  # writable: ready, as before
    before = path.read_bytes()
    path.chmod(0o444)
    said = probe(path)
    assert said.startswith("not ready: the run store ") and "attempt to write a readonly database" in said
    assert "the file is not readable and writable by this user" in said and "Make it writable" in said
    path.chmod(0o644)
    assert path.read_bytes() == before
    store = open_store(str(path))
    try:
        assert store.schema_version() > 0 and store.list_runs() == []  # the probe's row never stayed
        assert not store._rows("SELECT version FROM endstate_schema WHERE version < 0")  # type: ignore[attr-defined]
    finally:
        store.close()
