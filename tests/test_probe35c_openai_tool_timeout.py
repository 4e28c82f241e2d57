"""Probe 35c: an OpenAI Agents SDK tool past its `timeout`, or raising out of the run, is its call failing.

`function_tool(timeout=...)` gives the model the SDK's timeout message in the output's place (its
default `timeout_behavior`), which the run hooks see as the tool's output: the call was counted
`ok`. With `timeout_behavior="raise_exception"` the SDK raises `ToolTimeoutError` out of the run
(an `error` stop) and no hook ends the call: it was counted nowhere. Either way it is the call
timing out, as Endstate's own tool timeouts are: outcome `timeout`, its span an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, Usage, UserError, function_tool, set_tracing_disabled
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from integrations_support import Rig, rigged
from opentelemetry.trace import StatusCode

from agent import StopReason
from agent.integrations import openai_agents as oa

TASK = "probe35c"


@pytest.fixture
def rig() -> Iterator[Rig]:
    set_tracing_disabled(True)
    with rigged() as rig:
        yield rig
    set_tracing_disabled(False)


def agent_with_stalling_tool(behavior: Any) -> Agent[Any]:
    @function_tool(timeout=0.05, timeout_behavior=behavior)
    async def fetch(url: str) -> str:
        """Fetch a page (it never answers: its timeout always passes first)."""
        await asyncio.Event().wait()
        return "never"

    usage = Usage(requests=1, input_tokens=10, output_tokens=4, total_tokens=14)
    steps = [
        ModelStep(output=[function_call("fetch", {"url": "u"}, call_id="f1")], usage=usage),
        ModelStep(output=[assistant_message("it timed out")], usage=usage),
    ]
    return Agent(name="oa_timeout", model=ScriptedModel(steps), tools=[fetch])


def check_timed_out_call(rig: Rig) -> None:
    calls = {"agent": "oa_timeout", "task_type": TASK, "tool": "fetch"}
    assert rig.value("agent_tool_calls_total", **calls, outcome="timeout") == 1
    assert rig.value("agent_tool_calls_total", **calls, outcome="ok") == 0
    (span,) = [s for s in rig.spans() if s.name == "execute_tool fetch"]
    assert span.status.status_code is StatusCode.ERROR


def test_a_tool_timeout_given_to_the_model_is_a_timed_out_call(rig: Rig) -> None:
    res = oa.run(agent_with_stalling_tool("error_as_result"), "fetch u", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.output) == (StopReason.SUCCESS, "it timed out")
    check_timed_out_call(rig)


def test_a_tool_timeout_raised_out_of_the_run_is_a_timed_out_call_and_an_error_stop(rig: Rig) -> None:
    res = oa.run(agent_with_stalling_tool("raise_exception"), "fetch u", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "ToolTimeoutError")
    check_timed_out_call(rig)


def test_a_tool_that_raises_out_of_the_run_is_its_failed_call_and_an_error_stop(rig: Rig) -> None:
    """With `failure_error_function=None` the SDK raises the tool's failure out of the run (its
    `UserError`, the tool's exception the cause) and no hook ends the call: it was counted nowhere.
    The stop is typed by the tool's own exception, as a Pydantic AI or LangGraph tool's is (operators
    group errors by type: every tool failure read `UserError`, the SDK's wrapper)."""

    @function_tool(failure_error_function=None)
    def parse(text: str) -> str:
        """Parse the text."""
        raise ValueError("unparseable")

    usage = Usage(requests=1, input_tokens=10, output_tokens=4, total_tokens=14)
    steps = [ModelStep(output=[function_call("parse", {"text": "x"}, call_id="p1")], usage=usage)]
    agent = Agent(name="oa_timeout", model=ScriptedModel(steps), tools=[parse])
    res = oa.run(agent, "parse x", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "ValueError")
    assert "unparseable" in res.note and isinstance(res.raw, UserError)
    (run_span,) = rig.run_spans()
    assert (run_span.attributes or {}).get("error.type") == "ValueError"
    calls = {"agent": "oa_timeout", "task_type": TASK, "tool": "parse"}
    assert rig.value("agent_tool_calls_total", **calls, outcome="error") == 1
    (span,) = [s for s in rig.spans() if s.name == "execute_tool parse"]
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {}).get("error.type") == "ValueError"
