"""Time and cancellation as injected seams, so tests and durable engines can supply their own."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable

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


async def pause(clock: Clock, seconds: float) -> None:
    """Wait `seconds` (a retry's backoff): by the clock's own `sleep` when it has one (a durable
    engine's, which knows what of the wait was the run's), else `asyncio.sleep`."""
    own = getattr(clock, "sleep", None)
    await (own(seconds) if callable(own) else asyncio.sleep(seconds))


@runtime_checkable
class CancelSignal(Protocol):
    """Anything with `is_set()`: an `asyncio.Event`, a `threading.Event`, or your own."""

    def is_set(self) -> bool: ...


def check_cancel(given: object, what: str = "cancel") -> CancelSignal | None:
    """`given` when it is None or a cancel signal; else a `ConfigError` that says what `what` must be."""
    if given is not None and not callable(getattr(given, "is_set", None)):
        raise ConfigError(
            f"{what} must have is_set() (an asyncio.Event or a threading.Event), not {type(given).__name__}"
        )
    return given  # type: ignore[return-value]
