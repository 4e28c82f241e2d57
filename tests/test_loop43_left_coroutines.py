"""A coroutine a plain-def tool (or verifier) returns after the run moved on is closed, not leaked.

A plain `def` may hand back a coroutine (an `async def` behind a decorator); the loop awaits it. When
the run was cancelled while the function still ran on its worker thread, the coroutine it returned
was dropped unawaited: Python warned "coroutine ... was never awaited" at garbage collection, and
whatever the coroutine holds was never let go. Now it is closed when it arrives too late.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from agent import Agent, StopReason, tool
from agent.models.scripted import ScriptedModel, call, finish
from agent.tools import _in_daemon_thread


def test_a_coroutine_returned_after_the_run_was_cancelled_is_closed() -> None:
    asyncio.run(_cancelled_while_the_tool_runs())


async def _cancelled_while_the_tool_runs() -> None:
    started, gate, made = threading.Event(), threading.Event(), []

    async def work() -> str:
        return "done"

    @tool
    def slow() -> Any:
        """Work, then hand back the rest as a coroutine."""
        started.set()
        gate.wait(10)
        made.append(coro := work())
        return coro

    model = ScriptedModel([[call("slow")], [finish("done", "ok")]])
    task = asyncio.create_task(Agent(name="a", model=model, tools=[slow]).arun("t"))  # type: ignore[list-item]
    assert await asyncio.to_thread(started.wait, 10)
    task.cancel()
    assert (await task).reason is StopReason.CANCELLED
    gate.set()
    for _ in range(500):  # the worker hands its value back on the loop
        if made and inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED:
            break
        await asyncio.sleep(0.01)
    assert inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED


def test_a_run_cancelled_at_any_step_leaves_no_verifier_coroutine_unawaited() -> None:
    async def verifier(ctx: object) -> list[str]:
        await asyncio.sleep(0)
        return []

    @tool
    async def step() -> str:
        """A step."""
        await asyncio.sleep(0)
        return "x"

    async def cancel_after(steps: int) -> None:
        model = ScriptedModel([[call("step")], [finish("done", "ok")]])
        task = asyncio.create_task(Agent(name="a", model=model, tools=[step], verifiers=[verifier]).arun("t"))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):  # cancelled before it began: nothing to return
            assert (await task).reason in (StopReason.CANCELLED, StopReason.SUCCESS)

    async def every_step() -> None:
        for steps in range(120):
            await cancel_after(steps)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(every_step())
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]


async def _later() -> str:
    return "x"


def _hands_back(release: threading.Event, made: list[Any]) -> Callable[[], Any]:
    """A plain-def function that, once `release` is set, makes a coroutine, keeps it in `made` and
    returns it (to the loop that awaits it, if any still does)."""

    def slow() -> Any:
        release.wait(10)
        made.append(_later())
        return made[0]

    return slow


def test_a_coroutine_handed_back_after_the_event_loop_closed_is_closed() -> None:
    """A plain-def function that returns a coroutine once its run's event loop has closed (the run was
    cancelled and `asyncio.run` ended while the worker thread still ran): the coroutine was dropped with
    the delivery, and garbage collection warned "never awaited" later, in whatever code ran then."""
    made: list[Any] = []
    release = threading.Event()
    slow = _hands_back(release, made)

    async def main() -> None:
        task = asyncio.ensure_future(_in_daemon_thread(slow, {}))
        await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(main())
    release.set()
    for _ in range(500):
        if made and inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED:
            break
        time.sleep(0.01)
    assert made and inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED


def test_a_coroutine_whose_delivery_the_closing_loop_drops_is_closed() -> None:
    """The worker handed its coroutine to the loop (`call_soon_threadsafe`) while the loop still ran,
    but the loop closed before it ran that callback (`asyncio.run` ending after a cancel): `close()`
    drops its callbacks, and the coroutine with them warned "never awaited" (a verifier's, in 2 of 40
    runs of `test_a_run_cancelled_at_any_step_leaves_no_verifier_coroutine_unawaited` under load)."""
    made: list[Any] = []
    release = threading.Event()
    slow = _hands_back(release, made)

    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(_in_daemon_thread(slow, {}))
        loop.run_until_complete(asyncio.sleep(0.05))
        task.cancel()
        loop.run_until_complete(asyncio.gather(task, return_exceptions=True))
        release.set()
        for _ in range(1000):  # until the worker's delivery waits among the loop's callbacks
            if made and loop._ready:  # type: ignore[attr-defined]
                break
            time.sleep(0.01)
        assert made and loop._ready  # type: ignore[attr-defined]
    finally:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loop.close()  # its callbacks dropped, never run
            gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
    assert inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED
