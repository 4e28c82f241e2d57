"""A run whose event loop is dropped with the run unfinished (as the Temporal SDK drops a cached
workflow's coroutine when its worker stops): when the garbage collector closes the run's
coroutine, outside any task, the run's clean-up raises nothing (Python would report it as an
unraisable error wherever the program happens to be)."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry

from agent import Agent, Budget
from agent.models.scripted import ScriptedModel, call, finish
from telemetry import MetricsHooks, TelemetryHooks, TracingHooks


class Hanging(ScriptedModel):
    """Answers its first call, then waits for ever (`waiting` is set then)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.waiting = asyncio.Event()

    async def complete(self, request: Any) -> Any:
        if self.requests:
            self.waiting.set()
            await asyncio.Event().wait()
        return await super().complete(request)


@pytest.mark.parametrize("budgeted", [False, True], ids=["no-time-budget", "time-budget"])
def test_a_run_whose_event_loop_is_dropped_unfinished_is_closed_quietly(
    monkeypatch: pytest.MonkeyPatch, budgeted: bool
) -> None:
    raised: list[BaseException | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: raised.append(unraisable.exc_value))
    hooks = TelemetryHooks(MetricsHooks(CollectorRegistry()), TracingHooks(TracerProvider()))
    budget = Budget(max_seconds=60 if budgeted else None)
    model = Hanging([[call("look")], [finish("done", "ok")]])
    agent = Agent("a", model, hooks=hooks, budget=budget)
    loop = asyncio.new_event_loop()
    task = loop.create_task(agent.arun("go"))
    loop.run_until_complete(model.waiting.wait())  # the run now waits on its model
    assert not task.done()
    loop.close()  # dropped with the run's task pending
    del task
    gc.collect()
    assert raised == []
