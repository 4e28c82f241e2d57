"""On a real Temporal server, a model activity tried again after a late heartbeat takes the first
attempt's reply: the model is called once, and the run ends as its twin that no stall disturbed.

The stall is a loaded machine's: the model's call blocks its worker's event loop (no heartbeat goes
out) until the server has given the attempt up and scheduled the activity again, which it watches
from another thread. The first attempt's completion is then lost (the server no longer waits for it)
or, in the other case, its call is still in flight when the second attempt comes to the worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from temporal_server import TemporalServer, serving
from temporalio import activity
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client
from test_temporal import temporal  # noqa: F401  (the server fixture)

from agent import Agent, Budget, RetryPolicy, TransientModelError, tool
from agent.durable.catalog import Catalog
from agent.models.base import ModelReply, ModelRequest
from agent.models.scripted import ScriptedModel, Step, call, finish
from agent.result import RunResult, StopReason
from agent.temporal import _wire as w

# the server's cancel of an attempt it gave up may reach the worker after the attempt ended: the SDK
# warns that it has no such activity (a warning, not an error: the tests' warnings are errors)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:Cannot find activity to cancel:UserWarning"),
]

FAST_RETRY = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, jitter=False)
K = 4  # notes a run takes before it finishes
WAIT = 60.0  # seconds the watcher waits for the server at most


@tool
def note(n: int) -> str:
    """Note n."""
    return f"noted {n}"


class Counting:
    """A stateless model, as a real one is: its reply follows from the request alone. It counts its
    calls by turn."""

    name, provider = "counting", "test"

    def __init__(self) -> None:
        self.turns: list[int] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.turns.append(request.replies + 1)
        if request.replies < K:
            return ModelReply(content=[call("note", n=request.replies + 1) | {"id": f"t{request.replies}"}])
        return ModelReply(content=[finish("done", "Noted.") | {"id": "end"}])


class Stalling:
    """`inner`, whose call of turn `at` (0: none) stalls its worker until the server tries it again:
    the reply is made, then the worker's loop blocks; with `in_flight`, the call then also waits, no
    longer blocking, until the second attempt has started on the worker."""

    def __init__(self, inner: Any, address: str, at: int, in_flight: bool) -> None:
        self.inner, self.address, self.at, self.in_flight = inner, address, at, in_flight
        self.name, self.provider = inner.name, inner.provider
        self.turns: list[int] = []
        self.stalled, self.stall_seconds = False, 0.0

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.turns.append(request.replies + 1)
        reply: ModelReply = await self.inner.complete(request)
        if request.replies + 1 == self.at and not self.stalled:
            self.stalled, began = True, time.monotonic()
            info = activity.info()
            watch = Watch(self.address, info.workflow_id or "", info.activity_id)
            watch.blocking(watch.retried)  # the worker is stalled: no heartbeat goes out
            if self.in_flight:
                await watch.until(watch.taken_again)
            self.stall_seconds = time.monotonic() - began
        return reply


class Watch:
    """The server's view of one pending activity of a workflow."""

    def __init__(self, address: str, workflow_id: str, activity_id: str) -> None:
        self.address, self.workflow_id, self.activity_id = address, workflow_id, activity_id

    def blocking(self, ready: Callable[[Any], bool]) -> None:
        """Block this thread (and the event loop it runs) until `ready`, watched from another."""
        with concurrent.futures.ThreadPoolExecutor(1) as other:
            other.submit(asyncio.run, self.until(ready)).result()

    async def until(self, ready: Callable[[Any], bool]) -> None:
        """Until `ready(pending)` holds of the activity as the server describes it (None: not pending)."""
        client = await Client.connect(self.address)
        handle = client.get_workflow_handle(self.workflow_id)
        until = time.monotonic() + WAIT
        while time.monotonic() < until:
            pending = (await handle.describe()).raw_description.pending_activities
            if ready(next((p for p in pending if p.activity_id == self.activity_id), None)):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"activity {self.activity_id} of {self.workflow_id}: not seen within {WAIT} s")

    @staticmethod
    def retried(pending: Any) -> bool:
        """The server gave the first attempt up and scheduled the activity again."""
        return pending is None or pending.attempt >= 2

    @staticmethod
    def taken_again(pending: Any) -> bool:
        """A worker took the second attempt (or the activity ended)."""
        started = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
        return pending is None or (pending.attempt >= 2 and pending.state == started)


def script() -> list[Step]:
    """Notes 1..K, the model's first call of turn 2 failing (a transient error the loop retries)."""
    notes: list[Step] = [[call("note", n=i)] for i in range(1, K + 1)]
    return [
        notes[0],
        TransientModelError("overloaded", error_type="overloaded"),
        *notes[1:],
        [finish("done")],
    ]


def catalog(address: str, models: dict[str, Stalling]) -> Catalog:
    """Agent `noter`: its model (`state["model"]`: scripted or counting) stalls at `state["stall_at"]`."""

    def build(state: dict[str, Any]) -> Agent:
        inner = ScriptedModel(script()) if state["model"] == "scripted" else Counting()
        model = Stalling(inner, address, int(state["stall_at"]), bool(state.get("in_flight")))
        models[state["key"]] = model
        return Agent(name="noter", model=model, tools=[note], budget=Budget(max_turns=20), retry=FAST_RETRY)

    c = Catalog()
    c.register("noter", build)
    return c


async def tried_model_activities(client: Client, run_id: str) -> list[int]:
    """The attempt that ended each model activity of the run, as its history records it."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    names = {w.MODEL, w.MODEL_BY_DIGEST, w.MODEL_CHUNKED}
    scheduled = {
        e.event_id
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name in names
    }
    return [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
        and e.activity_task_started_event_attributes.scheduled_event_id in scheduled
    ]


def run_pair(
    server: TemporalServer, model: str, in_flight: bool
) -> tuple[RunResult, RunResult, Stalling, Stalling, list[int]]:
    """A run whose model stalls at turn 3, and its twin that nothing stalls; both models; the attempts
    of the stalled run's model activities."""
    models: dict[str, Stalling] = {}

    async def scenario() -> tuple[RunResult, RunResult, list[int]]:
        async with serving(server, catalog(server.address, models), heartbeat_seconds=2.0) as runs:
            ran: list[RunResult] = []
            for key, stall_at in (("stalled", 3), ("twin", 0)):
                state = {"key": key, "model": model, "stall_at": stall_at, "in_flight": in_flight}
                result = await runs.start(
                    "noter", "note", state=state, run_id=f"{key}-{uuid.uuid4().hex[:8]}"
                )
                assert isinstance(result, RunResult)
                ran.append(result)
            return ran[0], ran[1], await tried_model_activities(runs.client, ran[0].run_id)

    stalled, twin, attempts = asyncio.run(scenario())
    return stalled, twin, models["stalled"], models["twin"], attempts


def test_the_scripted_model_tried_again_after_its_completion_was_lost_skips_no_step(
    temporal: TemporalServer,  # noqa: F811
) -> None:
    stalled, twin, model, twin_model, attempts = run_pair(temporal, "scripted", in_flight=False)
    assert model.stalled and 2 in attempts  # the server did try a model activity again
    assert stalled.active_seconds >= model.stall_seconds  # the call counts as long as it ran, once
    assert twin.reason is stalled.reason is StopReason.SUCCESS
    assert stalled.turns == twin.turns == K + 1
    # turn 2's transient error made the loop ask again (a new activity, same input): a second call;
    # turn 3, tried again by the server, was called once
    assert Counter(model.turns) == Counter(twin_model.turns) == {1: 1, 2: 2, 3: 1, 4: 1, 5: 1}


@pytest.mark.parametrize("in_flight", [False, True], ids=["completion-lost", "call-in-flight"])
def test_a_stateless_model_tried_again_is_called_once(
    temporal: TemporalServer,  # noqa: F811
    in_flight: bool,
) -> None:
    stalled, twin, model, _, attempts = run_pair(temporal, "counting", in_flight=in_flight)
    assert model.stalled and 2 in attempts
    assert stalled.active_seconds >= model.stall_seconds
    assert stalled.reason is twin.reason is StopReason.SUCCESS and stalled.turns == twin.turns == K + 1
    assert Counter(model.turns) == {turn: 1 for turn in range(1, K + 2)}  # one paid call a turn
