"""A model adapter whose `complete` is a plain `def` returning its reply is told to make it async.

Before, such an adapter (an easy slip when wrapping a sync client) passed the agent's checks and
every run ended `error` with Python's own words, "TypeError: object ModelReply can't be used in
'await' expression", which names neither the adapter nor the fix. A plain `def` that returns an
awaitable (delegating to another adapter) still works, and a TypeError raised inside an async
`complete` is still the adapter's own.
"""

from __future__ import annotations

from collections.abc import Awaitable

from agent import Agent, StopReason
from agent.models.base import ModelReply, ModelRequest
from agent.models.scripted import ScriptedModel, finish


class SyncAdapter:
    name = "scripted"
    provider = "scripted"

    def complete(self, request: ModelRequest) -> ModelReply:
        return ModelReply(content=[{**finish("done", "ok"), "id": "toolu_1"}])


class Delegating:
    name = "scripted"
    provider = "scripted"

    def __init__(self) -> None:
        self.inner = ScriptedModel([[finish("done", "ok")]])

    def complete(self, request: ModelRequest) -> Awaitable[ModelReply]:
        return self.inner.complete(request)


class Broken:
    name = "scripted"
    provider = "scripted"

    async def complete(self, request: ModelRequest) -> ModelReply:
        return len(5)  # type: ignore[arg-type, return-value]  # the adapter's own bug


def test_a_plain_def_complete_ends_the_run_saying_to_make_it_async() -> None:
    result = Agent("a", SyncAdapter()).run("t")  # type: ignore[arg-type]

    assert result.reason is StopReason.ERROR
    assert result.error_type == "ConfigError"
    assert "SyncAdapter's complete() returned ModelReply, not an awaitable" in result.note, result.note
    assert "async def complete(self, request)" in result.note


def test_a_plain_def_complete_under_a_time_budget_is_told_the_same() -> None:
    from agent import Budget

    result = Agent("a", SyncAdapter(), budget=Budget(max_seconds=60)).run("t")  # type: ignore[arg-type]

    assert result.reason is StopReason.ERROR and "not an awaitable" in result.note, result.note


def test_a_plain_def_complete_that_returns_an_awaitable_still_runs() -> None:
    result = Agent("a", Delegating()).run("t")  # type: ignore[arg-type]

    assert result.reason is StopReason.SUCCESS, result.note


def test_a_type_error_inside_an_async_complete_stays_the_adapters_own() -> None:
    result = Agent("a", Broken()).run("t")

    assert result.reason is StopReason.ERROR
    assert result.error_type == "TypeError" and "not an awaitable" not in result.note, result.note
