"""The "Endstate alerts" annotation of the Agent stops dashboard follows the agent and task type
variables: opened filtered to one agent (as every alert's `dashboard_url` opens it), it marks that
agent's alerts and the alerts of no agent (a process down), not another agent's. Before, it marked
every Endstate alert of every agent on every panel, whatever was selected.

The annotation's query runs in Prometheus's own rule engine (`promtool test rules`, whose `ALERTS`
series are the ones a real Prometheus writes), with the variables filled in as Grafana fills a
Prometheus query's regex variables: one value regex-escaped, several as `(a|b)`, All as `.*`."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from prom_stack import require_binary

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "dashboards" / "json" / "agent-stops.json"

# Alerts firing in the test's Prometheus: one per (agent, task type), and one of a process.
SHARE = "EndstateLimitStopShareHigh"
DOWN = "EndstateAgentDown"
PAIRS = [("billing.bot", "refund"), ("billing.bot", "invoice"), ("billingXbot", "refund")]
RULES = {
    "groups": [
        {
            "name": "fixture",
            "rules": [
                {"alert": SHARE, "expr": "share > 0", "labels": {"severity": "page"}},
                {"alert": DOWN, "expr": "down > 0", "labels": {"severity": "page"}},
            ],
        }
    ]
}


def annotation_expr() -> str:
    notes = json.loads(DASHBOARD.read_text())["annotations"]["list"]
    [note] = [n for n in notes if n["name"] == "Endstate alerts"]
    return str(note["expr"])


def grafana_value(selected: list[str] | None) -> str:
    """A multi-value variable as Grafana writes it into a Prometheus query (None: All)."""
    if selected is None:
        return ".*"  # the variables' allValue, left unescaped
    escaped = [re.sub(r"([\\^$*+?.()|{}\[\]])", r"\\\1", value) for value in selected]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def filled(expr: str, agent: list[str] | None, task_type: list[str] | None) -> str:
    # Inside a PromQL string a backslash is written twice.
    def value(selected: list[str] | None) -> str:
        return grafana_value(selected).replace("\\", "\\\\")

    return expr.replace("$task_type", value(task_type)).replace("$agent", value(agent))


def firing(alert: str, labels: str) -> dict[str, object]:
    """A sample of `ALERTS` promtool expects: `alert` firing with `labels`."""
    series = f'ALERTS{{alertname="{alert}",alertstate="firing",severity="page",{labels}}}'
    return {"labels": series, "value": 1}


def share_alert(agent: str, task_type: str) -> dict[str, object]:
    return firing(SHARE, f'agent="{agent}",task_type="{task_type}"')


DOWN_ALERT = firing(DOWN, 'job="j",instance="i"')


def marked(tmp_path: Path, expr: str, expected: list[dict[str, object]]) -> subprocess.CompletedProcess[str]:
    """promtool's verdict on `expr` returning exactly `expected` while the fixture's alerts fire."""
    series = [{"series": f'share{{agent="{a}",task_type="{t}"}}', "values": "1x10"} for a, t in PAIRS]
    series.append({"series": 'down{job="j",instance="i"}', "values": "1x10"})
    test = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [{"expr": expr, "eval_time": "5m", "exp_samples": expected}],
            }
        ],
    }
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(RULES))
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    argv = [require_binary("promtool"), "test", "rules", "test.yml"]
    return subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=300)


CASES = {
    "one agent": (["billing.bot"], None, [("billing.bot", "refund"), ("billing.bot", "invoice")]),
    "one agent, one task type": (["billing.bot"], ["refund"], [("billing.bot", "refund")]),
    "two agents, one task type": (["billing.bot", "billingXbot"], ["refund"],
                                  [("billing.bot", "refund"), ("billingXbot", "refund")]),
    "all": (None, None, PAIRS),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_the_alerts_annotation_marks_the_selected_agents_alerts_and_those_of_no_agent(
    case: str, tmp_path: Path
) -> None:
    agent, task_type, shown = CASES[case]
    expected = [share_alert(a, t) for a, t in shown] + [DOWN_ALERT]
    done = marked(tmp_path, filled(annotation_expr(), agent, task_type), expected)
    assert done.returncode == 0, done.stdout + done.stderr
