"""Event-loop helpers the sync entry points share."""

from __future__ import annotations

import asyncio


def in_running_loop() -> bool:
    """Whether this thread is running an event loop now.

    Asked before a sync entry point starts its own loop, which it must do outside the `except` that
    `asyncio.get_running_loop` needs: a run started inside that `except` ran wholly "during handling
    of" its RuntimeError, so every exception the run's code raised (a tool's, a checkpointer's) was
    chained to "no running event loop" in the logs, and `sys.exc_info()` in an async tool said so."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
