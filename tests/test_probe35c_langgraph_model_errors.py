"""Probe 35c: LangChain's own model exceptions for a full context window and a refusal keep their stops.

LangChain chat models raise `ContextOverflowError` when the input exceeds the model's context window,
and `ModelRefusalError` when the model declines (from `with_structured_output`, say: the refusal
comes as a reply the parser cannot use). Out of a LangGraph node, both were `error` stops. They are
DESIGN's `limit`/`context` (nothing in the graph shrank the input) and `gave_up`/`refusal` (the model
API refused), as Endstate's own runs and the other integrations end them: the limit and refusal
panels count them, the error alerts do not. Whether run, streamed or read with `exact_counts`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from integrations_support import INPUT, Chat, Rig, graph_of, rigged
from langchain_core.exceptions import ContextOverflowError, ModelRefusalError

from agent import LimitKind, StopReason
from agent.integrations import langgraph as lg
from telemetry import names as n

TASK = "probe35c"


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


def failing_graph(error: Exception) -> Any:
    """A tool-calling graph whose model node's chat model raises `error`."""

    async def call_model(state: Chat) -> dict[str, Any]:
        raise error

    return graph_of([], model_node=call_model)


async def streamed(graph: Any, rig: Rig) -> Any:
    stream = lg.astream(graph, INPUT, hooks=rig.hooks, task_type=TASK)
    async for _chunk in stream:
        pass
    return stream.result


RUNS = {
    "run": lambda graph, rig: lg.run(graph, INPUT, hooks=rig.hooks, task_type=TASK),
    "astream": lambda graph, rig: asyncio.run(streamed(graph, rig)),
    "exact": lambda graph, rig: lg.run(graph, INPUT, hooks=rig.hooks, task_type=TASK, exact_counts=True),
}


@pytest.mark.parametrize("entry", sorted(RUNS))
def test_a_context_overflow_is_a_context_limit(rig: Rig, entry: str) -> None:
    res = RUNS[entry](failing_graph(ContextOverflowError("input of 250000 tokens > 200000")), rig)
    assert (res.reason, res.limit) == (StopReason.LIMIT, LimitKind.CONTEXT), (res.reason, res.note)
    assert "250000" in res.note
    assert rig.stops("lg_agent", TASK, "limit", "context") == 1
    (span,) = rig.run_spans()
    assert (span.attributes or {})[n.STOP_LIMIT] == "context"


@pytest.mark.parametrize("entry", sorted(RUNS))
def test_a_refusal_raised_by_the_model_is_gave_up_refusal(rig: Rig, entry: str) -> None:
    res = RUNS[entry](failing_graph(ModelRefusalError("the model declined")), rig)
    assert (res.reason, res.cause) == (StopReason.GAVE_UP, "refusal"), (res.reason, res.note)
    assert "declined" in res.note
    assert rig.stops("lg_agent", TASK, "gave_up", cause="refusal") == 1
    assert rig.stops("lg_agent", TASK, "error") == 0


def test_any_other_model_error_is_still_an_error(rig: Rig) -> None:
    res = RUNS["run"](failing_graph(ValueError("bad request")), rig)
    assert (res.reason, res.error_type) == (StopReason.ERROR, "ValueError")
