"""Whether any worker polls a task queue now, as Temporal's own record of the queue's pollers says.

A call that only a worker can carry on (a reply, a resume, an operator's `end`) sent to a queue that no
worker polls waits for one, silently: the client asks first, and says so instead. Temporal keeps a
queue's pollers with the time each last asked for a task; a live worker asks again at least every
minute (a long poll that gets no task ends after about 60 s), so one not seen for `FRESH_S` is gone.
A worker that stopped within that window still counts: the call is sent, and the caller's own wait
(the service's 30 s) says what happened.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from temporalio.api.enums.v1 import DescribeTaskQueueMode, TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import PollerInfo, TaskQueue, TaskQueueVersionSelection
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

FRESH_S = 90.0  # a poller last seen longer ago than this is gone (a live one asks again within ~60 s)
# seconds before the queue is read once more when it has none: a worker started a moment ago may not have
# sent its first poll yet (its `async with`, or `endstate worker`'s start, returns before the server has it)
AGAIN_S = 3.0
log = logging.getLogger("endstate.temporal")
WORKFLOW_TASKS = TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW


async def unpolled(client: Client, task_queue: str, now: Callable[[], float]) -> str | None:
    """Why no worker would take a call on `task_queue` now ("no worker polls ..."), or None when one
    polls its workflow tasks, or when Temporal will not say (the call is sent then, as before). Only
    workflow tasks count: a live worker busy with as many activities as it runs at once polls none of
    those, yet takes the run's next workflow task. `now` is the clock the last polls are timed by. A
    queue with none is read again `AGAIN_S` later, for a worker that has just started."""
    said = await _unpolled_now(client, task_queue, now)
    if said is None:
        return None
    await asyncio.sleep(AGAIN_S)
    return await _unpolled_now(client, task_queue, now)


async def _unpolled_now(client: Client, task_queue: str, now: Callable[[], float]) -> str | None:
    try:
        pollers = await _pollers(client, task_queue)
    except RPCError as exc:  # not allowed, say: the call is sent, as before
        log.warning("could not read the pollers of task queue %r: %s", task_queue, exc.message)
        return None
    seen = [now() - p.last_access_time.ToMicroseconds() / 1e6 for p in pollers]
    if any(age < FRESH_S for age in seen):
        return None
    last = f"the last one {min(seen):.0f} s ago" if seen else "none on record"
    return f"no worker polls task queue {task_queue!r} (none within {FRESH_S:g} s; {last})"


async def _pollers(client: Client, task_queue: str) -> list[PollerInfo]:
    """The pollers of the queue's workflow tasks: those of its root partition, as Temporal has them now
    (the legacy description), and those of all its partitions and worker versions (the enhanced one,
    which Temporal caches for a few seconds: a worker started since may not be in it yet). An
    `RPCError` only when neither could be read."""
    queue = TaskQueue(name=task_queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL)
    legacy = DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=queue, task_queue_type=WORKFLOW_TASKS
    )
    enhanced = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=queue,
        api_mode=DescribeTaskQueueMode.DESCRIBE_TASK_QUEUE_MODE_ENHANCED,
        versions=TaskQueueVersionSelection(unversioned=True, all_active=True),  # every worker version's
        task_queue_types=[WORKFLOW_TASKS],
        report_pollers=True,
    )
    found: list[PollerInfo] = []
    failures: list[RPCError] = []
    for request in (legacy, enhanced):
        try:
            described = await client.workflow_service.describe_task_queue(request)
        except RPCError as exc:  # an old server lacks the enhanced one, say
            failures.append(exc)
            continue
        found.extend(described.pollers)
        for version in described.versions_info.values():
            for kind, info in version.types_info.items():
                found.extend(info.pollers if kind == WORKFLOW_TASKS else [])
    if len(failures) == 2:
        raise failures[0]
    return found
