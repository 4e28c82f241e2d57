"""A blocking call given a deadline: run on a daemon thread and waited for at most so long; or
awaited there (`beside`), holding neither the event loop nor any other thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Overdue(Exception):
    """`call_within`'s call did not end within its seconds; its thread is left behind."""


def call_within(
    call: Callable[[], T], seconds: float, name: str, late: Callable[[T], None] | None = None
) -> T:
    """`call()` on a daemon thread named `name` (in a copy of this context), waited for at most
    `seconds`: what it returns, or what it raises. Past them `Overdue`: a call cannot be killed, and a
    daemon thread never keeps the process from exiting. What an overdue call returns once it ends is
    handed to `late` (on its thread), as nothing else will hold it."""
    ended, lock = threading.Event(), threading.Lock()
    done: list[tuple[bool, Any]] = []
    overdue = False

    def job() -> None:
        try:
            outcome: tuple[bool, Any] = (True, call())
        except BaseException as exc:  # handed to the caller
            outcome = (False, exc)
        with lock:
            if not overdue:
                done.append(outcome)
                ended.set()
                return
        if outcome[0] and late is not None:
            late(outcome[1])

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(job,), name=name, daemon=True).start()
    ended.wait(seconds)
    with lock:
        overdue = not done
    if overdue:
        raise Overdue(f"{name} did not end within {seconds:g} s")
    [(returned, value)] = done
    if not returned:
        raise value
    ended_with: T = value
    return ended_with


log = logging.getLogger("endstate.runner")

Calls = Callable[..., Awaitable[Any]]  # `await calls(fn, *args, **kwargs)`: where a runner's store calls go


async def here(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`call(*args, **kwargs)` where it is awaited (the `Calls` of a runner used as a library)."""
    return call(*args, **kwargs)


async def beside(call: Callable[[], T], name: str, late: Callable[[T], None] | None = None) -> T:
    """`call()` on a daemon thread of its own (in a copy of this context), awaited: what it returns or
    raises. A catalog's `prepare` or `build` that takes minutes holds no event loop and no thread that
    other calls queue on. An await cut off (cancelled: a shutdown, a request dropped) leaves the call
    running; what it returns then is handed to `late`, on a thread of its own, as nothing else will
    hold it."""
    done: concurrent.futures.Future[T] = concurrent.futures.Future()
    done.set_running_or_notify_cancel()  # never cancelled: it ends, and says how

    def job() -> None:
        try:
            value = call()
        except BaseException as exc:  # handed to the awaiting coroutine
            done.set_exception(exc)
        else:
            done.set_result(value)

    threading.Thread(target=contextvars.copy_context().run, args=(job,), name=name, daemon=True).start()
    try:
        return await asyncio.shield(asyncio.wrap_future(done))
    except asyncio.CancelledError:
        if late is not None:
            done.add_done_callback(functools.partial(_handed_late, late, name))
        raise


def _handed_late(late: Callable[[T], None], name: str, done: concurrent.futures.Future[T]) -> None:
    """What a call nobody awaits any more returned, to `late` on a daemon thread (this callback may
    run on the event loop, when the call had ended already)."""
    if done.exception() is not None:
        return

    def hand() -> None:
        try:
            late(done.result())
        except (Exception, SystemExit):
            log.warning("%s: letting go of what it made after its caller left failed", name, exc_info=True)

    threading.Thread(target=hand, name=f"{name} (late)", daemon=True).start()
