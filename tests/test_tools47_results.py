"""A tool's returned value is written as text within the call's bound: a value whose `__str__` (or
`__repr__`, or a container's own methods) hangs never holds the run past the tool's timeout or the
run's time budget, and never blocks the event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agent import Agent, Budget, RunContext, StopReason, tool
from agent.models.scripted import ScriptedModel, call, finish
from agent.tools import ToolOutcome, execute

pytestmark = pytest.mark.timeout(180)  # a regression fails here, not at the suite's 15 minutes

WAY_OUT = 60.0  # seconds a hung conversion waits at most: a failing test never holds CI for ever


class Stuck:
    """A value whose text never comes (until `release`, or `WAY_OUT` seconds)."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def __str__(self) -> str:
        self.release.wait(WAY_OUT)
        return "written at last"

    __repr__ = __str__


class StuckDict(dict):  # type: ignore[type-arg]
    """A dict whose items hang when JSON asks for them."""

    release: threading.Event

    def items(self) -> Any:
        self.release.wait(WAY_OUT)
        return super().items()


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end, so that every hung conversion's thread ends."""
    event = threading.Event()
    yield event
    event.set()


def ctx() -> RunContext:
    return RunContext("run-1", "agent", "task", "default")


def giving(value: Any, kind: str, timeout: float | None = 0.5) -> Any:
    """A tool returning `value`: a plain def, an async def that returns before it waits, or one that
    returns after a wait."""
    if kind == "sync":

        def give() -> Any:
            """Give a value."""
            return value

        return tool(give, timeout=timeout)
    if kind == "async":

        async def give_now() -> Any:
            """Give a value."""
            return value

        return tool(give_now, name="give", timeout=timeout)

    async def give_later() -> Any:
        """Give a value."""
        await asyncio.sleep(0)
        return value

    return tool(give_later, name="give", timeout=timeout)


KINDS = ["sync", "async", "async_waiting"]


def stuck_values(release: threading.Event) -> list[Any]:
    d = StuckDict(a=1)
    d.release = release
    return [Stuck(release), {"nested": [Stuck(release)]}, d]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("which", range(3))
def test_a_value_whose_writing_hangs_times_out_as_the_tool(kind: str, which: int, release) -> None:
    value = stuck_values(release)[which]
    outcome = asyncio.run(execute(giving(value, kind), {}, ctx()))
    assert (outcome.is_error, outcome.error_type) == (True, "timeout")
    assert outcome.text == "Error: tool 'give' timed out after 0.5 s."


@pytest.mark.parametrize("kind", KINDS)
def test_a_value_whose_writing_hangs_is_cut_by_the_runs_time_budget(kind: str, release) -> None:
    tool_ = giving(Stuck(release), kind, timeout=None)
    outcome = asyncio.run(execute(tool_, {}, ctx(), limit=0.5))
    assert (outcome.is_error, outcome.error_type, outcome.budget_cut) == (True, "budget_cut", True)


@pytest.mark.parametrize("kind", KINDS)
def test_the_event_loop_goes_on_while_a_value_is_written(kind: str, release) -> None:
    """With no bound at all the writing may take its time, but on a thread: the loop is not blocked
    (a heartbeat task ticks meanwhile) and the run's cancellation still ends the call."""
    ticks: list[int] = []

    async def main() -> None:
        ticked = asyncio.Event()

        async def heartbeat() -> None:
            while True:
                ticks.append(1)
                if len(ticks) == 5:
                    ticked.set()
                await asyncio.sleep(0.01)

        beat = asyncio.create_task(heartbeat())
        call_ = asyncio.create_task(execute(giving(Stuck(release), kind, timeout=None), {}, ctx()))
        await ticked.wait()  # the loop runs while the value is (not) written
        assert not call_.done()
        call_.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call_
        beat.cancel()

    asyncio.run(main())
    assert len(ticks) >= 5


@pytest.mark.parametrize("kind", KINDS)
def test_a_value_of_the_tools_own_type_is_written_off_the_event_loop(kind: str) -> None:
    where: list[threading.Thread] = []

    class Note:
        def __str__(self) -> str:
            where.append(threading.current_thread())
            return "a note"

    outcome = asyncio.run(execute(giving({"note": Note()}, kind), {}, ctx()))
    assert (outcome.text, outcome.is_error) == ('{"note": "a note"}', False)
    assert where and where[0] is not threading.main_thread()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("text", "text"),
        ({"rows": [1, 2.5, None, True]}, '{"rows": [1, 2.5, null, true]}'),
        ((1, "a"), '[1, "a"]'),
        (b"raw", "\"b'raw'\""),
        ({(1, 2): "pair"}, "{(1, 2): 'pair'}"),
        (10**5000, "<a int that cannot be written>"),
    ],
    ids=["str", "dict", "tuple", "bytes", "tuple-key", "huge-int"],
)
def test_plain_values_are_written_as_before(kind: str, value: Any, text: str) -> None:
    outcome = asyncio.run(execute(giving(value, kind), {}, ctx()))
    assert (outcome.text, outcome.is_error) == (text, False)


@pytest.mark.parametrize("value", ["text", {"rows": [1, 2]}, 3, None])
def test_an_async_tools_plain_value_is_written_on_the_loop_with_no_thread(monkeypatch, value) -> None:
    """The fast path: an async tool's plain result costs no worker thread."""
    from agent import tools

    submitted: list[object] = []
    monkeypatch.setattr(tools._WORKERS, "submit", submitted.append)
    outcome = asyncio.run(execute(giving(value, "async_waiting"), {}, ctx()))
    assert isinstance(outcome, ToolOutcome) and not outcome.is_error
    assert submitted == []


def test_a_run_whose_tool_returns_a_value_that_never_writes_ends_with_a_reason(release) -> None:
    """The run goes on past the tool's timeout, and the model is told of it as of any timeout."""

    @tool(timeout=0.5)
    def report(x: str) -> Any:
        """Report."""
        return Stuck(release)

    model = ScriptedModel([[call("report", x="1")], [finish("done", "went on")]])
    agent = Agent("a", model, tools=[report], budget=Budget(max_seconds=120))
    result = agent.run("task")
    assert result.reason is StopReason.SUCCESS
    seen = model.requests[1].messages[-1]["content"][0]
    assert (seen["is_error"], seen["content"]) == (True, "Error: tool 'report' timed out after 0.5 s.")


def test_a_sync_tools_exception_whose_message_hangs_times_out_as_the_tool(release) -> None:
    """An exception's `__str__` is the tool's code too: said on the worker thread, within the bound."""

    class Unsayable(Exception):
        def __str__(self) -> str:
            release.wait(WAY_OUT)
            return "said at last"

    @tool(timeout=0.5)
    def explode() -> str:
        """Fail."""
        raise Unsayable

    outcome = asyncio.run(execute(explode, {}, ctx()))
    assert (outcome.is_error, outcome.error_type) == (True, "timeout")


@pytest.mark.parametrize(
    ("error", "text", "kind"),
    [
        (ValueError("no header row"), "Error: ValueError: no header row", "ValueError"),
        (SystemExit(3), "Error: SystemExit: 3", "SystemExit"),
        (StopIteration(), "Error: RuntimeError: function raised StopIteration", "RuntimeError"),
    ],
    ids=["ValueError", "SystemExit", "StopIteration"],
)
def test_a_sync_tools_exception_is_said_as_before(error: BaseException, text: str, kind: str) -> None:
    @tool
    def explode() -> str:
        """Fail."""
        raise error

    outcome = asyncio.run(execute(explode, {}, ctx()))
    assert (outcome.is_error, outcome.error_type) == (True, kind)
    assert outcome.text.startswith(text)
