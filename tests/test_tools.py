"""Tools: schemas from type hints, execution, and failures that stay data for the model."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from typing import Any, Literal, Optional

import pytest

from agent import Agent, ConfigError, RunContext, StopReason, Tool, tool
from agent.models.scripted import ScriptedModel, call, finish
from agent.tools import execute


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
            "sites": {"type": "array"},
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


@pytest.mark.parametrize("hint", [set, tuple, bytes, Point, Literal["a", "b"], Any])
def test_an_unsupported_type_is_a_config_error(hint):
    def fn(where: str, shape) -> str:  # type: ignore[no-untyped-def]
        """A tool."""
        return ""

    fn.__annotations__ = {"where": str, "shape": hint, "return": str}
    with pytest.raises(ConfigError, match=r"tool 'fn': parameter 'shape' has type .*use one of str, int"):
        tool(fn)


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
