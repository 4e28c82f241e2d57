"""A home-grown loop observed with `observe_run` counts only the cancels asked since the run began.

A run whose task is cancelled ends `cancelled` and leaves the cancel counted on the task (its caller
reads it). An async home-grown loop in that task afterwards, whose call raised its own
`CancelledError` (a library's cancelled future, let out of the block), was recorded `cancelled`
though nobody cancelled it; alone it is an `error`, as Endstate's own loop and the integrations say."""

from __future__ import annotations

import asyncio

import pytest
from integrations_support import Rig
from test_iso_cancel_counted import cancelled_then

from agent import StopReason
from agent.integrations import observe_run


async def homegrown(rig: Rig) -> None:
    """A loop whose one call fails with its own CancelledError, out of the block."""
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    with (
        pytest.raises(asyncio.CancelledError),
        observe_run(rig.hooks, agent="home", task_type="t", model="m"),
    ):
        await future


def test_a_homegrown_run_after_a_cancelled_run_in_its_task_is_not_cancelled(rig: Rig) -> None:
    asyncio.run(homegrown(rig))
    assert rig.stops("home", "t", "error") == 1  # alone: the call's failure
    first, _, cancelling = cancelled_then(lambda: homegrown(rig))
    assert first.reason is StopReason.CANCELLED and cancelling
    assert (rig.stops("home", "t", "cancelled"), rig.stops("home", "t", "error")) == (0, 2)


def test_a_homegrown_run_whose_task_is_cancelled_is_cancelled(rig: Rig) -> None:
    async def waiting() -> None:
        with observe_run(rig.hooks, agent="home", task_type="t", model="m"):
            await asyncio.sleep(30)

    async def main() -> None:
        task = asyncio.create_task(waiting())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert rig.stops("home", "t", "cancelled") == 1


def test_a_synchronous_homegrown_run_is_observed_as_before(rig: Rig) -> None:
    with pytest.raises(RuntimeError), observe_run(rig.hooks, agent="home", task_type="t", model="m"):
        raise RuntimeError("the loop failed")
    assert rig.stops("home", "t", "error") == 1
