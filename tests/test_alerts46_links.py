"""Every alert links its runbook and the "Agent stops" dashboard, filtered to the alert's agent and
task type where it has them: an alert paged with no link to look at. Both are built from bases set
once for a deployment (`python -m alerts.build --runbook-base URL --grafana-base URL`): Prometheus
expands no variables in rule files and Alertmanager none in its config."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prom_stack import require_binary
from test_alerts import ALERTS, RUNBOOK_BASE, unit_tests_of
from test_oncall43_review_links import build_rules, built_alerts

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"(?P<base>https?://[^\s?]+?)/d/(?P<uid>[\w-]+)/(?P<slug>[\w-]+)(?:\?(?P<query>.*))?")
RUN_LABELS = ("agent", "task_type")
GRAFANA_BASE = "https://grafana.example.com/tools/grafana"
# The committed base (alerts/runbooks.py): plainly a placeholder, as the runbook base.
GRAFANA_PLACEHOLDER = "https://grafana.example.invalid/set-with--grafana-base"


def dashboards() -> dict[str, dict[str, Any]]:
    """uid -> the generated dashboards Grafana is provisioned with (dashboards/json/)."""
    found = [json.loads(path.read_text()) for path in sorted((ROOT / "dashboards" / "json").glob("*.json"))]
    return {board["uid"]: board for board in found}


def labels_fired(name: str) -> set[str]:
    """The labels the alert carries when it fires, from its promtool cases."""
    return {
        label
        for group in unit_tests_of(name)
        for case in group["alert_rule_test"]
        if case["alertname"] == name
        for alert in case["exp_alerts"]
        for label in alert["exp_labels"]
    }


def filters(query: str | None) -> dict[str, str]:
    """A dashboard link's query: `var-agent={{ ... }}&var-task_type=...` -> {name: value}."""
    return dict(part.split("=", 1) for part in (query or "").split("&") if part)


@pytest.mark.parametrize("name", sorted(ALERTS))
def test_every_alert_links_its_runbook_and_the_dashboard_filtered_to_its_agent(name: str) -> None:
    notes = ALERTS[name]["annotations"]
    assert notes["runbook_url"] == f"{RUNBOOK_BASE}{name}.md"
    link = LINK.fullmatch(notes.get("dashboard_url", ""))
    assert link, f"{name}: no dashboard_url (<grafana base>/d/<uid>/<slug>?var-...)"
    assert link["base"] == GRAFANA_PLACEHOLDER
    board = dashboards().get(link["uid"])
    assert board, f"{name}: dashboard uid {link['uid']} is not in dashboards/json/ ({sorted(dashboards())})"
    assert link["slug"] == re.sub(r"\W+", "-", board["title"].lower())
    variables = {variable["name"] for variable in board["templating"]["list"]}
    carried = [label for label in RUN_LABELS if label in labels_fired(name)]
    assert filters(link["query"]) == {
        f"var-{label}": f"{{{{ $labels.{label} | urlquery }}}}" for label in carried
    }, f"{name} fires with {carried}: its link selects those"
    assert set(carried) <= variables


def test_a_grafana_base_lands_in_every_dashboard_link_and_nowhere_else(tmp_path: Path) -> None:
    out = tmp_path / "rules"
    done = build_rules("--grafana-base", GRAFANA_BASE + "/", "--out", str(out))
    assert done.returncode == 0, done.stderr
    written = built_alerts(out)
    assert written.keys() == ALERTS.keys()
    for name, rule in written.items():
        notes, committed = rule["annotations"], ALERTS[name]["annotations"]
        assert notes["dashboard_url"] == committed["dashboard_url"].replace(GRAFANA_PLACEHOLDER, GRAFANA_BASE)
        assert {k: v for k, v in notes.items() if k != "dashboard_url"} == {
            k: v for k, v in committed.items() if k != "dashboard_url"
        }
        assert rule["expr"] == ALERTS[name]["expr"]
    argv = [require_binary("promtool"), "check", "rules", *map(str, sorted(out.glob("*.yml")))]
    check = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    assert build_rules("--check").returncode == 0, "the committed rules were changed"
    assert build_rules("--check", "--grafana-base", GRAFANA_BASE).returncode == 1


@pytest.mark.parametrize("base", ["grafana.example.com", "https://grafana.example.com/?orgId=1", ""])
def test_a_grafana_base_that_cannot_make_links_is_refused(tmp_path: Path, base: str) -> None:
    done = build_rules("--grafana-base", base, "--out", str(tmp_path / "rules"))
    assert done.returncode == 2
    assert "--grafana-base" in done.stderr and "such as https://grafana.example.com" in done.stderr
    assert not (tmp_path / "rules").exists()


@pytest.mark.parametrize("tests", ["help_request_stale.yml", "collector_spans_lost.yml"])
def test_promtool_renders_the_dashboard_link_under_the_base(tmp_path: Path, tests: str) -> None:
    """The first case of an alert's own promtool tests, on rules built with a Grafana base: the
    link the alert carries to Alertmanager is a whole URL, its agent and task type filled in."""
    out = tmp_path / "rules"
    assert build_rules("--grafana-base", GRAFANA_BASE, "--out", str(out)).returncode == 0
    suite = yaml.safe_load((ROOT / "alerts" / "tests" / tests).read_text())
    suite["rule_files"] = [str(out / "recording.yml"), str(out / "alerts.yml")]
    suite["tests"] = suite["tests"][:1]
    fired = [a for case in suite["tests"][0]["alert_rule_test"] for a in case["exp_alerts"]]
    assert fired
    for alert in fired:
        link = alert["exp_annotations"]["dashboard_url"]
        assert link.startswith(GRAFANA_PLACEHOLDER + "/d/")
        alert["exp_annotations"]["dashboard_url"] = link.replace(GRAFANA_PLACEHOLDER, GRAFANA_BASE)
        if "agent" in alert["exp_labels"]:
            assert link.endswith(f"?var-agent={alert['exp_labels']['agent']}&var-task_type=fix_test")
    path = tmp_path / tests
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    argv = ["nice", "-n", "10", require_binary("promtool"), "test", "rules", str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
