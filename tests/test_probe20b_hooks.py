"""Hooks written as `async def`: the loop calls hooks without awaiting them, so such a hook never ran
and nothing said so (no failure to log, only Python's "never awaited" at collection). Now a warning
names the methods once, and the run goes on as before."""

from __future__ import annotations

import logging
import warnings

import pytest

from agent import Agent, StopReason
from agent.hooks import RunInfo, RunObserver
from agent.models.scripted import ScriptedModel, finish


class AsyncEnd(RunObserver):
    async def run_ended(self, result: object) -> None:  # type: ignore[override]
        pass

    async def tool_ended(self, call: object, outcome: object) -> None:  # type: ignore[override]
        pass


class AsyncEndHooks:
    def run_started(self, info: RunInfo) -> RunObserver:
        return AsyncEnd()


class AsyncStartHooks:
    async def run_started(self, info: RunInfo) -> RunObserver:
        return RunObserver()


def run(hooks: object) -> object:
    model = ScriptedModel([[finish("done", "ok")]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the coroutines dropped, as before
        return Agent("a", model, hooks=hooks).run("Do it.")  # type: ignore[arg-type]


def test_an_observer_with_async_methods_is_named_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="endstate.hooks"):
        first, second = run(AsyncEndHooks()), run(AsyncEndHooks())
    assert first.reason is second.reason is StopReason.SUCCESS  # type: ignore[attr-defined]
    said = [r.getMessage() for r in caplog.records if "async methods" in r.getMessage()]
    assert said == [
        "telemetry hook AsyncEnd has async methods (tool_ended, run_ended): hooks are called, not awaited, "
        "so they never run; make them plain defs (hand slow work to a queue or a thread)"
    ]


def test_an_async_run_started_is_named_and_the_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="endstate.hooks"):
        result = run(AsyncStartHooks())
    assert result.reason is StopReason.SUCCESS  # type: ignore[attr-defined]
    assert any("run_started is async def" in r.getMessage() for r in caplog.records)
