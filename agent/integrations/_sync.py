"""Sync entry points for the integrations' async runs."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from agent.errors import ConfigError

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end on this thread's event loop for sync runs; inside a running event loop,
    say to await the async form instead.

    The loop stays open between runs, as the frameworks' own sync entry points keep theirs
    (`Agent.run_sync`, `Runner.run_sync`): the model clients they cache (an `httpx.AsyncClient`'s
    pooled connections) and loop-bound helpers (an SDK session's `asyncio.Lock`) belong to the loop
    they were first used on. A new loop per run, as `asyncio.run` makes, opened a new connection to
    the model API for every run and left the last one's socket open. Ctrl-C cancels the run as
    `asyncio.run` does (`asyncio.Runner`), and the run sees the caller's context variables (its
    current span, say) as they are at the call.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _RUNNERS.runner().run(coro, context=contextvars.copy_context())
    coro.close()
    raise ConfigError("run/resume were called inside a running event loop: await arun/aresume instead")


class _Kept:
    """A thread's `asyncio.Runner`, closed with its loop once the thread has ended."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at the interpreter's exit, say: nothing to tell
            self.runner.close()


class _Runners(threading.local):
    """One kept runner per thread (a loop runs in one thread only)."""

    kept: _Kept | None = None

    def runner(self) -> asyncio.Runner:
        """This thread's runner; a new one if its loop was closed (by code that took it as its own)."""
        if self.kept is None or self.kept.runner.get_loop().is_closed():
            self.kept = _Kept()
        return self.kept.runner


_RUNNERS = _Runners()
