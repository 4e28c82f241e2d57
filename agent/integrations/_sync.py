"""Sync entry points for the integrations' async runs."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import selectors
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from agent._aio import in_running_loop
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
    if not in_running_loop():
        return _to_its_end(_RUNNERS.runner(), coro)
    coro.close()
    raise ConfigError("run/resume were called inside a running event loop: await arun/aresume instead")


def _to_its_end(runner: asyncio.Runner, coro: Coroutine[Any, Any, T]) -> T:
    """`coro` run on `runner`'s loop. A `SystemExit` or `KeyboardInterrupt` that leaves the loop while
    the run goes on (raised in a task of the framework's own, a tool's, which asyncio lets out of the
    loop at once; or a signal handler's `sys.exit()`) goes on up, as out of `asyncio.run`, once the run
    has been cancelled and has ended (its stop recorded): the kept loop would go on with it in the
    thread's next sync run."""
    try:
        return runner.run(coro, context=contextvars.copy_context())
    except (SystemExit, KeyboardInterrupt) as first:
        loop = runner.get_loop()
        for task in [t for t in asyncio.all_tasks(loop) if t.get_coro() is coro]:
            task.cancel()
            while not task.done():  # each other task the exit ends lets it out of the loop again, once
                try:
                    loop.run_until_complete(task)
                except KeyboardInterrupt as again:
                    if again is not first:  # Ctrl-C once more: the caller waits no longer for the run
                        raise first from None
                except BaseException:  # the exception going up says enough
                    pass
        raise


class _Kept:
    """A thread's `asyncio.Runner`, closed with its loop once the thread has ended.

    A forked child's copy is its parent's loop, whose epoll instance and self-pipe the two processes
    share: run or closed as it is, the child's loop unregisters the parent's descriptors from that
    instance (the parent's loop then never wakes for a thread's call again) and runs the parent's
    tasks. The child lets go of it (`forked`) and runs on a loop of its own."""

    def __init__(self) -> None:
        self.runner = asyncio.Runner()
        self.pid = os.getpid()
        self.let_go = False

    def forked(self) -> bool:
        """Whether this is a copy a forked child inherited; if so, it is let go here (once): its own
        file descriptors closed, nothing of the parent's unregistered or run."""
        if self.pid == os.getpid() or self.let_go:
            return self.let_go
        self.let_go = True
        loop: Any = self.runner.get_loop()
        shared = getattr(loop, "_selector", None)
        if not isinstance(shared, selectors.BaseSelector):  # another kind of loop: kept, never closed
            _INHERITED.append(self)
            return True
        loop._selector = selectors.DefaultSelector()  # the child's own, empty: closing it unregisters nothing
        with contextlib.suppress(Exception):
            shared.close()  # the child's descriptor of the shared instance: no registration changes
            loop.close()  # its self-pipe's descriptors in the child; no callback runs
        return True

    def __del__(self) -> None:
        # At the interpreter's exit no thread can start, and `Runner.close` waits for one to shut the
        # loop's default executor down: the process would never exit. The OS reclaims it all then.
        if self.forked() or sys.is_finalizing():
            return
        with contextlib.suppress(Exception):  # a thread's end: its loop closed, nothing to tell
            self.runner.close()


class _Runners(threading.local):
    """One kept runner per thread (a loop runs in one thread only), and per process."""

    kept: _Kept | None = None

    def runner(self) -> asyncio.Runner:
        """This thread's runner; a new one if its loop was closed (by code that took it as its own),
        or if it was inherited through `os.fork`."""
        if self.kept is None or self.kept.forked() or self.kept.runner.get_loop().is_closed():
            self.kept = _Kept()
        return self.kept.runner


_RUNNERS = _Runners()
_INHERITED: list[_Kept] = []  # loops a forked child let go that it cannot close safely: never closed
