"""`endstate limits suggest --json` is standard JSON: a 95th percentile Prometheus did not give
(`histogram_quantile` answered NaN) is `null`, not `NaN`, which jq, JavaScript's JSON.parse and Go
refuse, so a CI step reading the suggestion failed on a file Python had written without a word."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import pytest

from agent.cli.main import main

BUCKETS = [("5", "3"), ("10", "10"), ("+Inf", "10")]  # 10 successes, the longest at most 10 turns


def _prometheus(url: str, promql: str, at: float | None = None) -> list[dict[str, Any]]:
    if "agent_stops_total" in promql:
        return [{"metric": {"task_type": "sync", "stop_reason": "success"}, "value": [0, "10"]}]
    if promql.startswith("histogram_quantile"):
        return [{"metric": {"task_type": "sync"}, "value": [0, "NaN"]}]
    if "agent_run_turns_bucket" in promql:
        labels = {"task_type": "sync", "stop_reason": "success"}
        return [{"metric": labels | {"le": le}, "value": [0, n]} for le, n in BUCKETS]
    return []


def _refuse(word: str) -> NoReturn:
    raise ValueError(f"not standard JSON: {word}")


def test_a_percentile_prometheus_did_not_give_is_null_in_standard_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("agent.evals.limits.query", _prometheus)
    assert main(["limits", "suggest", "--prometheus", "http://prometheus.invalid:9090", "--json"]) == 0
    (found,) = json.loads(capsys.readouterr().out, parse_constant=_refuse)  # as strict as jq
    assert found["ceilings"]["turns"] == {"suggested": 15, "successes": 10, "p95": None, "longest": 10}
