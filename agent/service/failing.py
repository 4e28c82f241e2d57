"""The log of the service's periodic tasks that fail (the deadline sweep, recovery, audits, upkeep).

A store that is down fails every task at every sweep: logged each time, that is three lines every
five seconds for as long as the outage lasts, and the first line, which says what went wrong, scrolls
away. So a task's failure is logged when it starts failing; the same failure again at most once every
`REPEAT_EVERY` seconds, saying how many times it failed meanwhile; a different failure at once; and
one line when the task works again, saying for how long it did not.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from agent.errors import EndstateError

log = logging.getLogger("endstate.service")

REPEAT_EVERY = 60.0  # seconds between two lines of a task that goes on failing the same way


@dataclass
class _Streak:
    """A task failing since `since`: its last logged failure, and the failures since it was logged."""

    since: float
    said_at: float
    said: tuple[str, str]
    failures: int = 1
    unsaid: int = 0


class Failing:
    """Which periodic tasks are failing now, and what was said of each (see the module)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, every: float = REPEAT_EVERY) -> None:
        self._clock, self._every = clock, every
        self._streaks: dict[str, _Streak] = {}

    def failed(self, what: str, exc: Exception) -> None:
        """`what` failed with `exc`, and is tried again later."""
        now, seen = self._clock(), (type(exc).__name__, str(exc))
        streak = self._streaks.get(what)
        if streak is None:
            self._streaks[what] = _Streak(since=now, said_at=now, said=seen)
            _say(f"{what} failed; trying again later", exc)
            return
        streak.failures += 1
        if seen == streak.said and now - streak.said_at < self._every:
            streak.unsaid += 1
            return
        again = f"{what} failed again ({streak.failures} times in {now - streak.since:.0f} s"
        again += f", {streak.unsaid} not logged)" if streak.unsaid else ")"
        _say(f"{again}; trying again later", exc, traceback=seen != streak.said)
        streak.said_at, streak.said, streak.unsaid = now, seen, 0

    def worked(self, what: str) -> None:
        """`what` went well: say so once if it was failing."""
        streak = self._streaks.pop(what, None)
        if streak is not None:
            took = self._clock() - streak.since
            log.warning("%s works again, after failing %d times over %.0f s", what, streak.failures, took)


def _say(text: str, exc: Exception, traceback: bool = True) -> None:
    """An EndstateError in one line, as it says what is wrong; any other with its traceback, which
    says where (once for each new failure, not at each repeat of one)."""
    if isinstance(exc, EndstateError):
        log.error("%s: %s", text, exc)
    elif traceback:
        log.error("%s", text, exc_info=exc)
    else:
        log.error("%s: %s: %s", text, type(exc).__name__, exc)
