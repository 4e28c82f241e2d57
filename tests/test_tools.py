"""Tool execution: errors become results, timeouts and the run's time limit, fork safety."""

from __future__ import annotations

import asyncio
import inspect
import multiprocessing
import os

import pytest

from agent.context import RunContext
from agent.errors import ConfigError
from agent.tools import ToolOutcome, execute, tool


def ctx() -> RunContext:
    return RunContext(run_id="r1", agent="a", task="t", task_type="t")


@tool(timeout=5)
def add(a: int, b: int = 1) -> int:
    """Add."""
    return a + b


def run(tool_, args, limit=None) -> ToolOutcome:
    extra = {"limit": limit} if limit is not None else {}
    return asyncio.run(execute(tool_, args, ctx(), **extra))


# -- item 4: every BaseException is a result; KeyboardInterrupt cancels -------------------------


def _argparse_cli() -> str:
    """Wraps a CLI that exits."""
    raise SystemExit(2)


def _generator_exit() -> str:
    """Raises GeneratorExit."""
    raise GeneratorExit


@pytest.mark.parametrize("sync", [True, False])
@pytest.mark.parametrize("fn", [_argparse_cli, _generator_exit])
def test_a_tool_raising_a_base_exception_gives_an_error_result(fn, sync) -> None:
    if not sync:
        raw = fn

        async def fn() -> str:  # type: ignore[no-redef]
            return raw()

        fn.__doc__ = raw.__doc__
    outcome = run(tool(fn), {})
    assert outcome.is_error
    assert outcome.error_type in ("SystemExit", "GeneratorExit")
    assert outcome.text.startswith(f"Error: {outcome.error_type}")


@pytest.mark.parametrize("sync", [True, False])
def test_a_tool_raising_keyboard_interrupt_cancels_the_call(sync) -> None:
    def interrupted() -> str:
        """Ctrl-C inside."""
        raise KeyboardInterrupt

    async def interrupted_async() -> str:
        """Ctrl-C inside."""
        raise KeyboardInterrupt

    with pytest.raises(asyncio.CancelledError):
        run(tool(interrupted if sync else interrupted_async), {})


def test_a_tool_raising_system_exit_never_escapes_agent_run(make_agent) -> None:
    from agent.models.scripted import call, finish
    from agent.result import StopReason

    @tool
    def cli() -> str:
        """A wrapped argparse CLI."""
        raise SystemExit("usage: cli [-h]")

    agent = make_agent([call("cli")], [finish("done", "ok")], tools=[cli])
    result = agent.run("task")
    assert result.reason is StopReason.SUCCESS
    assert "SystemExit: usage: cli [-h]" in str(agent.model.requests[1].messages)


def test_a_tool_raising_keyboard_interrupt_ends_the_run_cancelled(make_agent) -> None:
    from agent.models.scripted import call, finish
    from agent.result import StopReason

    @tool
    def interrupted() -> str:
        """Ctrl-C inside."""
        raise KeyboardInterrupt

    result = make_agent([call("interrupted")], [finish("done", "ok")], tools=[interrupted]).run("task")
    assert result.reason is StopReason.CANCELLED
    assert result.snapshot is not None


# -- arguments bound from a precomputed shape ---------------------------------------------------


def test_arguments_are_checked_without_binding_a_signature_per_call(monkeypatch) -> None:
    run(add, {"a": 1})  # anything the first call may cache
    calls = []
    real = inspect.Signature.bind
    monkeypatch.setattr(inspect.Signature, "bind", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert run(add, {"a": 1}).text == "2"
    assert run(add, {"b": 1}).error_type == "bad_arguments"
    assert calls == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({}, "missing a required argument: 'a'"),
        ({"a": 1, "c": 2}, "got an unexpected keyword argument 'c'"),
        ({"a": 1, "ctx": 2}, "got an unexpected keyword argument 'ctx'"),
    ],
)
def test_bad_arguments_say_what_is_wrong(args, says) -> None:
    outcome = run(add, args)
    assert outcome.is_error and outcome.error_type == "bad_arguments"
    assert says in outcome.text


def test_a_tool_taking_kwargs_accepts_any_argument() -> None:
    def anything(ctx, **kw) -> str:  # hand-built: kwargs have no schema
        return ",".join(sorted(kw)) + f"/{ctx.run_id}"

    from agent.tools import Tool

    t = Tool("anything", anything, "Anything.", {"type": "object"}, wants_ctx=True)
    assert run(t, {"x": 1, "y": 2}).text == "x,y/r1"


# -- no timeout, and the run's time limit --------------------------------------------------------


def test_a_tool_without_timeout_runs_without_a_deadline(monkeypatch) -> None:
    @tool(timeout=None)
    async def slow() -> str:
        """Slow."""
        return "ok"

    entered = []
    real = asyncio.timeout
    monkeypatch.setattr(asyncio, "timeout", lambda d: entered.append(d) or real(d))
    assert run(slow, {}).text == "ok"
    assert entered == []


@pytest.mark.parametrize("bad", [0, -1, float("nan")])
def test_a_tool_timeout_must_be_positive(bad) -> None:
    with pytest.raises(ConfigError, match="timeout"):

        @tool(timeout=bad)
        def t() -> str:
            """T."""
            return ""


def _hang_async():
    async def hang() -> str:
        """Hangs."""
        await asyncio.Event().wait()
        return ""

    return hang


def _hang_sync():
    import threading

    release = threading.Event()

    def hang() -> str:
        """Hangs until released."""
        release.wait(30)
        return ""

    return hang, release


@pytest.mark.parametrize("sync", [True, False])
def test_the_run_limit_cuts_a_tool_short_and_says_so(sync) -> None:
    fn, release = _hang_sync() if sync else (_hang_async(), None)
    outcome = run(tool(fn, timeout=60), {}, limit=0.05)
    if release:
        release.set()
    assert outcome.is_error and outcome.budget_cut
    assert outcome.error_type == "budget_cut"
    assert "time budget" in outcome.text


def test_the_tools_own_timeout_is_no_budget_cut() -> None:
    outcome = run(tool(_hang_async(), timeout=0.05), {}, limit=60)
    assert outcome.is_error and outcome.error_type == "timeout" and not outcome.budget_cut


def test_a_tool_with_no_timeout_is_still_bounded_by_the_limit() -> None:
    outcome = run(tool(_hang_async(), timeout=None), {}, limit=0.05)
    assert outcome.budget_cut


def test_no_time_left_does_not_start_the_tool() -> None:
    ran = []

    @tool
    def side_effect() -> str:
        """Has an effect."""
        ran.append(1)
        return "done"

    outcome = run(side_effect, {}, limit=0)
    assert outcome.budget_cut and ran == []


def test_a_limit_longer_than_the_call_changes_nothing() -> None:
    outcome = run(add, {"a": 2}, limit=30)
    assert outcome == ToolOutcome("3")


# -- item 3: fork safety -------------------------------------------------------------------------


@tool(timeout=5)
def pid() -> str:
    """This process's id."""
    return str(os.getpid())


def _child_calls_a_sync_tool(conn) -> None:
    outcome = asyncio.run(execute(pid, {}, ctx()))
    conn.send((outcome.text, outcome.error_type))
    conn.close()


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_sync_tools_work_in_a_process_forked_after_a_tool_ran() -> None:
    assert run(pid, {}).text == str(os.getpid())  # the pool now has an idle thread
    fork = multiprocessing.get_context("fork")
    parent, child = fork.Pipe()
    proc = fork.Process(target=_child_calls_a_sync_tool, args=(child,))
    proc.start()
    text, error = parent.recv() if parent.poll(20) else (None, "no answer")
    proc.join(10)
    assert error is None
    assert text == str(proc.pid)
    assert run(pid, {}).text == str(os.getpid())  # the parent's pool is untouched


def test_the_thread_pool_reuses_idle_threads() -> None:
    run(pid, {})
    import threading

    before = sum(t.name == "endstate-tool" for t in threading.enumerate())
    for _ in range(5):
        run(pid, {})
    assert sum(t.name == "endstate-tool" for t in threading.enumerate()) == before
