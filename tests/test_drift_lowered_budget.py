"""drift: a budget lowered by a deploy below what a waiting run has used.

A run asks a person; meanwhile a deploy lowers the agent's turn ceiling below the turns the run has
used. The answer is taken (kept in the journal) and the run stops at once at its limit, which more
budget lifts. Before, more budget too small to do it was refused with "would still be out of turns
budget: extend turns": the operator, who gave the amount the run's earlier ceiling would have needed,
was not told how much it needs now. The refusal now says the least amount and what it was measured
against, on every face (Python, the CLI, HTTP).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from drift_support import counter_runner, started
from test_runner_agents import counter_state, make_counter

from agent import Agent, Budget, Extension, StopReason
from agent.durable.store import RunStatus
from agent.errors import SnapshotError


def lowered(state: dict[str, Any]) -> Agent:
    """The counter as redeployed: one turn where it had twenty."""
    return dataclasses.replace(make_counter(state), budget=Budget(max_turns=1, max_seconds=120))


def test_more_budget_too_small_for_a_lowered_ceiling_says_how_much_it_needs(
    store_url: str, tmp_path: Path
) -> None:
    first = started(store_url, counter_state(tmp_path, "ask"), "b1")
    assert (first.reason, first.turns) == (StopReason.NEED_HELP, 2)

    new = counter_runner(store_url, lowered)
    try:
        stopped = asyncio.run(new.resume("b1", "3"))
        assert (stopped.reason, stopped.limit, stopped.turns) == (StopReason.LIMIT, "turns", 2)
        with pytest.raises(SnapshotError) as refused:
            asyncio.run(new.resume("b1", more=Extension(turns=1)))
        said = str(refused.value)
        assert "would still be out of turns budget: extend turns by at least 2" in said, said
        assert "it has used 2 turns" in said and "1" in said
        after = new.store.get("b1")
        assert after is not None and (after.status, after.stop_reason) == (RunStatus.FINISHED, "limit")
        done = asyncio.run(new.resume("b1", more=Extension(turns=3)))  # 2 to get back, 1 to finish
        assert done.reason is StopReason.SUCCESS, done.note  # the answer was kept: the model read it
    finally:
        new.store.close()


@pytest.mark.parametrize(
    ("budget", "kind"),
    [(Budget(max_turns=1, max_seconds=None), "turns"), (Budget(max_turns=None, max_tokens=100), "tokens")],
)
def test_the_least_more_budget_said_is_the_least_that_lets_the_run_go_on(
    make_agent: Any, budget: Budget, kind: str
) -> None:
    from agent.models.scripted import finish, say

    steps = [[say("thinking")], [say("thinking")], [finish("done", "ok")]]
    first = make_agent(*steps, budget=budget).run("go")
    assert first.reason is StopReason.LIMIT and first.limit == kind and first.snapshot is not None
    with pytest.raises(SnapshotError, match=rf"extend {kind} by at least (\d+) \(it has used") as refused:
        make_agent(*steps, budget=budget).resume(first.snapshot, more=Extension(seconds=1))
    least = int(re.search(r"by at least (\d+)", str(refused.value)).group(1))  # type: ignore[union-attr]
    with pytest.raises(SnapshotError, match=f"extend {kind} by at least {least} "):
        make_agent(*steps, budget=budget).resume(
            first.snapshot, more=Extension(**{kind: least - 1, "seconds": 1})
        )
    done = make_agent(*steps, budget=budget).resume(first.snapshot, more=Extension(**{kind: least}))
    assert done.turns == first.turns + 1  # the least amount: room for one more turn
