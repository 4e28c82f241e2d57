"""tele42: the runbook of EndstateAgentDown sends the person paged to the panel "Agent processes
scraped (10m, as alerted)" first. Since the alert pages for a job whose rollout's replicas never come
up, the panel must show those replicas: before, it showed only targets that had served Endstate's
metrics themselves, so a replica that crashed at start (the one paging) was missing from it."""

from __future__ import annotations

import json
from pathlib import Path

from test_probe24c_fleet import promtool, value

ROOT = Path(__file__).resolve().parents[1]
TITLE = "Agent processes scraped (10m, as alerted)"


def scraped_expr() -> str:
    dashboard = json.loads((ROOT / "dashboards" / "json" / "agent-stops.json").read_text())
    panels = [p for row in dashboard["panels"] for p in [row, *row.get("panels", [])]]
    (panel,) = [p for p in panels if p.get("title") == TITLE]
    (target,) = panel["targets"]
    return str(target["expr"])


def test_a_rollouts_replica_that_never_comes_up_is_on_the_panel_and_other_jobs_are_not(
    tmp_path: Path,
) -> None:
    old, new = (
        'job="endstate-worker",instance="10.0.0.5:8000"',
        'job="endstate-worker",instance="10.0.0.7:8000"',
    )
    series = [
        {"series": f"up{{{old}}}", "values": "1x60 stale"},
        {"series": f'agent_telemetry_exports_total{{{old},signal="traces"}}', "values": "0+1x60 stale"},
        {"series": f"up{{{new}}}", "values": "_x61 0x60"},  # crashes at start: never serves /metrics
        {"series": 'up{job="tempo",instance="tempo:3200"}', "values": "0x120"},  # no Endstate process
    ]
    expr = scraped_expr()
    promtool(
        tmp_path,
        [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [value(expr, "80m", 0, "{" + new + "}")],
            }
        ],
    )
