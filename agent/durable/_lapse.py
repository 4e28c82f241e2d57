"""Which run-out leases a sweep may take: those this process saw unrenewed for a whole lease.

A lease runs out by the store's clock; a clock that steps (or, on SQLite over several hosts, a
sweeper whose clock runs ahead) makes a lease a live worker renews look run out. A sweep therefore
takes a lease only once it has itself seen the same lease (same owner, same end) for one whole lease
by its own monotonic clock, which no wall clock's step moves: a live worker renews it well before.
The whole lease is the longer of the sweeper's and the one its holder wrote (a worker started with a
longer `--lease` renews less often).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from agent.durable.store import RunRecord

_Seen = tuple[str | None, float | None]  # a lease as seen: its owner and its end


class LapseWatch:
    """When this process first saw each running run's current lease (`monotonic` seconds)."""

    def __init__(self, monotonic: Callable[[], float]) -> None:
        self._monotonic = monotonic
        self._seen: dict[str, tuple[_Seen, float]] = {}
        self._lock = threading.Lock()

    def unrenewed(self, running: Iterable[RunRecord], seconds: float) -> set[str]:
        """The ids of `running` (every running run: the others are forgotten) whose lease this
        watch has seen unchanged for at least `seconds`, or the lease's own length where its holder
        wrote a longer one (it renews at a third of that)."""
        now = self._monotonic()
        with self._lock:
            seen: dict[str, tuple[_Seen, float]] = {}
            wait: dict[str, float] = {}  # how long each lease must be seen unchanged
            for record in running:
                lease: _Seen = (record.owner, record.lease_until)
                before = self._seen.get(record.run_id)
                kept = before is not None and _same(before[0], lease)
                seen[record.run_id] = before if before is not None and kept else (lease, now)
                wait[record.run_id] = max(seconds, record.lease_seconds or 0.0)
            self._seen = seen
        return {run_id for run_id, (_, since) in seen.items() if now - since >= wait[run_id]}


def _same(before: _Seen, now: _Seen) -> bool:
    """True when lease `now` is `before` unrenewed: the same owner, and an end no later (a renewal
    moves it later)."""
    return before[0] == now[0] and (now[1] is None or (before[1] is not None and now[1] <= before[1]))
