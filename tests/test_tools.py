"""Tools: schemas from type hints, execution, and failures that stay data for the model."""

from __future__ import annotations

import asyncio
import inspect
import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading
from typing import Any, Literal, Optional

import pytest

from agent import Agent, ConfigError, RunContext, StopReason, Tool, tool
from agent.models.scripted import ScriptedModel, call, finish
from agent.tools import ToolOutcome, execute


def ctx() -> RunContext:
    return RunContext("run-1", "agent", "task", "default")


# -- schemas ---------------------------------------------------------------------------


def test_schema_from_type_hints():
    @tool
    def search(
        query: str,
        limit: int,
        min_score: float = 0.5,
        exact: bool = False,
        sites: list[str] | None = None,
        filters: dict = None,  # noqa: RUF013
        lang: Optional[str] = None,  # noqa: UP045
    ) -> str:
        """Search the web.

        Returns one line per hit.
        """
        return ""

    assert isinstance(search, Tool)
    assert search.name == "search"
    assert search.description == "Search the web.\n\nReturns one line per hit."
    assert search.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "min_score": {"type": "number"},
            "exact": {"type": "boolean"},
            "sites": {"type": "array", "items": {"type": "string"}},
            "filters": {"type": "object"},
            "lang": {"type": "string"},
        },
        "required": ["query", "limit"],
        "additionalProperties": False,
    }
    assert search.spec() == {
        "name": "search",
        "description": search.description,
        "input_schema": search.parameters,
    }


def test_the_ctx_parameter_is_hidden_from_the_model():
    @tool
    def remember(ctx: RunContext, key: str, value: str) -> str:
        """Remember a value for this run."""
        ctx.state[key] = value
        return "ok"

    assert remember.wants_ctx is True
    assert list(remember.parameters["properties"]) == ["key", "value"]
    assert remember.parameters["required"] == ["key", "value"]
    run = ctx()
    assert asyncio.run(execute(remember, {"key": "k", "value": "v"}, run)).text == "ok"
    assert run.state == {"k": "v"}


def test_options_and_defaults():
    @tool(name="send_invoice", description="Send an invoice.", timeout=5, needs_approval=True)
    def send(customer: str) -> str:
        return ""

    assert (send.name, send.description, send.timeout, send.needs_approval) == (
        "send_invoice",
        "Send an invoice.",
        5,
        True,
    )

    @tool
    def plain(x: str) -> str:
        """Plain."""
        return x

    assert (plain.timeout, plain.needs_approval, plain.wants_ctx) == (30.0, False, False)


def test_an_unannotated_parameter_is_a_string():
    @tool
    def echo(text):  # type: ignore[no-untyped-def]
        """Echo."""
        return text

    assert echo.parameters["properties"] == {"text": {"type": "string"}}


class Point:
    pass


@pytest.mark.parametrize("hint", [set, tuple, bytes, Point, Literal["a", 1], Any])
def test_an_unsupported_type_is_a_config_error(hint):
    def fn(where: str, shape) -> str:  # type: ignore[no-untyped-def]
        """A tool."""
        return ""

    fn.__annotations__ = {"where": str, "shape": hint, "return": str}
    with pytest.raises(ConfigError, match=r"tool 'fn': parameter 'shape' has type .*use one of str, int"):
        tool(fn)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"fn": "search"}, "fn must be the function to call, not str"),
        ({"description": None}, "description must be text"),
        ({"description": "  "}, "description must be text"),
        ({"parameters": "query: str"}, "parameters must be a JSON schema of an object"),
        ({"parameters": {"type": "string"}}, "parameters must be a JSON schema of an object"),
    ],
)
def test_a_tool_built_by_hand_is_checked_when_made(fields, says):
    """These were taken: a tool whose fn is no function ended each call's run as error (TypeError),
    and a schema the model API refuses failed every model call of every run that offered it."""
    given = {
        "name": "search",
        "fn": lambda query: "",
        "description": "Search.",
        "parameters": {"type": "object"},
    }
    with pytest.raises(ConfigError, match=f"tool 'search': {says}"):
        Tool(**{**given, **fields})


def test_a_tool_needs_a_description():
    def nameless(x: str) -> str:
        return x

    with pytest.raises(ConfigError, match="tool 'nameless' needs a description: add a docstring"):
        tool(nameless)


def test_tool_names_must_be_unique_and_finish_is_reserved():
    @tool
    def finish_tool(kind: str) -> str:
        """Fake finish."""
        return ""

    fake_finish = tool(finish_tool.fn, name="finish")
    with pytest.raises(ConfigError, match="'finish' is reserved"):
        Agent("a", ScriptedModel(), tools=[fake_finish])
    with pytest.raises(ConfigError, match=r"tool names must be unique; repeated: \['finish_tool'\]"):
        Agent("a", ScriptedModel(), tools=[finish_tool, finish_tool])


def test_the_model_is_offered_the_tools_and_finish(make_agent):
    @tool
    def search(query: str) -> str:
        """Search."""
        return ""

    agent = make_agent([finish("done", "x")], tools=[search])
    agent.run("task")
    tools = agent.model.requests[0].tools
    assert [t["name"] for t in tools] == ["search", "finish"]
    finish_schema = tools[1]["input_schema"]
    assert finish_schema["properties"]["kind"]["enum"] == ["done", "give_up", "need_help"]
    assert finish_schema["required"] == ["kind", "note"]


# -- execution --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain text", "plain text"),
        ({"rows": 3, "ok": True}, '{"rows": 3, "ok": true}'),
        ([1, 2], "[1, 2]"),
        (None, "null"),
        (42, "42"),
    ],
)
def test_tool_values_become_text(value, text):
    @tool
    def give() -> Any:
        """Give a value."""
        return value

    outcome = asyncio.run(execute(give, {}, ctx()))
    assert (outcome.text, outcome.is_error) == (text, False)


def _cycle() -> list[Any]:
    loop: list[Any] = [1]
    loop.append(loop)
    return loop


@pytest.mark.parametrize(
    ("value", "text"),
    [({(1, 2): "pair"}, "{(1, 2): 'pair'}"), (_cycle(), "[1, [...]]"), ({1: {2}}, '{"1": "{2}"}')],
)
def test_a_value_json_cannot_hold_is_still_the_tools_result(value, text):
    """A tool that ran is never reported as failed because its value is not JSON: the model was
    told "Error: TypeError: keys must be str..." for a call whose side effects had happened."""

    @tool
    def give() -> Any:
        """Give a value."""
        return value

    outcome = asyncio.run(execute(give, {}, ctx()))
    assert (outcome.text, outcome.is_error, outcome.error_type) == (text, False, None)


def test_bad_arguments_are_an_error_result():
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    missing = asyncio.run(execute(add, {"a": 1}, ctx()))
    assert missing.is_error and missing.error_type == "bad_arguments"
    assert "bad arguments for 'add'" in missing.text
    extra = asyncio.run(execute(add, {"a": 1, "b": 2, "c": 3}, ctx()))
    assert extra.is_error and "unexpected keyword argument 'c'" in extra.text


def test_an_async_tool_runs():
    @tool
    async def fetch(url: str) -> str:
        """Fetch."""
        await asyncio.sleep(0)
        return f"body of {url}"

    assert asyncio.run(execute(fetch, {"url": "u"}, ctx())).text == "body of u"


def test_an_async_tool_that_returns_before_it_waits_needs_no_timer(monkeypatch) -> None:
    @tool(timeout=5)
    async def quick(x: int) -> str:
        """Quick."""
        return f"got {x}"

    entered = []
    real = asyncio.timeout
    monkeypatch.setattr(asyncio, "timeout", lambda d: entered.append(d) or real(d))
    assert run(quick, {"x": 1}).text == "got 1"
    assert entered == []


def test_an_async_tool_that_waits_many_times_runs_under_its_timeout(monkeypatch) -> None:
    @tool(timeout=5)
    async def steps(n: int) -> str:
        """Steps."""
        got = []
        for i in range(n):
            await asyncio.sleep(0)
            got.append(await asyncio.get_running_loop().run_in_executor(None, lambda i=i: i * i))
        return ",".join(map(str, got))

    entered = []
    real = asyncio.timeout
    monkeypatch.setattr(asyncio, "timeout", lambda d: entered.append(d) or real(d))
    assert run(steps, {"n": 4}).text == "0,1,4,9"
    assert entered == [5]


def test_an_async_tool_cut_off_after_its_first_wait_sees_the_cancellation() -> None:
    seen = []

    @tool(timeout=0.05)
    async def stubborn() -> str:
        """Cleans up when cut off."""
        await asyncio.sleep(0)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "never"

    outcome = run(stubborn, {})
    assert outcome.is_error and outcome.error_type == "timeout"
    assert seen == ["cancelled"]


def test_an_async_tool_failing_after_a_wait_gives_an_error_result() -> None:
    @tool
    async def flaky() -> str:
        """Fails late."""
        await asyncio.sleep(0)
        raise ValueError("disk full")

    outcome = run(flaky, {})
    assert outcome.is_error and outcome.text == "Error: ValueError: disk full"


def test_a_sync_tool_runs_off_the_event_loop():
    seen: list[threading.Thread] = []

    @tool
    def where() -> str:
        """Report the thread."""
        seen.append(threading.current_thread())
        return "ok"

    asyncio.run(execute(where, {}, ctx()))
    assert len(seen) == 1
    assert seen[0] is not threading.main_thread()
    assert seen[0].daemon  # a hung tool must not keep the process alive


# -- failures stay data ------------------------------------------------------------------


def run_with(make_agent, bad: Tool) -> tuple[Any, dict[str, Any]]:
    """Call `bad` once, then finish; return the result and what the model saw."""
    agent = make_agent([call(bad.name, x="1")], [finish("done", "went on")], tools=[bad])
    result = agent.run("task")
    return result, agent.model.requests[1].messages[-1]["content"][0]


def test_a_tool_that_raises_gives_the_model_an_error_result(make_agent):
    @tool
    def explode(x: str) -> str:
        """Fail."""
        raise ValueError("the CSV has no header row")

    result, seen = run_with(make_agent, explode)
    assert result.reason is StopReason.SUCCESS
    assert seen["is_error"] is True
    assert seen["content"] == "Error: ValueError: the CSV has no header row"
    assert "1 returned errors" in result.summary


def test_a_tool_whose_exception_cannot_say_its_message_still_gives_an_error_result(make_agent):
    """The exception's own `__str__` raised while the result was written: the run ended `error`."""

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no message")

    @tool
    def explode(x: str) -> str:
        """Fail, badly."""
        raise Unprintable

    result, seen = run_with(make_agent, explode)
    assert result.reason is StopReason.SUCCESS
    assert seen["is_error"] is True
    assert seen["content"] == "Error: Unprintable: (its message could not be read: RuntimeError)"


def test_an_async_tool_that_hangs_times_out(make_agent):
    @tool(timeout=0.05)
    async def hang(x: str) -> str:
        """Hang."""
        await asyncio.sleep(3600)
        return "never"

    result, seen = run_with(make_agent, hang)
    assert result.reason is StopReason.SUCCESS
    assert seen["is_error"] is True
    assert seen["content"] == "Error: tool 'hang' timed out after 0.05 s."


def test_a_sync_tool_that_hangs_times_out():
    release = threading.Event()

    @tool(timeout=0.05)
    def hang(x: str) -> str:
        """Hang."""
        release.wait(60)
        return "too late"

    agent = Agent("a", ScriptedModel([[call("hang", x="1")], [finish("done", "went on")]]), tools=[hang])
    try:
        result = agent.run("task")
    finally:
        release.set()
    assert result.reason is StopReason.SUCCESS
    seen = agent.model.requests[1].messages[-1]["content"][0]
    assert seen["content"] == "Error: tool 'hang' timed out after 0.05 s."


HUNG_TOOL_SCRIPT = textwrap.dedent(
    """
    import json, time
    from agent import Agent, tool
    from agent.models.scripted import ScriptedModel, call, finish

    @tool(timeout=0.2)
    def stuck(x: str) -> str:
        '''Never returns.'''
        time.sleep(3600)
        return "never"

    model = ScriptedModel([[call("stuck", x="1")], [finish("done", "moved on")]])
    result = Agent("hung", model, tools=[stuck]).run("task")
    print(json.dumps(result.to_dict()))
    """
)


@pytest.mark.slow
def test_a_hung_sync_tool_does_not_block_process_exit():
    done = subprocess.run(
        [sys.executable, "-c", HUNG_TOOL_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["reason"] == "success"
    assert result["output"] == "moved on"


# -- the run's time limit, fork safety, every BaseException (issue 11) ------------------------


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

    t = Tool("anything", anything, "Anything.", {"type": "object"}, wants_ctx=True)
    assert run(t, {"x": 1, "y": 2}).text == "x,y/run-1"


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


def test_a_literal_is_an_enum_of_its_choices_and_list_items_are_typed():
    @tool
    def paint(color: Literal["red", "blue"], sizes: list[int], size: Literal[1, 2] | None = None) -> str:
        """Paint."""
        return color

    assert paint.parameters["properties"] == {
        "color": {"type": "string", "enum": ["red", "blue"]},
        "sizes": {"type": "array", "items": {"type": "integer"}},
        "size": {"type": "integer", "enum": [1, 2]},
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "search the web"}, r"tool name 'search the web' is not one a model API takes"),
        ({"name": "x" * 65}, r"1 to 64 ASCII letters, digits, _ or -"),
        ({"needs_approval": "yes"}, r"needs_approval must be True or False, not 'yes'"),
        ({"preview": "a diff"}, r"preview must be a function"),
    ],
)
def test_tool_options_a_model_api_would_refuse_are_refused_when_made(options, message):
    def search(query: str) -> str:
        """Search."""
        return query

    with pytest.raises(ConfigError, match=message):
        tool(search, **options)


def test_parameters_a_model_cannot_pass_are_refused_when_made():
    def many(*paths: str) -> str:
        """Read files."""
        return ""

    def loose(**options: str) -> str:
        """Take options."""
        return ""

    def typo(path: Pth) -> str:  # type: ignore[name-defined]  # noqa: F821
        """Read."""
        return path

    with pytest.raises(ConfigError, match=r"\*paths cannot be given: name each parameter"):
        tool(many)
    with pytest.raises(ConfigError, match=r"\*\*options cannot be given"):
        tool(loose)
    with pytest.raises(ConfigError, match=r"tool 'typo': its type hints cannot be read \(name 'Pth'"):
        tool(typo)
