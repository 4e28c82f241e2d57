"""The run store's clock, read seldom: the time a runner sets and reckons deadlines by.

Workers of several hosts share one store; each host's wall clock may be off. A help deadline set by
one worker's clock and judged by another's (or by the sweep, which judges by the store's) would
end a person's wait early or late by their difference. So a runner on the system clock tells time
by the store's: SQLite's is this machine's own (one file, one machine), read as is; another store's
(PostgreSQL: its server's) is read at most once every `REFRESH_SECONDS` and carried on in between
by the time elapsed on this host (`since_boot`), which no step of this host's wall clock moves and
which, unlike the monotonic clock, goes on while the host is suspended (a laptop's sleep, a VM paused):
carried on by the monotonic clock, a read made before a suspend of an hour told the store's time an
hour behind after it, and help deadlines set then had passed when they were set.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from agent.durable.store import RunStore

log = logging.getLogger("endstate.store")
REFRESH_SECONDS = 60.0  # how long a read of the store's clock is carried on before it is read again
READER = "endstate-store-clock"  # the name of the thread of a read


_BOOTTIME: int | None = getattr(time, "CLOCK_BOOTTIME", None)


def since_boot() -> float:
    """Seconds elapsed on this host, suspended time included: Linux's `CLOCK_BOOTTIME`; where there is
    none, the monotonic clock (which may stand still while the host is suspended)."""
    if _BOOTTIME is None:
        return time.monotonic()
    return time.clock_gettime(_BOOTTIME)


class StoreClock:
    """A `Clock` telling the store's time (see the module), a read carried on by `elapsed`; `monotonic`
    is this process's (a run's active time: a suspended host's sleep is none of it)."""

    def __init__(
        self,
        store: RunStore,
        refresh: float = REFRESH_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
        elapsed: Callable[[], float] = since_boot,
    ) -> None:
        self.store = store
        self._refresh, self._monotonic, self._elapsed = refresh, monotonic, elapsed
        self._local = getattr(store, "dialect", "") == "sqlite"
        self._read: tuple[float, float] | None = None  # (the store's time, elapsed) when last read
        self._reading = threading.Lock()  # held by the one read under way
        self._tried = float("-inf")  # when the last read began (elapsed): one a `refresh` at most
        if not self._local:
            self._read_store()  # here, once: later reads are made off the caller's thread

    def time(self) -> float:
        """The store's time now: the last read carried on (this host's own when none answered). A read
        due is made on a thread of its own, so an event loop asking never waits for the store."""
        if self._local:
            return time.time()
        now, read = self._elapsed(), self._read
        if now - self._tried >= self._refresh and self._reading.acquire(blocking=False):
            threading.Thread(target=self._read_store, args=(True,), name=READER, daemon=True).start()
        return time.time() if read is None else read[0] + (now - read[1])

    def monotonic(self) -> float:
        return self._monotonic()

    def _read_store(self, held: bool = False) -> None:
        """Read the store's clock (`held`: the caller took `_reading` for this read); a store that does
        not answer leaves the last read carried on."""
        self._tried = self._elapsed()
        try:
            self._read = (self.store.now(), self._elapsed())
        except Exception as exc:  # a clock never fails a run: the store's next call says what is wrong
            log.warning("reading the run store's clock failed (%s); going on by the last read", exc)
        finally:
            if held:
                self._reading.release()


def pending_by_store_clock(store: RunStore) -> Callable[[], list[tuple[str, str, int, float]]]:
    """The store's `pending_groups`, each group's oldest wait moved onto this host's clock, so the
    gauges (`now - began`, by this host's clock) reckon a wait by the store's clock."""
    clock = StoreClock(store)

    def groups() -> list[tuple[str, str, int, float]]:
        shift = time.time() - clock.time()  # 0 on SQLite
        return [(a, t, n, since + shift if since > 0 else since) for a, t, n, since in store.pending_groups()]

    return groups
