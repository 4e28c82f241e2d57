"""Time and cancellation as injected seams, so tests and durable engines can supply their own."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable

from agent._valid import is_finite_number
from agent.errors import ConfigError


@runtime_checkable
class Clock(Protocol):
    """Wall time (for deadlines) and a monotonic time (for the active-seconds budget)."""

    def time(self) -> float: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The process's own clocks."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK = SystemClock()


def clock_problem(clock: Clock) -> str | None:
    """What is wrong with `clock` as it reads now: a method that raises, or that returns no finite
    number of seconds (the run's time budget, deadlines and results are reckoned by it); None when
    both read well."""
    for method in ("time", "monotonic"):
        try:
            value = getattr(clock, method)()
        except Exception as exc:
            return f"clock.{method}() raised {type(exc).__name__}: {exc}"
        if not is_finite_number(value):
            return f"clock.{method}() returned {value!r:.60}, not a finite number of seconds"
    return None


def check_clock(clock: Clock, who: str) -> None:
    """A `ConfigError` naming `who` (say "agent 'x': ") when `clock` does not read well (see
    `clock_problem`), before a run segment begins on it."""
    if (problem := clock_problem(clock)) is not None:
        raise ConfigError(
            f"{who}{problem}; give a clock whose time() and monotonic() read seconds (SystemClock())"
        )


class StoppedClock:
    """The clock of a run whose own clock failed mid-way: stopped at the run's last reading (its wall
    time is the system's), so that the run can still end and say so."""

    def __init__(self, monotonic: float) -> None:
        self._monotonic = monotonic

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return self._monotonic


async def pause(clock: Clock, seconds: float) -> None:
    """Wait `seconds` (a retry's backoff): by the clock's own `sleep` when it has one (a durable
    engine's, which knows what of the wait was the run's), else `asyncio.sleep`."""
    own = getattr(clock, "sleep", None)
    await (own(seconds) if callable(own) else asyncio.sleep(seconds))


@runtime_checkable
class CancelSignal(Protocol):
    """Anything with `is_set()` that returns True or False: an `asyncio.Event`, a `threading.Event`,
    or your own. Any other answer (a Mock, "no", 1) is no answer: a run told it ends `error`."""

    def is_set(self) -> bool: ...


def unanswered(asked: object) -> str:
    """What is wrong with a cancel signal whose `is_set()` returned `asked`, neither True nor False."""
    return (
        f"The cancel signal's is_set() returned {type(asked).__name__}, not True or False: a cancel "
        "signal (agent.CancelSignal) is an object whose is_set() returns a bool, such as an asyncio.Event "
        "or a threading.Event"
    )


def check_cancel(given: object, what: str = "cancel") -> CancelSignal | None:
    """`given` when it is None or a cancel signal; else a `ConfigError` that says what `what` must be."""
    if given is not None and not callable(getattr(given, "is_set", None)):
        raise ConfigError(
            f"{what} must have is_set() (an asyncio.Event or a threading.Event), not {type(given).__name__}"
        )
    return given  # type: ignore[return-value]
