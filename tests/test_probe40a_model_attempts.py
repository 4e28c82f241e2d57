"""A worker's model activity tried again by Temporal takes the reply of its first attempt.

Temporal runs an activity again when its heartbeat or its completion came late;
each attempt called the model, so a real model was paid twice, and the scripted
model, which keeps its place between calls, played its next step (a run skipped
one). These tests run the worker's activity in the SDK's `ActivityEnvironment`,
with the activity's identity Temporal gives each attempt.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from temporalio.activity import ActivityCancellationDetails
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from agent import Agent
from agent.durable.catalog import Catalog
from agent.errors import ModelError
from agent.journal import Task
from agent.models.base import ModelReply, ModelRequest
from agent.models.scripted import ScriptedModel, say
from agent.temporal import _wire as w
from agent.temporal._activities import MAX_CACHED_AGENTS, EndstateActivities

RUN = {"run_id": "r-1", "agent": "talker", "task": "talk", "task_type": "default", "state": {}}
CALL = {"run": RUN, "request": w.request_json(ModelRequest("", [Task("talk")], [], 100))}


def worker(model: Any) -> EndstateActivities:
    catalog = Catalog()
    catalog.register("talker", lambda state: Agent("talker", model))
    return EndstateActivities(catalog)


def attempt(activity_id: str = "7", number: int = 1, workflow_id: str = "r-1") -> ActivityEnvironment:
    """The environment of one attempt of the workflow's activity `activity_id`."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, activity_id=activity_id, attempt=number, workflow_id=workflow_id)
    return env


def text(out: dict[str, Any]) -> str:
    return str(w.reply_from_json(out).content[0]["text"])


def test_an_attempt_again_takes_the_first_attempts_reply_and_a_new_activity_calls_again() -> None:
    model = ScriptedModel([[say("one")], [say("two")]])
    acts = worker(model)

    async def scenario() -> None:
        assert text(await attempt(number=1).run(acts.model, CALL)) == "one"
        assert text(await attempt(number=2).run(acts.model, CALL)) == "one"  # not "two": no step skipped
        assert len(model.requests) == 1
        # the workflow asking again with the same input is a new activity: a new call
        assert text(await attempt("8").run(acts.model, CALL)) == "two"
        assert len(model.requests) == 2

    asyncio.run(scenario())


def test_a_failed_attempt_is_not_reused_its_retry_calls_the_model_again() -> None:
    model = ScriptedModel([ModelError("overloaded", error_type="overloaded"), [say("fine")]])
    acts = worker(model)

    async def scenario() -> None:
        with pytest.raises(ApplicationError, match="overloaded") as failed:
            await attempt(number=1).run(acts.model, CALL)
        assert failed.value.type == "ModelError"
        assert text(await attempt(number=2).run(acts.model, CALL)) == "fine"
        assert len(model.requests) == 2

    asyncio.run(scenario())


class Held:
    """A stateless model whose calls wait for `go`; it counts them (`called`: one was made)."""

    def __init__(self) -> None:
        self.calls, self.cancelled = 0, 0
        self.go, self.called = asyncio.Event(), asyncio.Event()
        self.name, self.provider = "held", "test"

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        self.called.set()
        try:
            await self.go.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return ModelReply(content=[say(f"reply {self.calls}")])


def test_an_attempt_given_up_leaves_its_call_to_the_next_attempt_in_flight() -> None:
    """Temporal gave the first attempt up (its heartbeat came late) while its call ran: the next attempt
    on this worker awaits that call, which the first attempt's cancel does not stop."""
    model = Held()
    acts = worker(model)

    async def scenario() -> None:
        first_env = attempt(number=1)
        first = asyncio.create_task(first_env.run(acts.model, CALL))
        await model.called.wait()
        second = asyncio.create_task(attempt(number=2).run(acts.model, CALL))
        first_env.cancel(ActivityCancellationDetails(timed_out=True))
        with pytest.raises(asyncio.CancelledError):
            await first
        model.go.set()
        assert text(await second) == "reply 1"
        assert (model.calls, model.cancelled) == (1, 0)

    asyncio.run(scenario())


def test_the_last_attempt_given_up_cuts_its_call_as_no_attempt_comes_after_it() -> None:
    model = Held()
    acts = worker(model)

    async def scenario() -> None:
        env = attempt(number=2)
        env.info = dataclasses.replace(env.info, retry_policy=RetryPolicy(maximum_attempts=2))
        running = asyncio.create_task(env.run(acts.model, CALL))
        await model.called.wait()
        env.cancel(ActivityCancellationDetails(timed_out=True))
        with pytest.raises(asyncio.CancelledError):
            await running
        assert model.cancelled == 1

    asyncio.run(scenario())


def test_a_cancel_the_workflow_asked_for_still_cuts_the_call() -> None:
    model = Held()
    acts = worker(model)

    async def scenario() -> None:
        env = attempt()
        running = asyncio.create_task(env.run(acts.model, CALL))
        await model.called.wait()
        env.cancel()  # the workflow cancelled it (its time budget ran out, or the run was cancelled)
        with pytest.raises(ApplicationError) as cut:
            await running
        assert cut.value.type == "CutOff" and model.cancelled == 1
        model.go.set()  # the same activity tried again (it is not: it failed for good) calls again
        assert text(await attempt(number=2).run(acts.model, CALL)) == "reply 2"

    asyncio.run(scenario())


def test_a_worker_keeps_one_call_a_workflow_over_a_long_run_and_a_bounded_number_of_workflows() -> None:
    model = ScriptedModel(then=lambda turn: [say(f"turn {turn}")])
    acts = worker(model)

    async def scenario() -> None:
        for i in range(3_000):  # a run of 3,000 turns: each call a new activity of the same workflow
            await attempt(str(i)).run(acts.model, CALL)
        assert len(acts._attempts) == 1
        for i in range(MAX_CACHED_AGENTS + 50):
            await attempt(workflow_id=f"r-{i}").run(acts.model, CALL)
        assert len(acts._attempts) == MAX_CACHED_AGENTS
        await ActivityEnvironment().run(acts.cleanup, {**RUN, "run_id": f"r-{MAX_CACHED_AGENTS + 49}"})
        assert len(acts._attempts) == MAX_CACHED_AGENTS - 1  # the run ended: its call is let go

    asyncio.run(scenario())
