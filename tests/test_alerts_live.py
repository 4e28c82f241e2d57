"""The limit-share alert, end to end with real processes: limit stops from a real
`endstate demo`, scraped and evaluated by a real Prometheus (the project's rules
with windows and `for:` cut to seconds), routed by a real Alertmanager (the
project's routing tree), delivered to a webhook."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from prom_stack import (
    agent_demo,
    alertmanager,
    alertmanager_config,
    fast_rules,
    http_get,
    prometheus,
    prometheus_config,
    require_demo_flags,
    wait_until,
    webhook_receiver,
)
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
ALERTMANAGER = ROOT / "alerts" / "alertmanager.yml"
ALERT = "EndstateLimitStopShareHigh"
# The demo scenarios that end at a limit (`endstate demo --list`).
LIMIT_SCENARIOS = ["csv/ok-every-time", "research/one-more-source"]
# Windows short enough for a test; thresholds (20%, 20 runs per window) stay.
WINDOWS = {"1h": "1m", "30m": "1m", "15m": "1m"}
# The rules as a deployment builds them: runbook links under its own base, inbox links under the
# address its people open the service at.
RUNBOOK_BASE = "https://wiki.example.com/sre/runbooks/"
INBOX_BASE = "https://agents.example.com"
GRAFANA_BASE = "https://grafana.example.com"


def deployed_rules(out: Path) -> list[Path]:
    """alerts/rules/ written by `python -m alerts.build` with RUNBOOK_BASE, GRAFANA_BASE and INBOX_BASE,
    into `out`."""
    argv = [sys.executable, "-m", "alerts.build", "--runbook-base", RUNBOOK_BASE, "--out", str(out)]
    argv += ["--inbox-base", INBOX_BASE, "--grafana-base", GRAFANA_BASE]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return sorted(out.glob("*.yml"))


@pytest.mark.slow
def test_limit_share_alert_reaches_the_webhook(tmp_path: Path) -> None:
    require_demo_flags("--metrics-port", "--hold", "--repeat")
    rules = fast_rules(deployed_rules(tmp_path / "deployed"), tmp_path / "rules", WINDOWS, hold="2s")
    with webhook_receiver() as hook:
        am_config = alertmanager_config(ALERTMANAGER, hook.url)
        with (
            alertmanager(am_config, tmp_path / "alertmanager") as am,
            agent_demo(["--repeat", "200", *LIMIT_SCENARIOS], tmp_path / "agent") as demo,
            prometheus(prometheus_config([demo.target], rules, am.address, interval="1s"), tmp_path / "prom"),
        ):
            # 20 limit stops in a minute first: a demo run takes seconds of CPU, far more at load 16.
            received = wait_until(lambda: hook.alerts(alertname=ALERT), 300, f"{ALERT} at the webhook")
    path, alert = received[0]
    assert path == "/page"
    assert alert["status"] == "firing"
    labels, notes = alert["labels"], alert["annotations"]
    assert labels["severity"] == "page" and labels["stop_reason"] == "limit"
    assert labels["agent"] and labels["task_type"]
    assert notes["runbook_url"] == f"{RUNBOOK_BASE}{ALERT}.md"
    assert notes["summary"] == f"{labels['agent']}/{labels['task_type']}: 100% of runs stopped at a limit"
    assert "budget ran out" in notes["description"]
    query = urllib.parse.urlencode({"agent": labels["agent"], "task_type": labels["task_type"]})
    assert f" {INBOX_BASE}/inbox/review?{query}&reason=limit " in notes["description"]
    selected = urllib.parse.urlencode({"var-agent": labels["agent"], "var-task_type": labels["task_type"]})
    assert notes["dashboard_url"] == f"{GRAFANA_BASE}/d/endstate-agent-stops/agent-stops?{selected}"


def post_alerts(am_url: str, alerts: list[dict[str, dict[str, str]]]) -> None:
    """Alerts as Prometheus sends them, straight to Alertmanager's API."""
    body = json.dumps(alerts).encode()
    request = urllib.request.Request(f"{am_url}/api/v2/alerts", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def alert_states(am_url: str) -> dict[str, float]:
    """Alertmanager's alerts by state (its `alertmanager_alerts` gauge). An alert is `unprocessed`
    until its group is flushed, then `suppressed` when the flush held it back (an inhibition), else
    `active`. (A GET of /api/v2/alerts would judge the alerts too; these tests make none.)"""
    status, body = http_get(f"{am_url}/metrics")
    assert status == 200, f"Alertmanager's /metrics answered {status}"
    [family] = [f for f in text_string_to_metric_families(body.decode()) if f.name == "alertmanager_alerts"]
    return {sample.labels["state"]: sample.value for sample in family.samples}


def share_alert(
    name: str, severity: str, reason: str, task_type: str, **more: str
) -> dict[str, dict[str, str]]:
    labels = {"alertname": name, "severity": severity, "agent": "researcher", "task_type": task_type,
              "stop_reason": reason, **more}  # fmt: skip
    return {"labels": labels, "annotations": {"summary": f"{name} {task_type}"}}


def inhibited(am_url: str, **labels: str) -> bool:
    """Whether Alertmanager, asked now, holds the alert with `labels` back by an inhibition (a GET of
    /api/v2/alerts judges every alert it holds: ask before the alerts under test are posted)."""
    matchers = urllib.parse.urlencode([("filter", f'{k}="{v}"') for k, v in labels.items()])
    status, body = http_get(f"{am_url}/api/v2/alerts?{matchers}")
    assert status == 200, f"Alertmanager's /api/v2/alerts answered {status}"
    return any(alert["status"]["inhibitedBy"] for alert in json.loads(body))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("reason", "page", "ticket"),
    [("limit", "EndstateLimitStopShareHigh", "EndstateLimitStopShareRising"),
     ("error", "EndstateErrorStopShareHigh", "EndstateErrorStopShareRising")],
)  # fmt: skip
def test_a_page_holds_back_the_rising_ticket_of_the_same_share(
    tmp_path: Path, reason: str, page: str, ticket: str
) -> None:
    """A share past its page threshold is rising too: on-call gets the page, not a ticket as well.
    The ticket of another task type, sent with the held one, still arrives.

    Alertmanager's inhibitor reads each posted alert on a goroutine of its own, and the ticket's group
    is flushed (its inhibition judged) 1 s after it came: the page goes first, and the tickets once a
    probe ticket (same agent and task type) shows the inhibitor holds the page, so the flush cannot
    come first however loaded the machine."""
    workdir = tmp_path / "alertmanager"
    with webhook_receiver() as hook, alertmanager(alertmanager_config(ALERTMANAGER, hook.url), workdir) as am:
        probe = share_alert(ticket, "ticket", reason, "fix_test", probe="inhibitor")
        post_alerts(am.url, [share_alert(page, "page", reason, "fix_test"), probe])
        wait_until(lambda: inhibited(am.url, probe="inhibitor"), 60, "the page to hold back a probe ticket")
        post_alerts(am.url, [share_alert(ticket, "ticket", reason, "fix_test"),
                             share_alert(ticket, "ticket", reason, "summarize")])  # fmt: skip
        wait_until(lambda: hook.alerts(alertname=page), 60, f"{page} at the webhook")
        wait_until(lambda: hook.alerts(alertname=ticket, task_type="summarize"), 60, "the other ticket")
        wait_until(lambda: alert_states(am.url)["unprocessed"] == 0, 60, "the fix_test ticket's group flush")
        states, tickets = alert_states(am.url), hook.alerts(alertname=ticket)
    assert states == {"active": 2, "suppressed": 2, "unprocessed": 0}  # the page held its tickets back
    real = [(path, alert["labels"]["task_type"]) for path, alert in tickets if "probe" not in alert["labels"]]
    assert real == [("/ticket", "summarize")]
    assert {path for path, _ in hook.alerts(alertname=page)} == {"/page"}
