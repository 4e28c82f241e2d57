"""A cost the Claude Code CLI reports that its tokens could not cost at any model's price is unknown,
never the run's cost. Before, `total_cost_usd=1e15` for a run of 30 tokens became the run's cost: the
result said $1,000,000,000,000,000 and `agent_cost_usd_total` carried it for good."""

from __future__ import annotations

from typing import Any

import pytest
from integrations_support import FakeCLI, assistant, result, rigged, tool_result, tool_use

from agent import StopReason
from agent.integrations import claude_agent_sdk as claude

CALL = assistant("m1", tool_use("c1", "Read", {"path": "a"}))
DONE = assistant("m2", {"type": "text", "text": "done"})


def played(**fields: Any) -> Any:
    lines = [CALL, tool_result("c1", "text"), DONE, result(result="done", **fields)]
    with rigged() as rig:
        res = claude.run("read a", transport=FakeCLI(lines), hooks=rig.hooks, task_type="claude42")
    return res


@pytest.mark.parametrize("cost", [1e15, 1e6])
def test_a_cost_no_tokens_of_the_run_could_cost_is_unknown(cost: float) -> None:
    res = played(total_cost_usd=cost, usage={"input_tokens": 20, "output_tokens": 10})
    assert (res.reason, res.cost_usd, res.input_tokens) == (StopReason.SUCCESS, None, 20)


@pytest.mark.parametrize(
    ("cost", "usage"),
    [
        (0.02, {"input_tokens": 20, "output_tokens": 10}),
        (95.0, {"input_tokens": 2_000_000, "output_tokens": 300_000}),  # Opus 4 at $15/$75: a large run
        (0.5, None),  # no totals: the messages' sums, and the least a run is judged by
    ],
)
def test_a_cost_the_runs_tokens_could_cost_is_the_runs(cost: float, usage: Any) -> None:
    res = played(total_cost_usd=cost, usage=usage)
    assert (res.reason, res.cost_usd) == (StopReason.SUCCESS, cost)
