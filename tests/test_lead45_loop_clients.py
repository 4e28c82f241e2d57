"""lead45: event loops on two threads starting their first Claude call at once get a client each."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from agent.models.anthropic import _LoopClients


class SlowToTest:
    """A stand-in SDK client whose truth test lets another thread run, as a thread switch can."""

    def __init__(self) -> None:
        self.closed = False

    def __bool__(self) -> bool:
        time.sleep(0.05)
        return True

    def is_closed(self) -> bool:
        return self.closed

    async def close(self) -> None:
        self.closed = True


def test_two_loops_starting_at_once_never_share_the_spare_client() -> None:
    """Before: both threads read the one spare client before either cleared it, and both loops held
    it; the first loop to end closed the client the other loop was still calling through."""
    clients = _LoopClients(SlowToTest)
    got: list[Any] = []
    start = threading.Barrier(2)

    def first_call() -> None:
        start.wait()
        got.append(asyncio.run(clients.get()))

    threads = [threading.Thread(target=first_call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(got) == 2 and got[0] is not got[1]
