"""`limits suggest --prometheus` when Prometheus gives no 95th percentile for a task type whose
buckets it does give: `histogram_quantile` answers NaN for a histogram it cannot read (fewer than
two buckets, or runs that left the window between the two queries, each made at its own "now").
Before, the NaN reached the rounding and the command ended in a ValueError traceback ("cannot
convert float NaN to integer"); now the ceiling is read from the longest run alone, the table shows
the percentile as "?", and a note says so."""

from __future__ import annotations

from typing import Any

import pytest

from agent.evals.limits import PrometheusHistory, render, suggest
from agent.result import LimitKind

BUCKETS = [("5", "3"), ("10", "10"), ("+Inf", "10")]  # 10 successes, the longest at most 10 turns


def _fetch(quantile: str) -> Any:
    def fetch(promql: str) -> list[dict[str, Any]]:
        if "agent_stops_total" in promql:
            return [{"metric": {"task_type": "sync", "stop_reason": "success"}, "value": [0, "10"]}]
        if promql.startswith("histogram_quantile") and "agent_run_turns_bucket" in promql:
            return [{"metric": {"task_type": "sync"}, "value": [0, quantile]}]
        if "agent_run_turns_bucket" in promql:
            labels = {"task_type": "sync", "stop_reason": "success"}
            return [{"metric": labels | {"le": le}, "value": [0, n]} for le, n in BUCKETS]
        return []

    return fetch


@pytest.mark.parametrize("quantile", ["NaN", "+Inf"])
def test_no_percentile_gives_a_ceiling_from_the_longest_run_and_says_so(quantile: str) -> None:
    (s,) = suggest(PrometheusHistory("http://prometheus.invalid", "7d", fetch=_fetch(quantile)))
    assert s.ceiling(LimitKind.TURNS) == 15  # 1.25 x the longest (10), rounded up
    assert any("turns: Prometheus gave no 95th percentile" in n for n in s.notes)
    row = next(line for line in render([s], "p").splitlines() if line.strip().startswith("turns"))
    assert row.split()[2] == "?"


def test_a_percentile_it_gives_is_used_as_before() -> None:
    (s,) = suggest(PrometheusHistory("http://prometheus.invalid", "7d", fetch=_fetch("9")))
    assert s.ceiling(LimitKind.TURNS) == 15 and not any("no 95th percentile" in n for n in s.notes)
