"""Pending help requests from Temporal's visibility, for `agent_help_pending` and its oldest age.

`TemporalPending` is a `telemetry.metrics.PendingSource`: the metrics hooks
call it at scrape time, and it lists the runs whose `EndstateWaiting` search
attribute is true, so the human-wait gauges and alerts work as with a store.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any

from temporalio.client import Client

from agent.temporal import _wire as w

# A read bounded well inside a scrape (Prometheus' default scrape timeout is 10 s): while Temporal does not
# answer, a scrape still serves every other series and counts the failed read, and the worker is not taken
# for down (`up` 0) for want of its pending-help gauges.
READ_TIMEOUT_S = 4.0


class TemporalPending:
    """`(agent, task_type, suspended_at)` of every run waiting for a person, read at call time.

    Calls come from the scrape thread; the client lives on a loop of its own.
    """

    def __init__(self, address: str, namespace: str = w.NAMESPACE, task_queue: str | None = None) -> None:
        self.address, self.namespace, self.task_queue = address, namespace, task_queue  # None: every queue
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="endstate-pending", daemon=True)
        self._thread.start()
        self._client: Client | None = None

    def __call__(self) -> list[tuple[str, str, float]]:
        return self._run(self._read())

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def _run(self, coro: Coroutine[Any, Any, list[tuple[str, str, float]]]) -> list[tuple[str, str, float]]:
        """The read's rows; a read that has not ended within `READ_TIMEOUT_S` is cancelled (none is left
        running on, one more at each scrape, while Temporal does not answer) and `TimeoutError` raised."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout=READ_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise TimeoutError(f"Temporal's visibility did not answer within {READ_TIMEOUT_S:g} s") from None

    async def _read(self) -> list[tuple[str, str, float]]:
        if self._client is None:
            self._client = await Client.connect(self.address, namespace=self.namespace)
        query = (
            f"{w.runs_query(self.task_queue)} AND {w.SA_WAITING.name} = true AND ExecutionStatus = 'Running'"
        )
        rows = []
        async for execution in self._client.list_workflows(query):
            if not w.on_queue(execution.task_queue, self.task_queue):
                continue
            attrs = execution.typed_search_attributes
            since = attrs.get(w.SA_SUSPENDED_AT)
            rows.append(
                (
                    attrs.get(w.SA_AGENT) or "",
                    attrs.get(w.SA_TASK_TYPE) or "",
                    since.timestamp() if since else 0.0,
                )
            )
        return rows
