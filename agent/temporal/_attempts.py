"""The attempts of one model activity on a worker share one model call.

Temporal tries an activity again when its heartbeat or its completion came too
late (a loaded machine), often on the same worker, sometimes while the first
attempt still runs. Each attempt calling the model would pay for a second call
(and maybe get another reply), and a model that keeps its place between calls
(the scripted one) would play its next step: the run would skip one. Here an
attempt takes the reply its worker already has for that scheduled activity, or
awaits the call in flight. A new activity with the same input (the loop asking
again on purpose) is another key: it calls the model again.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any

from temporalio import activity

from agent.models.base import ModelReply

Scheduled = tuple[str, str, str]  # a workflow's id, its execution's run id, the activity's id
Reply = dict[str, Any]


class SharedCall:
    """One model call, and the usage of what was cut off in it (`cut`), for every attempt of its
    activity on this worker."""

    def __init__(
        self, key: Scheduled | None, call: Coroutine[Any, Any, Reply], cut: list[ModelReply]
    ) -> None:
        self.key, self.cut = key, cut
        self.began, self._ended = time.monotonic(), 0.0
        self.task = asyncio.create_task(call)  # in the first attempt's context: it records to `cut`
        self.task.add_done_callback(self._done)

    def seconds(self) -> float:
        """How long the call ran (so far): an attempt that took its reply counts that as its own time."""
        return (self._ended or time.monotonic()) - self.began

    def _done(self, task: asyncio.Task[Reply]) -> None:
        self._ended = time.monotonic()
        if not task.cancelled():
            task.exception()  # seen: no attempt may be left to await a failed call

    def failed(self) -> bool:
        return self.task.done() and (self.task.cancelled() or self.task.exception() is not None)

    async def reply(self) -> Reply:
        """The call's reply (or its failure). This attempt cancelled, the call is cancelled with it,
        and what it made of that is the answer (its cut usage recorded in `cut`, or a reply that came
        all the same), unless Temporal gave the attempt up (its heartbeat came late) and tries the
        activity again: the next attempt then takes the call over."""
        try:
            return await asyncio.shield(self.task)
        except asyncio.CancelledError:
            if not self.task.done() and _given_up():
                raise
            self.task.cancel()
            return await self.task


class Attempts:
    """The latest model call of each workflow on this worker, by the scheduled activity it answers.

    A workflow makes its model calls one at a time, so a new one means the
    one before is settled: one call is kept per workflow (its executions
    too: a run continued as new has moved on), for the `limit` workflows
    that called last, until their run ends. A failed call is not kept: its retry calls again.
    """

    def __init__(self, limit: int) -> None:
        self._latest: OrderedDict[str, SharedCall] = OrderedDict()
        self._limit = limit

    def __len__(self) -> int:
        return len(self._latest)

    def drop(self, workflow_id: str) -> None:
        """Forget the workflow's call: its run ended."""
        self._latest.pop(workflow_id, None)

    def call(self, make: Callable[[], Coroutine[Any, Any, Reply]], cut: list[ModelReply]) -> SharedCall:
        """The call of the activity this attempt belongs to: the one already made or in flight on this
        worker, else a new one of `make()` recording its cut usage to `cut`."""
        key = scheduled()
        if key is None:  # not in an activity (a worker's calls made by hand): nothing to share
            return SharedCall(None, make(), cut)
        found = self._latest.get(key[0])
        if found is not None and found.key == key and not found.failed():
            self._latest.move_to_end(key[0])
            return found
        made = self._latest[key[0]] = SharedCall(key, make(), cut)
        self._latest.move_to_end(key[0])
        while len(self._latest) > self._limit:
            self._latest.popitem(last=False)
        return made


def scheduled() -> Scheduled | None:
    """The running activity as Temporal scheduled it, the same for all its attempts (None: not in an
    activity). An activity id is unique within a workflow's execution (the workflow's next sequence
    number), so a new activity with the same input is another key."""
    try:
        info = activity.info()
    except RuntimeError:
        return None
    return info.workflow_id or "", info.workflow_run_id or "", info.activity_id


def _given_up() -> bool:
    """This attempt was cancelled because Temporal no longer waits for it (it timed out, or its
    heartbeat found it gone), and its retry policy allows another, which may come to this worker."""
    try:
        details, info = activity.cancellation_details(), activity.info()
    except RuntimeError:  # not in an activity
        return False
    policy = info.retry_policy
    more = policy is None or not policy.maximum_attempts or info.attempt < policy.maximum_attempts
    return more and details is not None and (details.timed_out or details.not_found)
