"""The stack's stand-in pager (deploy/alert-log/alert_log.py) takes the heartbeat at /heartbeat and
prints it as one line: a heartbeat is for the heartbeat service, not a person, so it carries no
description or links. Before, the stack's Alertmanager had no heartbeat receiver and the watchdog
went to /ticket, printed as a ticket."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
import yaml
from prom_stack import alertmanager, alertmanager_config, wait_until
from test_oncall52_pager import alert_log, pager

ROOT = Path(__file__).resolve().parents[1]
ALERTMANAGER = ROOT / "alerts" / "alertmanager.yml"
RULES = ROOT / "alerts" / "rules" / "alerts.yml"
WATCHDOG = "EndstateWatchdog"
SUMMARY = "The alerting pipeline is alive: Prometheus evaluates the Endstate rules and Alertmanager delivers"


def watchdog_as_prometheus_sends_it() -> dict[str, dict[str, str]]:
    """The rule's labels and annotations, as Prometheus posts them (or the shape it would have)."""
    rules = [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    rule = next((r for r in rules if r.get("alert") == WATCHDOG), None) or {
        "labels": {"severity": "heartbeat"}, "annotations": {"summary": SUMMARY}
    }  # fmt: skip
    notes = {key: " ".join(value.split()) for key, value in rule["annotations"].items()}
    return {"labels": {"alertname": WATCHDOG, **rule["labels"]}, "annotations": notes}


def test_a_heartbeat_prints_its_first_line_alone() -> None:
    alert = {"status": "firing", **watchdog_as_prometheus_sends_it()}
    alert["annotations"] |= {"description": "Fires always.", "runbook_url": "https://x.invalid/r.md"}
    lines = alert_log().alert_lines("/heartbeat", alert)
    assert lines == [f"/heartbeat firing {WATCHDOG} {alert['labels']} {alert['annotations']['summary']}"]


@pytest.mark.slow
def test_the_watchdog_through_the_stacks_alertmanager_is_a_heartbeat_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said: list[str] = []

    def printed() -> str:
        said.append(capsys.readouterr().out)
        return "".join(said) if f"firing {WATCHDOG}" in "".join(said) else ""

    with pager() as url, alertmanager(alertmanager_config(ALERTMANAGER, url), tmp_path / "am") as am:
        body = json.dumps([watchdog_as_prometheus_sends_it()]).encode()
        headers = {"Content-Type": "application/json"}
        request = urllib.request.Request(f"{am.url}/api/v2/alerts", body, headers)
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        out = wait_until(printed, 60, f"{WATCHDOG} at the alert-log")
    lines = out.strip().splitlines()  # one per heartbeat, nothing under them
    assert lines and all(
        line.startswith(f"/heartbeat firing {WATCHDOG} ") and line.endswith(f" {SUMMARY}") for line in lines
    ), lines
