"""LangGraph's prebuilt agent out of steps is a turns limit, not a success (probe22b).

`create_react_agent`, the graph most LangGraph teams run, never raises `GraphRecursionError`: when
its `remaining_steps` are too few for the tools its model asks for, it writes "Sorry, need more
steps to process this request." in place of the reply and ends the graph. The integration read
that as a final output: `success`, the limit share on the dashboards and its alerts blind to it.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from integrations_support import calls, look, rigged, says
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from agent.integrations import langgraph as endstate_lg
from agent.models.base import ModelReply
from agent.prices import PriceTable
from agent.result import LimitKind, RunResult, StopReason
from telemetry import names as n

INPUT = {"messages": [("user", "read every file")]}
MODES = ["stream", "exact", "astream"]


class ToolModel(GenericFakeChatModel):
    """The fake chat model, taking the tools `create_react_agent` binds to it."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def react_agent(replies: list[AIMessage]) -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():  # moved to `langchain.agents` in LangGraph 1.0, still LangGraph's
        warnings.simplefilter("ignore")
        return create_react_agent(ToolModel(messages=iter(replies)), [look], name="react")


def run(graph: Any, mode: str, **kwargs: Any) -> RunResult:
    if mode in ("stream", "exact"):
        return endstate_lg.run(graph, INPUT, exact_counts=mode == "exact", **kwargs)

    async def read() -> RunResult:
        stream = endstate_lg.astream(graph, INPUT, stream_mode="updates", **kwargs)
        assert [chunk async for chunk in stream]
        assert stream.result is not None
        return stream.result

    return asyncio.run(read())


@pytest.mark.parametrize("mode", MODES)
def test_a_prebuilt_agent_out_of_steps_is_a_turns_limit_counted_as_one(mode: str) -> None:
    replies = [calls("look", {"path": str(i)}, f"c{i}") for i in range(10)]
    with rigged() as rig:
        result = run(react_agent(replies), mode, config={"recursion_limit": 6}, hooks=rig.hooks)
        assert result.raw["messages"][-1].content == endstate_lg.OUT_OF_STEPS  # LangGraph raised nothing
        assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.TURNS)
        assert "recursion_limit" in result.note and result.output == ""
        assert result.summary.startswith("Stopped: limit (turns budget used up) after 3 turns")
        assert rig.stops("react", "default", "limit", "turns") == 1
        assert rig.stops("react", "default", "success") == 0
        (span,) = rig.run_spans()
        attrs = span.attributes or {}
        assert (attrs[n.STOP_REASON], attrs[n.STOP_LIMIT]) == ("limit", "turns")


@pytest.mark.parametrize("mode", MODES)
def test_a_prebuilt_agent_that_answers_within_its_steps_is_still_a_success(mode: str) -> None:
    replies = [calls("look", {"path": "a"}, "c1"), says("a holds the contents of a")]
    with rigged() as rig:
        result = run(react_agent(replies), mode, config={"recursion_limit": 6}, hooks=rig.hooks)
        assert (result.reason, result.output, result.turns) == (
            StopReason.SUCCESS,
            "a holds the contents of a",
            2,
        )
        assert rig.stops("react", "default", "success") == 1


def test_a_model_that_says_those_words_itself_is_a_success() -> None:
    """Only LangGraph's own message ends a run so: a model's reply carries its usage."""
    result = run(react_agent([says(endstate_lg.OUT_OF_STEPS)]), "stream")
    assert (result.reason, result.output) == (StopReason.SUCCESS, endstate_lg.OUT_OF_STEPS)


@pytest.mark.parametrize("mode", MODES)
def test_the_reply_the_prebuilt_agent_replaced_is_counted_in_the_stop(mode: str) -> None:
    """The out-of-steps message stands in for a reply the model was paid for: its tokens (and, with
    prices, its cost) are the run's, in the result, the metrics and the run span, read either way."""
    replies = [calls("look", {"path": str(i)}, f"c{i}") for i in range(10)]
    for reply in replies:
        reply.response_metadata = {"model_name": "claude-sonnet-4-5"}
    with rigged() as rig:
        config = {"recursion_limit": 6}
        result = run(react_agent(replies), mode, config=config, hooks=rig.hooks, prices=PriceTable())
        assert (result.reason, result.limit, result.turns) == (StopReason.LIMIT, LimitKind.TURNS, 3)
        assert (result.input_tokens, result.output_tokens) == (30, 12)  # three calls of 10 in, 4 out
        one = PriceTable().cost_of("claude-sonnet-4-5", ModelReply([], 10, 4))
        assert result.cost_usd == pytest.approx(3 * one)
        (span,) = rig.run_spans()
        attrs = span.attributes or {}
        assert (attrs[n.GEN_AI_USAGE_INPUT_TOKENS], attrs[n.GEN_AI_USAGE_OUTPUT_TOKENS]) == (30, 12)
