"""The dashboard's tokens and cost panels say what their queries measure. A run that asks a person,
is approved and succeeds has two segments: `agent_run_tokens` takes the run's totals at each
segment's end, but `agent_cost_usd_total` counts what each segment spent. So the tokens panel's
success series is the whole run, and the cost panel's is only what was spent after the approval:
a panel titled "Cost per run" showed part of a run as the run's cost. The panels' own queries are
read over the counters of a real run, through the real Runner and metrics hooks."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from test_dashboards import ROOT, load, panels

from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.examples.scenarios import example_catalog, scenario_named
from agent.result import RunResult, StopReason
from telemetry.metrics import MetricsHooks

AGENT, SCENARIO, TASK_TYPE = "ci-fixer", "ci/approved-push", "fix_ci"


def asked_then_succeeded(tmp_path: Path, registry: CollectorRegistry) -> RunResult:
    hooks = MetricsHooks(registry)
    store = open_store(str(tmp_path / "runs.db"))
    catalog = example_catalog(tmp_path / "worlds")
    catalog.entries[AGENT] = replace(catalog.entries[AGENT], task_types=(TASK_TYPE,))
    runner = Runner(store, catalog, hooks=hooks)

    async def play() -> RunResult:
        task = scenario_named(SCENARIO).task
        first = await runner.start(AGENT, task, task_type=TASK_TYPE, state={"scenario": SCENARIO}, run_id="r")
        assert first.reason is StopReason.NEED_HELP
        return await runner.resume("r", approved=True)

    try:
        return asyncio.run(play())
    finally:
        catalog.close()
        store.close()


def counter(registry: CollectorRegistry, name: str, reason: str) -> float:
    """The sum over a metric's series of one stop reason (what `sum by (stop_reason)` reads)."""
    total = 0.0
    for family in registry.collect():
        for sample in family.samples:
            if sample.name == name and sample.labels.get("stop_reason") == reason:
                total += sample.value
    return total


def panel(title_pattern: str) -> dict[str, object]:
    found = [
        p
        for p in panels(load(ROOT / "dashboards" / "json" / "agent-stops.json"))
        if re.fullmatch(title_pattern, p["title"])
    ]
    assert len(found) == 1, [p["title"] for p in found]
    return found[0]


@pytest.mark.slow
def test_cost_and_tokens_panels_say_whether_they_show_runs_or_segments(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    result = asked_then_succeeded(tmp_path, registry)
    assert result.reason is StopReason.SUCCESS and result.cost_usd

    # The tokens panel: agent_run_tokens_sum / _count, for success: the whole run's tokens.
    tokens = counter(registry, "agent_run_tokens_sum", "success") / counter(
        registry, "agent_run_tokens_count", "success"
    )
    assert tokens == result.input_tokens + result.output_tokens
    # The cost panel: agent_cost_usd_total / agent_stops_total, for success: the last segment's.
    spent = counter(registry, "agent_cost_usd_total", "success")
    cost = spent / counter(registry, "agent_stops_total", "success")
    assert 0 < cost < result.cost_usd  # part of the run: what it spent after the approval

    cost_panel = panel(r"Cost per run.* by stop reason")
    assert "agent_cost_usd_total" in str(cost_panel["targets"])
    title, description = str(cost_panel["title"]), str(cost_panel["description"])
    assert "segment" in title, f"{title!r} shows what a segment spent, not what a run cost"
    assert "Tokens per run" in description  # where the whole run's use is

    tokens_panel = panel(r"Tokens per run by stop reason")
    assert "per run segment" not in str(tokens_panel["description"]), "the run's totals, not a segment's"
