"""Issue 9: no `asyncio.timeout` where there is no deadline. A verifier bounded elsewhere (the
Temporal verify activity's) in a run with no time budget, and a Temporal model call with no time
budget, run under no timer at all, as the loop's own model call and a tool without a timeout do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from agent import Agent, Budget, RunContext, StopReason
from agent.models.base import ModelRequest
from agent.models.scripted import ScriptedModel, finish
from agent.temporal import _activities
from agent.temporal import _wire as w


@pytest.fixture
def timers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The delay of every `asyncio.timeout` made while the test runs."""
    made: list[Any] = []
    real = asyncio.timeout

    def spy(delay: float | None) -> asyncio.Timeout:
        made.append(delay)
        return real(delay)

    monkeypatch.setattr(asyncio, "timeout", spy)
    yield made


class Elsewhere:
    """A verifier whose bound is kept by someone else (as the Temporal verify activity's verifiers)."""

    bounded_elsewhere = True

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, ctx: RunContext) -> list[str]:
        self.seen.append(ctx.run_id)
        return []


def test_a_verifier_bounded_elsewhere_in_a_run_with_no_time_budget_runs_under_no_timer(
    timers: list[Any],
) -> None:
    check = Elsewhere()
    agent = Agent(
        "unbounded",
        ScriptedModel([[finish("done", "ok")]]),
        verifiers=[check],
        budget=Budget(max_turns=3, max_seconds=None),
    )
    result = agent.run("go")
    assert (result.reason, result.verified, len(check.seen)) == (StopReason.SUCCESS, True, 1)
    assert None not in timers, timers


def test_a_temporal_model_call_with_no_time_budget_runs_under_no_timer(timers: list[Any]) -> None:
    agent = Agent("unbounded", ScriptedModel([[finish("done", "ok")]]), budget=Budget(max_seconds=None))
    request = ModelRequest("", [], agent.tool_specs, 1024)
    reply = asyncio.run(_activities._complete(agent, {"request": w.request_json(request)}))
    assert reply["stop_reason"] == "tool_use"
    assert None not in timers, timers
