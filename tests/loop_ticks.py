"""How often another task got the event loop while a block ran: what the loop owes every other run
(its model and tool calls, its lease heartbeats) while one run's slow build, cleanup or audit waits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

EVERY = 0.01  # seconds the other task asks to sleep between ticks: 100 a second on a free loop


@dataclass
class Ticks:
    count: int = 0


@contextlib.asynccontextmanager
async def loop_ticks() -> AsyncIterator[Ticks]:
    """Count, in the block, the times a task sleeping `EVERY` seconds at a time woke."""
    ticks = Ticks()

    async def another_run() -> None:
        while True:
            await asyncio.sleep(EVERY)
            ticks.count += 1

    ticker = asyncio.create_task(another_run())
    try:
        yield ticks
    finally:
        ticker.cancel()
