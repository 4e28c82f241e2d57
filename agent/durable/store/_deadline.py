"""A deadline for each call to a store: a call still waiting past it is cut off.

A server that accepts a connection and then says nothing (a frozen process, a network that drops
packets without a reset) leaves a call waiting on its socket for ever: TCP keepalives only probe
an idle connection, and a server-side `statement_timeout` needs a server that answers. The
`Watchdog` shuts such a socket down from its own thread (or interrupts a SQLite statement), so the
call returns with an error the store turns into a `StoreTimeout` saying how long it waited.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator

log = logging.getLogger("endstate.store")

# A call waits the store's timeout; past it, the database is asked to end it (PostgreSQL's
# statement_timeout, SQLite's busy timeout for a lock), so a database that answers says why itself,
# and the watchdog cuts the call off this much later.
CUT_AFTER = 1.0
# Opening a store migrates it, which may wait for another process's migration or build an index
# over every run: its calls get this long.
MIGRATION_SECONDS = 600.0


class Watch:
    """One call under watch (a context manager: watched inside the block): how to cut it off, until
    when it may wait, and whether it was cut off. A class of its own rather than a generator's
    context manager: one is armed at every call to a store (every checkpoint)."""

    __slots__ = ("_dog", "cut", "cut_off", "deadline", "seconds")

    def __init__(self, dog: Watchdog, cut_off: Callable[[], object], seconds: float) -> None:
        self._dog, self.cut_off, self.seconds = dog, cut_off, seconds
        self.deadline = time.monotonic() + seconds
        self.cut = False

    def __enter__(self) -> Watch:
        self._dog._arm(self)
        return self

    def __exit__(self, *_: object) -> None:
        with self._dog._lock:  # after this, the thread never cuts this call off
            self._dog._armed.discard(self)


class Watchdog:
    """Cuts off any call that outlasts its deadline (one thread, started on first use).

    Arming a call costs a lock and a set insertion. The thread sleeps at most `period` seconds, and
    until the nearest deadline when sooner; it is woken for a call only when that call's deadline
    comes before the thread looks again (`_looks_at`). A store's calls all get the same allowance,
    so a call's deadline is after those of the calls before it: the thread is not woken for it
    (waking it at every call cost a thread hand-over, GIL and all, at every checkpoint).
    """

    def __init__(self, period: float) -> None:
        self.period = period
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._armed: set[Watch] = set()
        self._thread: threading.Thread | None = None
        self._looks_at = -math.inf  # when the waiting thread looks at the armed calls again
        self._closed = False

    @contextlib.contextmanager
    def socket_call(self, fd: int, seconds: float) -> Iterator[Watch]:
        """Watch the call made inside the block on socket `fd` for `seconds`, cut off by shutting the
        socket down through a duplicate of `fd` taken now (while `fd` is surely the call's socket).

        Not through `fd` itself: the connection may close it during the call (libpq does when it
        sees the connection end) and the number be reused by another socket before the block ends;
        the duplicate still names the call's socket. It is closed once the watch is off."""
        duplicate = socket.socket(fileno=os.dup(fd))
        try:
            with self.call(functools.partial(shut_down, duplicate), seconds) as watch:
                yield watch
        finally:
            duplicate.close()

    def call(self, cut_off: Callable[[], object], seconds: float) -> Watch:
        """Watch the call made inside the block (`with watchdog.call(...)`) for `seconds`; past them,
        `cut_off()` is called once (from the watchdog's thread, never after the block ended)."""
        return Watch(self, cut_off, seconds)

    def _arm(self, watch: Watch) -> None:
        if self._closed:  # the store is closed: its connections too
            return
        with self._lock:
            self._armed.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="endstate-store-deadline", daemon=True)
                self._thread.start()
            elif watch.deadline < self._looks_at:  # sooner than the thread would look
                self._wake.notify()

    def waited(self) -> float:
        """How long the oldest call under watch has waited so far, in seconds (0 when none is)."""
        with self._wake:
            began = min((w.deadline - w.seconds for w in self._armed), default=None)
        return 0.0 if began is None else time.monotonic() - began

    def _run(self) -> None:
        with self._wake:
            while not self._closed:
                now = time.monotonic()
                for watch in [w for w in self._armed if w.deadline <= now and not w.cut]:
                    watch.cut = True
                    _cut(watch)
                waiting = [w.deadline for w in self._armed if not w.cut]
                pause = min([self.period, *(d - now for d in waiting)])
                self._looks_at = now + pause
                self._wake.wait(pause)

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()


def _cut(watch: Watch) -> None:
    """Cut one call off; a cut-off that fails is logged, and the watchdog goes on watching the others
    (its thread ending would leave every later call unwatched)."""
    try:
        watch.cut_off()
    except Exception:
        log.warning("could not cut off a store call past its %.1f s; the watchdog goes on", watch.seconds,
                    exc_info=True)  # fmt: skip


def shut_down(sock: socket.socket) -> None:
    """Shut `sock` down: a call waiting on it (or on any duplicate of it) sees the connection end at
    once; the descriptors stay open, each closed by its owner."""
    with contextlib.suppress(OSError):  # the connection ended already: nothing waits on it
        sock.shutdown(socket.SHUT_RDWR)
