"""A SQLite store's hold on a run id while a start with that id prepares and stores it.

PostgreSQL holds a run id with an advisory lock (`PostgresStore.starting`); a
SQLite file has none, so the hold is a file lock beside the store: one small
file per run id being started, in `<store>-starting/`, locked with `flock`.
An flock belongs to the open file, so a second start of the id is refused
whether it comes from another process or from another store object of this
one; a process that dies lets go with it. The file is removed (while still
locked) when its start ends, so the folder holds only the starts under way.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agent.durable.store.base import StartingNow


def starts_of(store: Path) -> Path:
    """The folder beside the store file that holds the run ids being started."""
    return store.with_name(store.name + "-starting")


@contextmanager
def holding(store: Path, run_id: str) -> Iterator[None]:
    """Hold `run_id` on the store file at `store` inside the block; `StartingNow` when a start of
    it holds it already (in any process). With no folder to be had (a read-only folder, whose
    store refuses the start's write anyway), nothing is held."""
    folder = starts_of(store)
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        yield
        return
    lock = folder / (hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest() + ".lock")
    fd = _locked(lock, run_id)
    if fd is None:  # no lock file to be had (a full disk, too many open files): as with no folder
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)  # still locked: a start that opened it meanwhile sees it gone (`_locked`)
        os.close(fd)


def _locked(lock: Path, run_id: str) -> int | None:
    """The descriptor of `lock`, flocked by this call; `StartingNow` when another holds it. A file
    removed by the start that held it between our open and our lock is no hold: open it anew."""
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StartingNow(
                    f"a run with id {run_id!r} is being started now, by another process or store on "
                    f"this file (its catalog's prepare runs); nothing was changed. Send the same request "
                    "again once that start has been answered"
                ) from None
            return None  # a file system without flock: nothing is held
        if _same_file(fd, lock):
            return fd
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        now = os.stat(path)
    except OSError:
        return False
    opened = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (opened.st_dev, opened.st_ino)
