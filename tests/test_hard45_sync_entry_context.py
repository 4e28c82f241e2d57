"""A sync entry point runs its event loop outside any `except` block.

`Agent.run` (and `resume`, `expire`), a verifier's awaited part and the integrations' sync runs
asked `asyncio.get_running_loop()` and started their loop inside its `except RuntimeError:`. The
whole run then went on "during handling of" that error: every exception the run's code raised (a
tool's, a checkpointer's, a hook's) had "RuntimeError: no running event loop" as its context, so the
tracebacks the run logged opened on it as if it were the cause, and `sys.exc_info()` in an async
tool or verifier said an exception was being handled when none was.
"""

from __future__ import annotations

import errno
import logging
import sys

import pytest

from agent import Agent, Approval, StopReason, all_of, tool
from agent.context import RunContext
from agent.integrations._sync import run_sync
from agent.models.scripted import ScriptedModel, call, finish
from agent.snapshot import Checkpoint


def _what_code_in_the_run_sees() -> dict[str, str]:
    """What is being handled, and what a fresh exception is chained to."""
    try:
        raise ValueError("the tool's own")
    except ValueError as exc:
        context = repr(exc.__context__)
    return {"handling": repr(sys.exc_info()[1]), "context": context}


CLEAN = {"handling": "None", "context": "None"}


def test_an_async_tool_of_a_sync_run_sees_no_exception_being_handled() -> None:
    seen: dict[str, str] = {}

    @tool
    async def look() -> str:
        """Look."""
        seen.update(_what_code_in_the_run_sees())
        return "looked"

    model = ScriptedModel([[call("look")], [finish("done", "ok")]])
    result = Agent("a", model, tools=[look]).run("t")

    assert result.reason is StopReason.SUCCESS, result.note
    assert seen == CLEAN


def test_an_async_tool_of_a_sync_resume_sees_no_exception_being_handled() -> None:
    seen: dict[str, str] = {}

    @tool(needs_approval=True)
    async def push() -> str:
        """Push."""
        seen.update(_what_code_in_the_run_sees())
        return "pushed"

    model = ScriptedModel([[call("push")], [finish("done", "ok")]])
    agent = Agent("a", model, tools=[push])
    asked = agent.run("t")
    assert asked.reason is StopReason.NEED_HELP and asked.snapshot is not None, asked.note

    result = agent.resume(asked.snapshot, Approval())

    assert result.reason is StopReason.SUCCESS, result.note
    assert seen == CLEAN


def test_an_async_part_of_all_of_sees_no_exception_being_handled() -> None:
    seen: dict[str, str] = {}

    async def check(ctx: RunContext) -> list[str]:
        seen.update(_what_code_in_the_run_sees())
        return []

    model = ScriptedModel([[finish("done", "ok")]])
    result = Agent("a", model, verifiers=[all_of(check)]).run("t")

    assert result.reason is StopReason.SUCCESS and result.verified, result.note
    assert seen == CLEAN


def test_the_integrations_sync_runner_starts_its_loop_outside_an_except_block() -> None:
    async def body() -> dict[str, str]:
        return _what_code_in_the_run_sees()

    assert run_sync(body()) == CLEAN


def test_a_checkpointer_failure_is_logged_without_a_no_running_event_loop_context(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def full(new: Checkpoint) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    @tool
    def work() -> str:
        """Work."""
        return "done"

    model = ScriptedModel([[call("work")], [finish("done", "ok")]])
    with caplog.at_level(logging.WARNING, logger="endstate"):
        result = Agent("a", model, tools=[work], checkpoint=full).run("t")

    assert result.reason is StopReason.ERROR and "No space left" in result.note, result.note
    logged = [r for r in caplog.records if r.exc_info]
    assert logged, "the failed write is logged with its traceback"
    for record in logged:
        exc = record.exc_info[1] if record.exc_info else None
        chain = []
        while exc is not None:
            chain.append(repr(exc))
            exc = exc.__cause__ or exc.__context__
        assert not any("no running event loop" in link for link in chain), chain
