"""The "Endstate alerts" annotation of the Agent stops dashboard marks the alerts that fire, not the
watchdog, which always fires: run in a real Prometheus whose rules have the watchdog firing, the
annotation's query finds nothing. Before, it found the watchdog at every moment, and every panel's
whole time range was shaded as alerting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prom_stack import prometheus, prometheus_config, wait_until

ROOT = Path(__file__).resolve().parents[1]
RULES = [ROOT / "alerts" / "rules" / "recording.yml", ROOT / "alerts" / "rules" / "alerts.yml"]
DASHBOARD = ROOT / "dashboards" / "json" / "agent-stops.json"


def alerts_annotation() -> str:
    notes = json.loads(DASHBOARD.read_text())["annotations"]["list"]
    [note] = [n for n in notes if n["name"] == "Endstate alerts"]
    return str(note["expr"])


@pytest.mark.slow
def test_the_alerts_annotation_leaves_out_the_watchdog_that_always_fires(tmp_path: Path) -> None:
    with prometheus(prometheus_config([], RULES), tmp_path) as prom:
        wait_until(
            lambda: prom.query('ALERTS{alertname="EndstateWatchdog", alertstate="firing"}'),
            120,
            "the watchdog firing in a Prometheus with no target",
        )
        assert prom.query(alerts_annotation()) == []
        assert prom.query(alerts_annotation().replace(', alertname!="EndstateWatchdog"', "")), (
            "the same query without the exclusion finds the watchdog: the check above can fail"
        )
