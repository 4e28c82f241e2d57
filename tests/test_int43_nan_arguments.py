"""int43: a model's tool arguments holding NaN or an infinity (no valid JSON holds one; the OpenAI
Agents SDK's `json.loads`, Pydantic AI's dict arguments and a home-grown loop let them through) in a
pending approval. `RunResult.to_dict()` kept the NaN, so strict JSON (`json.dumps(allow_nan=False)`,
any parser but Python's) failed on it; the question showed `NaN` while the service showed `null`;
and a suspension read back from the store no longer equalled the one it was saved from (NaN is not
equal to itself), which an approval is checked against. Now such a number is `null` in the pending
call everywhere the run keeps or shows it: the result, its dict, the question, the store."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from typing import Any

import pytest
from agents import Agent as OAAgent
from agents import function_tool
from agents.testing.model import ModelStep, ScriptedModel, function_call
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from agent import StopReason, observe_run
from agent.durable.store.base import dumps, pending_of
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from agent.result import PendingAction, RunResult, Suspension

SHOWN = {"amount": None, "limits": [1, None, None], "to": "acct-1"}


def strict(result: RunResult) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    return data


def pydantic_run() -> RunResult:
    async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        args = {"amount": math.nan, "limits": [1, math.inf, -math.inf], "to": "acct-1"}
        return ModelResponse([ToolCallPart("pay", args, "p1")])

    agent: PAIAgent[None, Any] = PAIAgent(FunctionModel(play), output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def pay(amount: float, limits: list[float], to: str) -> str:
        """Pay."""
        return "paid"

    return pai.run(agent, "pay")


def openai_run() -> RunResult:
    @function_tool(needs_approval=True)
    def pay(amount: float, limits: list[float], to: str) -> str:
        """Pay."""
        return "paid"

    raw = '{"amount": NaN, "limits": [1, Infinity, -Infinity], "to": "acct-1"}'  # json.loads takes it
    model = ScriptedModel([ModelStep(output=[function_call("pay", raw, call_id="p1")])])
    return oa.run(OAAgent(name="payer", model=model, tools=[pay]), "pay")


def homegrown_run() -> RunResult:
    args = {"amount": math.nan, "limits": [1, math.inf, -math.inf], "to": "acct-1"}
    with observe_run(None, agent="payer", task_type="t", model="m") as run:
        with run.turn(), run.model_call() as call:
            call.reply(input_tokens=3, text="")
        run.need_help("Approve pay?", PendingAction("p1", "pay", args))
    assert run.result is not None
    return run.result


@pytest.mark.parametrize("runner", [pydantic_run, openai_run, homegrown_run])
def test_a_pending_call_with_nan_arguments_is_strict_json_everywhere(runner: Any) -> None:
    result = runner()
    assert result.reason is StopReason.NEED_HELP and result.suspension and result.suspension.pending
    assert result.suspension.pending.arguments == SHOWN
    assert strict(result)["suspension"]["pending"]["arguments"] == SHOWN
    question = result.suspension.question
    assert "NaN" not in question and "Infinity" not in question, question


def test_a_stored_pending_call_with_nan_arguments_reads_back_equal() -> None:
    """The store writes the pending call as JSON and an approval is checked against what it reads."""
    pending = pydantic_run().suspension.pending  # type: ignore[union-attr]
    assert pending is not None
    assert pending_of(dumps(asdict(pending))) == pending


def test_to_dict_is_standard_json_whatever_a_result_holds() -> None:
    """A result made before this rule (kept by an older release, read back from its store) or by hand."""
    pending = PendingAction(
        "p1", "pay", {"amount": math.nan, "limits": [1, math.inf, -math.inf], "to": "acct-1"}
    )
    result = RunResult(
        "r1", "payer", "t", StopReason.NEED_HELP, suspension=Suspension("Approve pay?", 10.0, 1.0, pending)
    )
    assert strict(result)["suspension"]["pending"]["arguments"] == SHOWN
