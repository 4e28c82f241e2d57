"""A Temporal worker for a catalog's agents, and the search attributes it needs.

    worker = await build_worker(client, catalog, hooks=telemetry.hooks)
    await worker.run()

The worker polls the `endstate` task queue of the `default` namespace unless
told otherwise, and a task queue of its own, where a run sends the texts this
worker lacks (see `_remote.by_digest`). Before it starts it registers the search attributes Endstate
runs set (`EndstateAgent`, `EndstateTaskType`, `EndstateStopReason`,
`EndstateWaiting`, `EndstateSuspendedAt`) when the namespace lacks them, and
says so once in its log.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import RawValue
from temporalio.converter import PayloadConverter
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    Interceptor,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from agent._valid import is_whole
from agent.budget import MAX_SECONDS
from agent.durable.catalog import Catalog
from agent.errors import ConfigError
from agent.hooks import NoHooks, RunHooks
from agent.temporal import _registry
from agent.temporal import _wire as w
from agent.temporal._activities import EndstateActivities
from agent.temporal._registry import WorkerSetup
from agent.temporal._remote import WORKFLOW_TOOLS
from agent.temporal.workflow import EndstateRun, ManyInputs
from agent.tools import set_host

log = logging.getLogger("endstate.temporal")

# seconds between a worker's checks that its namespace still has Endstate's search attributes (a
# development server restarted in memory under it has lost them: see `keep_search_attributes`)
ATTRIBUTES_EVERY = 15.0
MIN_TIMEOUT = 0.001  # seconds: a shorter heartbeat or model timeout is read as none (Temporal's durations)

# modules the workflow sandbox takes as they are: Endstate's own (its loop is the workflow code,
# kept deterministic by its plan and clock), and what they import
PASSTHROUGH = ("agent", "telemetry", "opentelemetry", "prometheus_client", "anthropic", "httpx", "yaml")


async def ensure_search_attributes(client: Client, namespace: str = w.NAMESPACE) -> list[str]:
    """Register the search attributes Endstate needs that `namespace` lacks; the names added."""
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    missing = {
        key.name: IndexedValueType.ValueType(int(key.indexed_value_type))
        for key in w.SEARCH_ATTRIBUTES
        if key.name not in listed.custom_attributes
    }
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=missing)
        )
        log.warning(
            "registered the search attributes Endstate needs in namespace %r: %s",
            namespace,
            ", ".join(sorted(missing)),
        )
    return sorted(missing)


async def keep_search_attributes(client: Client, namespace: str) -> None:
    """Every `ATTRIBUTES_EVERY` seconds, register Endstate's search attributes again if the namespace has
    lost them (a development server restarted in memory, an operator's removal): without them every
    workflow task of a run started by Temporal's own tools fails, and the run never ends. A check that
    fails (Temporal down or restarting) is tried again at the next one, as polling is."""
    while True:
        await asyncio.sleep(ATTRIBUTES_EVERY)
        try:
            await ensure_search_attributes(client, namespace)
        except Exception as exc:
            log.debug("the search attributes of namespace %r could not be checked: %s", namespace, exc)


def workflow_runner() -> SandboxedWorkflowRunner:
    """Temporal's sandbox, taking Endstate's modules (and what they import) as they are."""
    set_host(WORKFLOW_TOOLS)  # verifiers as an activity, tools' outcomes as the worker made them
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH)
    )


async def build_worker(
    client: Client,
    catalog: Catalog,
    *,
    task_queue: str = w.TASK_QUEUE,
    hooks: RunHooks | None = None,
    heartbeat_seconds: float = 30.0,
    model_timeout: float = 600.0,
    cut_grace: float = 5.0,
    cancel_grace: float = 10.0,
    continue_after_events: int | None = 10_000,
    catalog_wait: float = w.CATALOG_WAIT,
    **options: Any,
) -> EndstateWorker:
    """A worker running Endstate workflows and the catalog's activities on `task_queue`.

    `cut_grace`: how long past a run's time budget its workflow waits for a cut model call to
    report what it used (see `_remote.ActivityModel`). `cancel_grace`: how long a cancelled run's
    turn in flight may take to end before it is cut (as a runner's shutdown grace).
    `continue_after_events`: a run whose execution's history has more events than this (or that
    Temporal suggests to continue as new) goes on in a new execution at its next turn boundary; None:
    never (a long run then stops `history_too_large` near Temporal's bound on events). `catalog_wait`:
    how long a call of a run whose agent (or task type) this worker's catalog lacks is tried again, with
    backoff, on whichever worker of the queue takes it (a rolling deploy that adds an agent), before the
    run ends `error` saying what is missing; 0 (the default): at once, as a store's runner refuses it.
    """
    _check_setup(task_queue, heartbeat_seconds=heartbeat_seconds, model_timeout=model_timeout)
    _check_setup(
        task_queue, least=0.0, cut_grace=cut_grace, cancel_grace=cancel_grace, catalog_wait=catalog_wait
    )
    _check_events(continue_after_events)
    await ensure_search_attributes(client, client.namespace)
    setup = WorkerSetup(
        hooks or NoHooks(),
        heartbeat_seconds,
        model_timeout,
        cut_grace=cut_grace,
        cancel_grace=cancel_grace,
        continue_after_events=continue_after_events,
        catalog_wait=catalog_wait,
    )
    _registry.register(task_queue, setup)
    client = _reading_each_input_alone(client)
    own = f"{task_queue}@{uuid.uuid4().hex}"
    activities = EndstateActivities(catalog, own, catalog_wait)
    interceptors = [OneInput(), *options.pop("interceptors", ())]
    shared = Worker(
        client,
        task_queue=task_queue,
        workflows=[EndstateRun],
        activities=activities.all(),
        workflow_runner=workflow_runner(),
        interceptors=interceptors,
        **options,
    )
    own_worker = Worker(
        client, task_queue=own, activities=activities.all(), interceptors=interceptors, **options
    )
    return EndstateWorker(shared, own_worker, keep=lambda: keep_search_attributes(client, client.namespace))


def _check_setup(task_queue: str, least: float = MIN_TIMEOUT, **given: float) -> None:
    """Refuse a worker whose timeouts no run could live with (`ConfigError`): each a finite number of
    seconds from `least` (above 0 by default: a heartbeat of 0 or under a microsecond is no timeout,
    and a dead worker is never noticed) to a year; NaN and negatives failed every run's activities."""
    if not task_queue or not task_queue.strip():
        raise ConfigError("the task queue must be a non-empty name")
    for name, value in given.items():
        fits = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if not (fits and least <= value <= MAX_SECONDS):
            low = f"at least {least:g}" if least else "from 0"
            raise ConfigError(
                f"{name} must be a number of seconds {low} and at most {MAX_SECONDS:g}, not {value!r:.40}"
            )


def _check_events(count: object) -> None:
    """Refuse a hand-over bound that is not None (never) or a whole number of events from 1 to the run's
    own bound."""
    if count is None:
        return
    if not (is_whole(count) and 1 <= count <= w.MAX_HISTORY_EVENTS):
        raise ConfigError(
            f"continue_after_events must be None (never) or a whole number of history events from 1 to "
            f"{w.MAX_HISTORY_EVENTS:,} (where a run stops as history_too_large), not {count!r:.40}"
        )


class EachInputAlone:
    """Marks a payload converter class made by `each_input_alone`."""


def each_input_alone(base: type[PayloadConverter]) -> type[PayloadConverter]:
    """`base`, reading each of several inputs that come with no types on its own (a start of two inputs or
    more: the SDK then drops `run`'s type), one it cannot read kept unread as a `RawValue`. With `base`
    alone, one unreadable input (an unknown encoding) failed every workflow task of the start, before
    `OneInput` could end it as `bad_start`: the run never ended. Inputs with types are read as `base` does."""
    if issubclass(base, EachInputAlone):
        return base

    class Alone(base, EachInputAlone):  # type: ignore[valid-type,misc]
        def from_payloads(
            self, payloads: Sequence[Payload], type_hints: list[type] | None = None
        ) -> list[Any]:
            if type_hints is not None or len(payloads) < 2:
                return super().from_payloads(payloads, type_hints)
            read = super().from_payloads
            return [_read_alone(read, payload) for payload in payloads]

    Alone.__name__ = Alone.__qualname__ = f"EachInputAlone{base.__name__}"
    return Alone


def _read_alone(read: Callable[[Sequence[Payload]], list[Any]], payload: Payload) -> Any:
    """`payload` read, or kept unread (`RawValue`) when it cannot be."""
    try:
        return read([payload])[0]
    except Exception:
        return RawValue(payload)


def _reading_each_input_alone(client: Client) -> Client:
    """`client` as the worker uses it: its payload converter reading each input alone (`each_input_alone`)."""
    converter = client.data_converter
    alone = each_input_alone(converter.payload_converter_class)
    if alone is converter.payload_converter_class:
        return client
    config = client.config()
    config["data_converter"] = dataclasses.replace(converter, payload_converter_class=alone)
    return Client(**config)


class OneInput(Interceptor):
    """Hands `EndstateRun.run` a start of two inputs or more (`temporal workflow start --input A --input B`)
    as one `ManyInputs`, which ends the run as `bad_start`: given them all, `run` failed every workflow
    task, and the run never ended (one of them unreadable is read as a `RawValue`: `each_input_alone`). A
    start of one input, or none, is passed on as it is."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        return _OneInputInbound


class _OneInputInbound(WorkflowInboundInterceptor):
    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        if issubclass(input.type, EndstateRun) and len(input.args) > 1:
            input = dataclasses.replace(input, args=[ManyInputs(len(input.args))])
        return await super().execute_workflow(input)


class EndstateWorker:
    """A worker on the shared task queue (workflows and activities) and one on its own queue, where runs
    send the texts it lacks; used as a Temporal `Worker` is: `async with`, or `run()` and `shutdown()`.
    While it polls, `keep` (when given) keeps the namespace's search attributes registered."""

    def __init__(
        self, shared: Worker, own: Worker, keep: Callable[[], Coroutine[Any, Any, None]] | None = None
    ) -> None:
        self.shared, self.own = shared, own
        self._keep = keep
        self._keeping: asyncio.Task[None] | None = None

    async def __aenter__(self) -> EndstateWorker:
        await self.shared.__aenter__()
        try:
            await self.own.__aenter__()
        except BaseException:
            await self.shared.__aexit__(None, None, None)
            raise
        self._start_keeping()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self._stop_keeping()
        try:
            await self.own.__aexit__(*exc_info)
        finally:
            await self.shared.__aexit__(*exc_info)

    async def run(self) -> None:
        self._start_keeping()
        try:
            await asyncio.gather(self.shared.run(), self.own.run())
        finally:
            self._stop_keeping()

    def _start_keeping(self) -> None:
        if self._keep is not None and self._keeping is None:
            self._keeping = asyncio.create_task(self._keep())

    def _stop_keeping(self) -> None:
        if self._keeping is not None:
            self._keeping.cancel()
            self._keeping = None

    async def shutdown(self) -> None:
        await asyncio.gather(self.shared.shutdown(), self.own.shutdown())


class InHand(Interceptor):
    """Counts the activities the worker has in hand, for what a stop says it waits for, or cut."""

    def __init__(self) -> None:
        self.count = 0

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Counted(next, self)


class _Counted(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, hand: InHand) -> None:
        super().__init__(next)
        self._hand = hand

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        self._hand.count += 1
        try:
            return await super().execute_activity(input)
        finally:
            self._hand.count -= 1
