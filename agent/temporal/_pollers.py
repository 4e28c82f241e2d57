"""Whether any worker polls a task queue now, as Temporal's own record of the queue's pollers says.

A call that only a worker can carry on (a reply, a resume, an operator's `end`) sent to a queue that no
worker polls waits for one, silently: the client asks first, and says so instead. Temporal keeps a
queue's pollers with the time each last asked for a task; a live worker asks again at least every
minute (a long poll that gets no task ends after about 60 s), so one not seen for `FRESH_S` is gone.
A worker that stopped within that window still counts: the call is sent, and the caller's own wait
(the service's 30 s) says what happened.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

FRESH_S = 90.0  # a poller last seen longer ago than this is gone (a live one asks again within ~60 s)
log = logging.getLogger("endstate.temporal")
_KINDS = (
    (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, "workflow"),
    (TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY, "activity"),
)


async def unpolled(client: Client, task_queue: str, now: Callable[[], float]) -> str | None:
    """Why no worker would take a call on `task_queue` now ("no worker polls ..."), or None when one
    polls both its workflow and its activity tasks, or when Temporal will not say (the call is sent
    then, as before). `now` is the clock the pollers' last polls are measured against."""
    for kind, what in _KINDS:
        request = DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
            task_queue_type=kind,
        )
        try:
            described = await client.workflow_service.describe_task_queue(request)
        except RPCError as exc:  # not allowed, or an old server: the call is sent, as before
            log.warning("could not read the pollers of task queue %r: %s", task_queue, exc.message)
            return None
        seen = [now() - p.last_access_time.ToMicroseconds() / 1e6 for p in described.pollers]
        if not any(age < FRESH_S for age in seen):
            last = f"the last one {min(seen):.0f} s ago" if seen else "none on record"
            return (
                f"no worker polls task queue {task_queue!r} (none asked for its {what} tasks within "
                f"{FRESH_S:g} s; {last})"
            )
    return None
