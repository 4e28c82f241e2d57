"""Alertmanager sends EndstateWatchdog, the alert that fires always, to the `heartbeat` receiver
alone, again and again, and never to `page` or `ticket`: the heartbeat service pages when those
notifications stop. Before, there was no such alert, and one with any severity but `page` went to
`ticket`, where nothing notices its absence."""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prom_stack import (
    alertmanager,
    alertmanager_config,
    fast_rules,
    prometheus_config,
    require_binary,
    serving,
    wait_until,
    webhook_receiver,
)

ROOT = Path(__file__).resolve().parents[1]
ALERTMANAGER = ROOT / "alerts" / "alertmanager.yml"
RULES = [ROOT / "alerts" / "rules" / "recording.yml", ROOT / "alerts" / "rules" / "alerts.yml"]
WATCHDOG = "EndstateWatchdog"
MINUTES = {"s": 1 / 60, "m": 1, "h": 60}


def minutes(duration: str) -> float:
    return float(duration[:-1]) * MINUTES[duration[-1]]


def routes_to(*labels: str) -> str:
    """The receivers `amtool config routes test` picks for `labels` on the project's config."""
    argv = [require_binary("amtool"), "config", "routes", "test", f"--config.file={ALERTMANAGER}", *labels]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def test_amtool_checks_the_config_and_routes_the_watchdog_to_the_heartbeat_alone() -> None:
    done = subprocess.run([require_binary("amtool"), "check-config", str(ALERTMANAGER)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for severity in ("heartbeat", "page", "ticket"):  # whatever its severity became
        assert routes_to(f"alertname={WATCHDOG}", f"severity={severity}") == "heartbeat"
    assert routes_to("alertname=EndstateAgentDown", "severity=page", "job=j", "instance=i") == "page"


def heartbeat_route(config: dict[str, Any]) -> dict[str, Any]:
    [route] = [r for r in config["route"].get("routes", []) if r.get("receiver") == "heartbeat"]
    return route


def test_the_heartbeat_goes_first_alone_within_minutes_and_never_resolved() -> None:
    config = yaml.safe_load(ALERTMANAGER.read_text())
    routes = config["route"].get("routes", [])
    assert routes and routes[0].get("receiver") == "heartbeat", "before any route that could take it"
    route = heartbeat_route(config)
    assert route["matchers"] == [f'alertname="{WATCHDOG}"'] and not route.get("continue")
    assert route["group_by"] == ["alertname"], "its own group, never with a real page"
    assert minutes(route["group_interval"]) <= 5, "a heartbeat within minutes"
    # Alertmanager repeats at a group_interval tick once repeat_interval has passed since the last send:
    # equal, the last send is a moment too recent at every other tick, and the period doubles.
    assert minutes(route["repeat_interval"]) < minutes(route["group_interval"]), "repeated at every tick"
    [receiver] = [r for r in config["receivers"] if r["name"] == "heartbeat"]
    [hook] = receiver["webhook_configs"]
    assert hook["url"].endswith("/heartbeat")
    assert hook["send_resolved"] is False, "a resolved notice means it stopped: it is no heartbeat"
    assert WATCHDOG not in json.dumps(config.get("inhibit_rules", [])), "nothing may inhibit it"


def quick_heartbeat(config_text: str) -> str:
    """The config as alertmanager_config gives it, the heartbeat repeated every second, not minute."""
    config = yaml.safe_load(config_text)
    heartbeat_route(config)["repeat_interval"] = "1s"
    return yaml.safe_dump(config, sort_keys=False)


def post_page(am_url: str) -> None:
    """A real page beside the heartbeat, as Prometheus sends it: it must still reach /page."""
    labels = {"alertname": "EndstateAgentDown", "severity": "page", "job": "endstate-agent", "instance": "a"}
    body = json.dumps([{"labels": labels, "annotations": {"summary": "down"}}]).encode()
    request = urllib.request.Request(f"{am_url}/api/v2/alerts", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


@contextlib.contextmanager
def empty_prometheus(rules: list[Path], am_address: str, workdir: Path) -> Iterator[None]:
    """A real Prometheus with no target, the rules in `rules`, sending to `am_address`. It sends an
    alert again after a second, not a minute: its first send, before it has found Alertmanager, is
    lost, and the resend would come a minute later (so does a restarted Prometheus's heartbeat)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(prometheus_config([], rules, am_address))
    argv = [
        require_binary("prometheus"),
        f"--config.file={config}",
        f"--storage.tsdb.path={workdir / 'data'}",
        "--rules.alert.resend-delay=1s",
    ]
    with serving(argv, workdir, "prometheus"):
        yield


@pytest.mark.slow
def test_an_empty_prometheus_heartbeats_through_alertmanager_to_the_heartbeat_only(tmp_path: Path) -> None:
    """The project's rules in a Prometheus with no target at all, its alerts to a real Alertmanager
    with the project's routing: the watchdog arrives at /heartbeat again and again, alone, and at
    neither /page nor /ticket, while a page still arrives at /page."""
    rules = fast_rules(RULES, tmp_path / "rules")
    with webhook_receiver() as hook:
        am_config = quick_heartbeat(alertmanager_config(ALERTMANAGER, hook.url))
        with alertmanager(am_config, tmp_path / "am") as am:
            post_page(am.url)
            with empty_prometheus(rules, am.address, tmp_path / "prom"):
                beats = wait_until(
                    lambda: len(hook.alerts(alertname=WATCHDOG)) >= 3 and hook.alerts(alertname=WATCHDOG),
                    180,
                    f"three notifications of {WATCHDOG}",
                )
                wait_until(lambda: hook.alerts(alertname="EndstateAgentDown"), 60, "the page at /page")
    assert {path for path, _ in beats} == {"/heartbeat"}
    assert all(alert["status"] == "firing" for _, alert in beats)
    assert {path for path, _ in hook.alerts(alertname=WATCHDOG)} == {"/heartbeat"}
    assert {path for path, _ in hook.alerts(alertname="EndstateAgentDown")} == {"/page"}
    at_heartbeat = [alert for path, body in hook.posts() if path == "/heartbeat" for alert in body["alerts"]]
    assert {alert["labels"]["alertname"] for alert in at_heartbeat} == {WATCHDOG}
