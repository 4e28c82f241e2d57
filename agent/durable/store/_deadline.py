"""A deadline for each call to a database server: a call still waiting past it has its connection cut.

A server that accepts a connection and then says nothing (a frozen process, a network that drops
packets without a reset) leaves a call waiting on its socket for ever: TCP keepalives only probe
an idle connection, and a server-side `statement_timeout` needs a server that answers. The
`Watchdog` shuts such a socket down from its own thread, so the call returns with an error the
store turns into a `StoreError` saying how long it waited.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(eq=False)
class Watch:
    """One call under watch: its socket, until when it may wait, and whether it was cut off."""

    fd: int
    deadline: float
    seconds: float
    cut: bool = field(default=False)


class Watchdog:
    """Cuts the connection of any call that outlasts its deadline (one thread, started on first use).

    Arming a call costs a lock and a set insertion: the thread is never woken for it. It sleeps at
    most `period` seconds when idle, and until the nearest deadline otherwise, so a call armed while
    it sleeps (its deadline at least `period` away) is still cut on time.
    """

    def __init__(self, period: float) -> None:
        self.period = period
        self._wake = threading.Condition(threading.Lock())
        self._armed: set[Watch] = set()
        self._thread: threading.Thread | None = None
        self._closed = False

    @contextmanager
    def call(self, fd: int, seconds: float) -> Iterator[Watch]:
        """Watch the call made inside the block on socket `fd` for `seconds`."""
        watch = Watch(fd, time.monotonic() + seconds, seconds)
        if self._closed:  # the store is closed: its connections too
            yield watch
            return
        with self._wake:
            self._armed.add(watch)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="endstate-store-deadline", daemon=True)
                self._thread.start()
            elif watch.deadline < time.monotonic() + self.period:  # sooner than the thread would look
                self._wake.notify()
        try:
            yield watch
        finally:
            with self._wake:  # after this, the thread never touches `fd` for this call
                self._armed.discard(watch)

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
                    cut_off(watch.fd)
                waiting = [w.deadline for w in self._armed if not w.cut]
                self._wake.wait(min([self.period, *(d - now for d in waiting)]))

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()


def cut_off(fd: int) -> None:
    """Shut down the socket `fd` (through a duplicate: the connection still owns and closes `fd`):
    a call waiting on it sees the connection end at once."""
    try:
        with socket.socket(fileno=os.dup(fd)) as duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed: nothing is waiting on it
        pass
