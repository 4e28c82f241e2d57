"""A `CancelledError` that a run's own sync callback raises (a per-turn check, the summarizer, the
fingerprint) is that callback's failure, as a tool's or a verifier's own is: nobody cancelled the run.
The summarizer's escaped `run` altogether (raised again while the run's end was being made); a check's
and the fingerprint's ended the run `cancelled`, "The run was cancelled.", a stop its caller never
asked for."""

from __future__ import annotations

import asyncio
from typing import Any

from agent import Agent, Budget
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import StopReason
from agent.tools import tool


@tool
def look() -> str:
    """Look around."""
    return "seen"


def agent(**options: Any) -> Agent:
    model = ScriptedModel([[call("look")], [finish("done", "ok")]])
    return Agent("own", model, tools=[look], budget=Budget(max_turns=10, max_seconds=60), **options)


def test_a_summarizer_raising_its_own_cancelled_error_gives_the_default_summary() -> None:
    def summarize(*args: Any) -> str:
        raise asyncio.CancelledError("a future it read was cancelled")

    result = agent(summarize=summarize).run("task")
    assert result.reason is StopReason.SUCCESS
    assert "success" in result.summary.lower()  # the default summary, which names the stop


def test_a_check_raising_its_own_cancelled_error_ends_the_run_as_a_verifier_error() -> None:
    def check(ctx: Any) -> None:
        raise asyncio.CancelledError("a future it read was cancelled")

    result = agent(checks=[check]).run("task")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "CancelledError" in result.note and "a future it read was cancelled" in result.note


def test_a_fingerprint_raising_its_own_cancelled_error_ends_the_run_as_error() -> None:
    def fingerprint(ctx: Any) -> str:
        raise asyncio.CancelledError("a future it read was cancelled")

    result = agent(fingerprint=fingerprint).run("task")
    assert (result.reason, result.error_type) == (StopReason.ERROR, "CancelledError")
    assert "a future it read was cancelled" in result.note


def test_a_fingerprint_raising_its_own_cancelled_error_at_a_denial_ends_the_run_as_error() -> None:
    @tool(needs_approval=True)
    def send() -> str:
        """Send it."""
        return "sent"

    def fingerprint(ctx: Any) -> str:
        raise asyncio.CancelledError("a future it read was cancelled")

    model = ScriptedModel([[call("send")], [finish("done", "ok")]])
    asking = Agent("own", model, tools=[send], fingerprint=fingerprint, budget=Budget(max_turns=10))
    first = asking.run("task")
    assert first.reason is StopReason.NEED_HELP and first.snapshot is not None
    result = asking.resume(first.snapshot, approved=False)
    assert (result.reason, result.error_type) == (StopReason.ERROR, "CancelledError")
