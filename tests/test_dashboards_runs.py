"""The dashboard's shares are shares of runs, as the alerts count them, and its review panel counts
the labels people give: proved with real runs (one that stops at a limit, one that asks a person,
is approved and succeeds) through a real Runner and the real metrics hooks, scraped by a real
Prometheus that evaluates the project's rules, and every such panel query read back from it."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from prom_stack import Prometheus, fast_rules, prometheus, prometheus_config, wait_until
from prometheus_client import CollectorRegistry
from test_dashboards import DASHBOARDS, ROOT, RULE_FILES, load, panel_exprs, panels, substitute

from agent.durable import review
from agent.durable.runner import Runner
from agent.durable.store import RunStore, open_store
from agent.examples.scenarios import example_catalog, scenario_named
from agent.result import StopReason
from telemetry.metrics import MetricsHooks, serve_metrics

TASK_TYPE = "shared-queue"  # both runs' task type, so that the shares of one task type hold both
AGENTS = {"cut-off": ("csv-cleaner", "csv/ok-every-time"), "asked": ("ci-fixer", "ci/approved-push")}
LABELS_PANEL = "Review labels given"


def share_panel_exprs() -> dict[str, str]:
    """The panels that show how runs end as shares of each stop reason: (title, PromQL)."""
    found = {}
    for panel in panels(load(ROOT / "dashboards" / "json" / "agent-stops.json")):
        by_reason = [t["expr"] for t in panel["targets"] if t.get("legendFormat") == "{{stop_reason}}"]
        columns = [x["options"].get("columnField") for x in panel.get("transformations", [])]
        share = panel["fieldConfig"]["defaults"].get("unit") == "percentunit"
        if share and (by_reason or "stop_reason" in columns):
            (found[panel["title"]],) = [t["expr"] for t in panel["targets"]]
    assert len(found) == 2, found  # the table of task types, and the panel repeated per task type
    return found


def test_no_share_panel_divides_segment_stops() -> None:
    """agent_stops_total counts run segments (a suspension, a cancelled segment later resumed): a
    share drawn from it is no share of runs. Every share of stop reasons reads the recorded counts
    of runs that ended, the ones the alerts read."""
    shares = 0
    for path in DASHBOARDS:
        for panel in panels(load(path)):
            if panel["fieldConfig"]["defaults"].get("unit") != "percentunit":
                continue
            for target in panel["targets"]:
                shares += "stop_reason" in target["expr"]
                assert "agent_stops_total" not in target["expr"], (panel["title"], target["expr"])
    assert shares > 0, "no share panel of stop reasons found: the check above checked nothing"


def play(runner: Runner) -> None:
    """The two runs, and the approval the second one asks for."""

    async def both() -> None:
        for run_id, (agent, scenario) in AGENTS.items():
            state = {"scenario": scenario}
            task = scenario_named(scenario).task
            await runner.start(agent, task, task_type=TASK_TYPE, state=state, run_id=run_id)
        assert (await runner.resume("asked", approved=True)).reason is StopReason.SUCCESS

    asyncio.run(both())


def value(prom: Prometheus, expr: str) -> float:
    found = prom.query(expr)
    return float(found[0]["value"][1]) if found else float("nan")


def by_label(prom: Prometheus, expr: str, *labels: str) -> dict[tuple[str, ...], float]:
    found: list[dict[str, Any]] = prom.query(expr)
    return {tuple(s["metric"].get(name, "") for name in labels): float(s["value"][1]) for s in found}


def shares_of_runs(prom: Prometheus, expr: str) -> dict[str, float]:
    """A share panel's values for the shared task type, by stop reason."""
    found = by_label(prom, expr, "task_type", "stop_reason")
    return {reason: share for (task, reason), share in found.items() if task in ("", TASK_TYPE)}


def halves(shares: dict[str, float]) -> bool:
    """Half the runs stopped at a limit, half succeeded, and no other reason has a share."""
    rest = {reason: share for reason, share in shares.items() if reason not in ("limit", "success")}
    return shares.get("limit") == shares.get("success") == 0.5 and set(rest.values()) <= {0.0}


def settled(prom: Prometheus, expr: str) -> dict[str, float]:
    """The panel's shares once they are halves, or the last reading after 60 s. A panel divides two
    recorded series that one rule group writes one after the other, each extrapolated to its
    evaluation time: a query between the two reads them from different evaluations."""
    deadline = time.monotonic() + 60
    while not halves(found := shares_of_runs(prom, expr)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


@pytest.mark.slow
def test_a_run_that_asks_a_person_and_succeeds_is_one_run_in_the_shares(tmp_path: Path) -> None:
    """One run stops at a limit; one suspends for a person, is approved and succeeds. Half the runs
    stopped at a limit: a share of segments said a third (and a third need_help)."""
    registry = CollectorRegistry()
    hooks = MetricsHooks(registry)
    hooks.prepare_runs([(agent, TASK_TYPE) for agent, _ in AGENTS.values()])  # at zero before the runs
    server = serve_metrics(0, registry)
    store: RunStore = open_store(str(tmp_path / "runs.db"))
    catalog = example_catalog(tmp_path / "worlds")
    for agent, _ in AGENTS.values():  # the seed agents, allowed one shared task type
        catalog.entries[agent] = replace(catalog.entries[agent], task_types=(TASK_TYPE,))
    try:
        config = prometheus_config([f"127.0.0.1:{server.port}"], fast_rules(RULE_FILES, tmp_path / "rules"))
        with prometheus(config, tmp_path / "prom") as prom:
            scoped = f'{{task_type="{TASK_TYPE}"}}'
            wait_until(lambda: prom.query(f"agent_stops_total{scoped}"), 60, "the stop series at zero")
            play(Runner(store, catalog, hooks=hooks))
            wait_until(lambda: value(prom, f"sum(agent_stops_total{scoped})") == 3, 60, "the three stops")
            for runs in ("increase1h", "increase6h"):  # both rule groups evaluated after the last scrape
                ended = f"agent_task_type_stop_reason:agent_stops_final:{runs}{scoped} > 0"
                wait_until(
                    lambda q=ended: {("limit",), ("success",)} <= by_label(prom, q, "stop_reason").keys(),
                    90,
                    f"both runs ended, in {runs}",
                )
            for title, expr in share_panel_exprs().items():
                shares = settled(prom, substitute(expr))
                assert "need_help" not in shares, (title, shares)
                assert (shares.pop("limit"), shares.pop("success")) == pytest.approx((0.5, 0.5)), title
                assert set(shares.values()) == {0.0}, (title, shares)
            labels = count_labels(prom, store, hooks)
    finally:
        catalog.close()
        store.close()
        server.close()
    assert labels[(TASK_TYPE, "limit_too_low")] >= 1 and labels[(TASK_TYPE, "fine")] >= 1, labels


def count_labels(prom: Prometheus, store: RunStore, hooks: MetricsHooks) -> dict[tuple[str, ...], float]:
    """Label both runs, counted by the service's upkeep: the review panel's counts once Prometheus
    saw them. Each label's series is there at zero from the agent's first run, so a first label is
    an increase (a series born at 1 would show none)."""
    upkeep = review.Upkeep(store, counter=hooks)
    zero = f'agent_review_labels_total{{task_type="{TASK_TYPE}",label="fine"}}'
    wait_until(lambda: value(prom, zero) == 0, 60, "the label series scraped at zero")
    review.label(store, "cut-off", "limit_too_low", by="ana")
    review.label(store, "asked", "fine", by="ana")
    upkeep.once()
    (expr,) = [expr for where, expr in panel_exprs() if where.endswith(f": {LABELS_PANEL} / A")]
    wanted = {(TASK_TYPE, "limit_too_low"), (TASK_TYPE, "fine")}

    def counted() -> bool:
        shown = by_label(prom, substitute(expr), "task_type", "label")
        return all(shown.get(key, 0) >= 1 for key in wanted)

    wait_until(counted, 60, "the first labels on the review panel")
    return by_label(prom, substitute(expr), "task_type", "label")
