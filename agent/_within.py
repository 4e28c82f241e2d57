"""A blocking call given a deadline: run on a daemon thread and waited for at most so long."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
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
