"""A Pydantic AI run that ends on a response the provider refused (`finish_reason` "content_filter",
Pydantic AI's word for Anthropic's `stop_reason: "refusal"`) with some text in it ends `gave_up`, cause
`refusal`, as a LangGraph graph ending on a refused reply, a home-grown loop's and Endstate's own runs do.
Before, Pydantic AI returned the text as the output (it raises `ContentFilterError` only for a refusal
with no parts) and the run was a `success`: a refusal counted as a success on the dashboards."""

from __future__ import annotations

from typing import Any

from integrations_support import rigged
from pydantic_ai import Agent as PAIAgent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent import StopReason
from agent.integrations import pydantic_ai as pai
from agent.result import StopCause

TASK = "red41b"


def agent_replying(finish_reason: Any) -> PAIAgent[None, str]:
    def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse([TextPart("I can't help with that.")], finish_reason=finish_reason)

    return PAIAgent(FunctionModel(play), name="pai_agent")


def test_a_run_ending_on_a_refused_response_with_text_is_gave_up_refusal() -> None:
    with rigged() as rig:
        res = pai.run(agent_replying("content_filter"), "help me", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.cause) == (StopReason.GAVE_UP, StopCause.REFUSAL)
    assert res.last_text == "I can't help with that." and res.raw.output == "I can't help with that."
    assert rig.stops("pai_agent", TASK, "gave_up", cause="refusal") == 1
    assert rig.stops("pai_agent", TASK, "success") == 0


def test_a_run_ending_on_a_plain_response_is_still_a_success() -> None:
    with rigged() as rig:
        res = pai.run(agent_replying("stop"), "help me", hooks=rig.hooks, task_type=TASK)
    assert (res.reason, res.output) == (StopReason.SUCCESS, "I can't help with that.")
