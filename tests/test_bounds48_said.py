"""An exception's message is read within a bound: one whose `__str__` hangs never holds the run.

An async tool's, a verifier's or a per-turn check's exception was turned into text on the event loop:
an exception whose `__str__` hangs held the run past the tool's timeout and the run's time budget, for
ever. Now a message that runs the exception's own code is read on a worker thread, within what is left
of the call's bound (a tool's), within the time left (a verifier's), or within `SAY_SECONDS`; past it,
the run's text says the message could not be read in time. A plain exception is read at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent import Agent, Budget, StopReason, tool
from agent import tools as agent_tools
from agent.context import RunContext
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult
from agent.tools import ToolOutcome, execute, said

RELEASE = threading.Event()  # set when each test ends: no hung `__str__` outlives its test
WAIT = 60.0  # the most a test waits for what should end within a second or two (CI is loaded)


@pytest.fixture(autouse=True)
def _released() -> Iterator[None]:
    RELEASE.clear()
    yield
    RELEASE.set()


class Hangs(Exception):
    """An exception whose message never comes (until the test ends)."""

    def __str__(self) -> str:
        RELEASE.wait(WAIT)
        return "late"


class HangsStop(StopIteration):
    def __str__(self) -> str:
        RELEASE.wait(WAIT)
        return "late"


def in_thread(work: Callable[[], Any]) -> Any:
    """`work()` on a thread of its own, failing the test (not hanging it) when it takes over `WAIT`."""
    done: list[Any] = []
    runner = threading.Thread(target=lambda: done.append(work()), daemon=True)
    runner.start()
    runner.join(WAIT)
    assert done, f"still running after {WAIT:g} s: an exception's message held the run"
    return done[0]


def ctx() -> RunContext:
    return RunContext("r", "a", "t", "t")


def outcome_of(t: Any) -> ToolOutcome:
    return in_thread(lambda: asyncio.run(execute(t, {}, ctx())))


def test_an_async_tool_raising_an_exception_whose_message_hangs_ends_at_its_timeout() -> None:
    @tool(timeout=0.5)
    async def flaky() -> str:
        """Fail."""
        raise Hangs()

    outcome = outcome_of(flaky)

    assert (outcome.is_error, outcome.error_type) == (True, "Hangs")
    assert outcome.text.startswith("Error: Hangs: (its message could not be read")


def test_a_sync_tool_raising_a_stop_iteration_whose_message_hangs_times_out() -> None:
    @tool(timeout=0.5)
    def empty() -> str:
        """Fail."""
        raise HangsStop()

    outcome = outcome_of(empty)

    assert (outcome.is_error, outcome.error_type) == (True, "timeout")


def test_a_run_whose_verifier_raises_a_hanging_message_ends_verifier_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(agent_tools, "SAY_SECONDS", 0.5, raising=False)

    def verifier(ctx: RunContext) -> list[str]:
        raise Hangs()

    model = ScriptedModel([[finish("done", "ok")]])
    result: RunResult = in_thread(lambda: Agent(name="a", model=model, verifiers=[verifier]).run("t"))

    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "A verifier raised Hangs: (its message could not be read within 0.5 s)" in result.note


def test_a_verifiers_hanging_message_is_read_within_the_time_budget() -> None:
    def verifier(ctx: RunContext) -> list[str]:
        raise Hangs()

    model = ScriptedModel([[finish("done", "ok")]])
    agent = Agent(name="a", model=model, verifiers=[verifier], budget=Budget(max_seconds=1.0))
    result: RunResult = in_thread(lambda: agent.run("t"))

    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert "A verifier raised Hangs: (its message could not be read" in result.note


def test_a_per_turn_check_raising_a_hanging_message_ends_the_run_as_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(agent_tools, "SAY_SECONDS", 0.5, raising=False)

    @tool
    def look() -> str:
        """Look."""
        return "seen"

    def check(ctx: RunContext) -> None:
        raise Hangs()

    model = ScriptedModel([[call("look")], [finish("done", "ok")]])
    agent = Agent(name="a", model=model, tools=[look], checks=[check])
    result: RunResult = in_thread(lambda: agent.run("t"))

    assert (result.reason, result.error_type) == (StopReason.ERROR, "verifier_error")
    assert result.note == "A per-turn check raised Hangs: (its message could not be read within 0.5 s)"


def test_a_checkpointer_raising_a_hanging_message_ends_the_run_as_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(agent_tools, "SAY_SECONDS", 0.5, raising=False)

    @tool
    def look() -> str:
        """Look."""
        return "seen"

    def checkpoint(new: object) -> None:
        raise Hangs()

    model = ScriptedModel([[call("look")], [finish("done", "ok")]])
    agent = Agent(name="a", model=model, tools=[look], checkpoint=checkpoint)  # type: ignore[arg-type]
    result: RunResult = in_thread(lambda: agent.run("t"))

    assert (result.reason, result.error_type) == (StopReason.ERROR, "Hangs")
    assert result.note == "Hangs: (its message could not be read within 0.5 s)"


class Custom(Exception):
    """A message of its own code, read on a worker thread."""

    def __str__(self) -> str:
        return "custom words"


class Plain(Exception):
    pass


class OwnArgs(Exception):
    """An `args` property of its own: never read on the event loop."""

    @property  # type: ignore[misc]
    def args(self) -> tuple[Any, ...]:
        RELEASE.wait(WAIT)
        return ("late",)


def test_a_message_of_the_exceptions_own_code_is_still_said() -> None:
    @tool(timeout=30)
    async def fails() -> str:
        """Fail."""
        raise Custom()

    assert outcome_of(fails).text == "Error: Custom: custom words"
    assert said(Custom()) == "custom words"
    assert asyncio.run(agent_tools.said_within(Custom(), None)) == "custom words"


@pytest.mark.parametrize(
    "exc, text",
    [
        (ValueError("boom"), "boom"),
        (Plain("not", 2), "('not', 2)"),
        (KeyError("k"), "'k'"),
        (FileNotFoundError(2, "No such file", "a.txt"), "[Errno 2] No such file: 'a.txt'"),
        (OwnArgs("x"), "x"),  # `str` reads the C field, as `plain_error` does
    ],
)
def test_a_plain_exceptions_message_is_read_without_a_thread(
    monkeypatch: pytest.MonkeyPatch, exc: BaseException, text: str
) -> None:
    def no_thread(job: object) -> None:
        raise AssertionError("a plain exception's message took a worker thread")

    monkeypatch.setattr(agent_tools._WORKERS, "submit", no_thread)

    @tool(timeout=30)
    async def fails() -> str:
        """Fail."""
        raise exc

    assert said(exc) == text
    assert outcome_of(fails).text == f"Error: {type(exc).__name__}: {text}"


@pytest.mark.parametrize(
    "exc",
    [
        ValueError(object()),  # an argument of its own type: its `__str__` runs
        FileNotFoundError(2, "No such file", object()),
        Custom(),
    ],
)
def test_an_exception_running_its_own_code_is_not_plain(exc: BaseException) -> None:
    assert not agent_tools.plain_error(exc)


class HangingHooks:
    """Telemetry hooks whose observer fails at each turn with an exception whose message hangs."""

    def run_started(self, info: object) -> Any:
        from agent.hooks import RunObserver

        class Observer(RunObserver):
            def turn_started(self, *args: object) -> None:
                raise Hangs()

        return Observer()


def test_a_hook_raising_a_hanging_message_is_logged_and_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(agent_tools, "SAY_SECONDS", 0.5, raising=False)
    model = ScriptedModel([[finish("done", "ok")]])
    agent = Agent(name="a", model=model, hooks=HangingHooks())  # type: ignore[arg-type]

    result: RunResult = in_thread(lambda: agent.run("t"))

    assert result.reason is StopReason.SUCCESS
    assert "Hangs: (its message could not be read within 0.5 s)" in caplog.text


def test_a_cancel_while_a_failed_runs_message_is_read_still_ends_the_run_named() -> None:
    # Was: the cancel arrived while the segment's catch-all awaited the message (a checkpointer's exception
    # whose `__str__` hangs), and CancelledError left `arun`: a run with no stop.
    reading = threading.Event()

    class HangsSaying(Exception):
        def __str__(self) -> str:
            reading.set()
            RELEASE.wait(WAIT)
            return "late"

    @tool
    def look() -> str:
        """Look."""
        return "seen"

    def checkpoint(new: object) -> None:
        raise HangsSaying()

    async def scenario() -> tuple[RunResult, int]:
        model = ScriptedModel([[call("look")], [finish("done", "ok")]])
        agent = Agent(name="a", model=model, tools=[look], checkpoint=checkpoint)  # type: ignore[arg-type]
        task = asyncio.create_task(agent.arun("t"))
        await asyncio.to_thread(reading.wait, WAIT)
        task.cancel()
        result = await task
        return result, task.cancelling()

    result, cancelling = in_thread(lambda: asyncio.run(scenario()))
    assert (result.reason, result.error_type) == (StopReason.ERROR, "HangsSaying")
    assert "could not be read" in result.note and "cancelled" in result.note
    assert cancelling == 1  # the caller's cancel is not taken back (the demo reads it)
