"""A long scripted run's memory grows with its length, not with its square.

`ScriptedModel` kept every request it was sent, and each request holds the journal as it was sent
(a tuple of every entry so far): a run of n turns kept some n * n / 2 references, 130 MB for 4,000
turns. It keeps its last `keep_requests` (KEEP_REQUESTS) requests whole now, and counts them all."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import pytest

from agent import Agent, Budget, tool
from agent.models.scripted import KEEP_REQUESTS, ScriptedModel, call, finish


@tool
def look(i: int) -> str:
    """Look at item i."""
    return f"item {i}: fine"


def long_run(turns: int, **model_options: Any) -> tuple[int, Agent]:
    """Bytes still held once a run of `turns` turns ended (the agent and its result alive)."""

    def step(turn: int) -> list[dict[str, Any]]:
        return [call("look", i=turn)] if turn <= turns else [finish("done")]

    model = ScriptedModel(then=step, **model_options)
    agent = Agent(model=model, tools=[look], name="long", budget=Budget(max_turns=turns + 5, max_seconds=600))
    gc.collect()
    tracemalloc.start()
    try:
        result = agent.run("look at every item")
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.reason == "success" and result.turns == turns + 1
    return held, agent


def test_a_long_scripted_runs_memory_is_linear_in_its_length() -> None:
    short, _ = long_run(200)
    long, agent = long_run(800)
    assert long / short < 6, (short, long)  # 4x the turns: ~4x linear, ~16x quadratic
    model = agent.model
    assert isinstance(model, ScriptedModel)
    assert len(model.requests) == 801  # every request counted
    last = model.requests[-1]
    assert len(last.journal) == 1 + 2 * 800 and last is model.requests[800]  # the last ones kept whole
    with pytest.raises(IndexError, match=f"request 0 of 801 is no longer kept: .*its last {KEEP_REQUESTS}"):
        model.requests[0]


def test_a_short_runs_requests_are_all_kept_and_read_as_a_list() -> None:
    _, agent = long_run(3)
    requests = agent.model.requests  # type: ignore[attr-defined]
    assert len(requests) == 4 and [len(r.journal) for r in requests] == [1, 3, 5, 7]
    assert requests[1:3] == [requests[1], requests[2]] and requests != []
    assert list(requests)[-1] is requests[-1] and requests[-4] is requests[0]


def test_every_request_is_kept_when_asked() -> None:
    _, agent = long_run(KEEP_REQUESTS + 10, keep_requests=None)
    requests = agent.model.requests  # type: ignore[attr-defined]
    assert [len(r.journal) for r in requests][:2] == [1, 3] and len(requests) == KEEP_REQUESTS + 11
