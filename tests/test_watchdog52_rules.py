"""EndstateWatchdog, the dead man's switch: an alert that fires always, so that a heartbeat service
pages when its notifications stop. Endstate had none: with Prometheus, its rule evaluation or
Alertmanager dead, nothing paged, and on-call believed all was quiet.

It must fire with no Endstate series at all (an empty Prometheus, a quiet night), from the first
evaluation, and page nobody; every other alert stays quiet there and keeps its own contract."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml
from prom_stack import require_binary

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "alerts" / "rules" / "alerts.yml"
CASES = ROOT / "alerts" / "tests" / "watchdog.yml"
WATCHDOG = "EndstateWatchdog"
# How tests/test_alerts.py tells an alert with a traffic guard.
GUARD = re.compile(r"\b(and|unless)\b|>=")


def groups() -> list[dict[str, Any]]:
    return yaml.safe_load(RULES.read_text())["groups"]


def alerts() -> dict[str, dict[str, Any]]:
    return {rule["alert"]: rule for group in groups() for rule in group["rules"] if "alert" in rule}


def test_the_watchdog_reads_no_series_waits_for_nothing_and_pages_nobody() -> None:
    rule = alerts().get(WATCHDOG)
    assert rule, f"no {WATCHDOG} in {RULES.name}: nothing says the alerting pipeline is alive"
    assert rule["expr"].strip() == "vector(1)"
    assert "for" not in rule, "a for: only delays the first heartbeat after a restart"
    assert rule["labels"] == {"severity": "heartbeat"}
    notes = rule["annotations"]
    assert notes["summary"].strip() and "heartbeat" in notes["description"]
    assert notes["runbook_url"].endswith(f"/{WATCHDOG}.md")
    [group] = [g for g in groups() if any(r.get("alert") == WATCHDOG for r in g["rules"])]
    assert [r.get("alert") for r in group["rules"]] == [WATCHDOG], "its group holds it alone"


def test_the_watchdog_is_the_one_alert_without_a_traffic_guard() -> None:
    """Its exception in tests/test_alerts.py is no loophole: every other alert has a guard."""
    assert [name for name, rule in alerts().items() if not GUARD.search(rule["expr"])] == [WATCHDOG]


def expected(case_file: dict[str, Any]) -> dict[str, dict[str, bool]]:
    """eval_time -> alertname -> expected to fire, over the case file's groups with no input."""
    found: dict[str, dict[str, bool]] = {}
    for group in case_file["tests"]:
        assert not group.get("input_series"), f"{group['name']}: has series, not an empty Prometheus"
        for case in group["alert_rule_test"]:
            found.setdefault(case["eval_time"], {})[case["alertname"]] = bool(case["exp_alerts"])
    return found


def test_on_an_empty_prometheus_the_watchdog_fires_and_every_other_alert_is_quiet() -> None:
    assert CASES.is_file(), f"no promtool cases for {WATCHDOG} ({CASES.relative_to(ROOT)})"
    checks = expected(yaml.safe_load(CASES.read_text()))
    assert {"0m", "1h", "1d"} <= checks.keys(), "from the first evaluation, through an hour and a day"
    for when, fires in checks.items():
        only_it = {name: name == WATCHDOG for name in alerts()}
        assert fires == only_it, f"at {when}: every alert checked, the watchdog alone firing"
    argv = [require_binary("promtool"), "test", "rules", str(CASES)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
