"""An OpenAI Agents SDK run under the caller's own `asyncio.run` whose tool raises `SystemExit`: asyncio
lets the exit out of the loop at once, and `asyncio.run`'s shutdown, which cancels the tasks left, is cut
short by the SDK raising it again from its tool's task; the run's task is left pending on a closed loop,
its stop unrecorded (nothing of the integration runs before the exit goes on: see `openai_agents`).
Its coroutine is closed later (the garbage collector's doing): the SDK's clean-up then fails (its
tracing's context variables reset outside their context), and that failure was recorded as the run's
`error` (`ValueError`, `RuntimeError`), a stop that says nothing true. Now the closed run ends
`cancelled`, as the sync `run` ends it, and as Pydantic AI's and LangGraph's runs end in that case."""

from __future__ import annotations

import asyncio
import gc

import pytest
from agents import Agent as OAAgent
from agents import function_tool
from agents.testing.model import ModelStep, ScriptedModel, assistant_message, function_call
from integrations_support import Rig

from agent import StopReason
from agent.integrations import openai_agents as oa
from telemetry import names as n

TASK = "closed_runs"


def cli(path: str) -> str:
    """A wrapped argparse CLI: it exits."""
    raise SystemExit(2)


@pytest.mark.filterwarnings(  # the SDK's own clean-up, closed with no loop to await it on
    "ignore:coroutine '_close_runner_owned_model_provider.<locals>.close' was never awaited:RuntimeWarning"
)
def test_a_run_left_pending_by_a_tools_exit_ends_cancelled_when_its_coroutine_is_closed(rig: Rig) -> None:
    steps = [
        ModelStep(output=[function_call("cli", {"path": "a"}, call_id="c1")]),
        ModelStep(output=[assistant_message("done")]),
    ]
    agent = OAAgent(name="exiting", model=ScriptedModel(steps), tools=[function_tool(cli)])
    run = oa.arun(agent, "go", hooks=rig.hooks, task_type=TASK)
    with pytest.raises(SystemExit):
        asyncio.run(run)
    assert rig.run_spans() == []  # left pending: the SDK's second raise ended asyncio.run's shutdown
    run.close()  # as the garbage collector closes it, here at a known time
    gc.collect()  # the SDK's unawaited clean-up coroutine is freed (and warns) under this test's filter
    (span,) = rig.run_spans()
    attributes = span.attributes or {}
    assert (attributes[n.STOP_REASON], attributes.get(n.ERROR_TYPE)) == (str(StopReason.CANCELLED), None)
    assert rig.stops("exiting", TASK, "cancelled") == 1
    assert rig.stops("exiting", TASK, "error") == 0
