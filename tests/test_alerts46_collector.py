"""Spans lost between the OpenTelemetry Collector and Tempo are alerted: the collector serves the
counters under the names the rules read, Prometheus scrapes them, and an alert with a runbook and
promtool cases reads them (alerts/tests/collector_spans_lost.yml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from test_alerts import ALERTS, evaluations, unit_tests_of
from test_compose import scraped
from test_dashboards import metric_names, rules

from telemetry import names

ROOT = Path(__file__).resolve().parents[1]
ALERT = "EndstateCollectorSpansLost"


def collector_reader() -> dict[str, Any]:
    """The Prometheus reader of the collector's own metrics in telemetry/collector.yaml."""
    config = yaml.safe_load((ROOT / "telemetry" / "collector.yaml").read_text())
    metrics = config["service"]["telemetry"]["metrics"]
    assert metrics.get("level", "normal") in {"basic", "normal", "detailed"}, (
        "the exporter counters need level basic+"
    )
    (reader,) = metrics["readers"]
    exporter: dict[str, Any] = reader["pull"]["exporter"]["prometheus"]
    return exporter


def test_the_collector_serves_its_counters_with_the_suffix_the_names_carry() -> None:
    """A reader configured in collector.yaml starts from no options: 0.120's Prometheus exporter then
    adds `_total` to counters, where the collector's default reader does not. The option is spelled
    out, and the names in telemetry/names.py follow it."""
    reader = collector_reader()
    assert "without_type_suffix" in reader, "say whether counters keep `_total` (without_type_suffix)"
    suffix = "" if reader["without_type_suffix"] else "_total"
    for name in (
        names.COLLECTOR_SEND_FAILED_SPANS,
        names.COLLECTOR_ENQUEUE_FAILED_SPANS,
        names.COLLECTOR_SENT_SPANS,
    ):
        assert name.startswith("otelcol_exporter_") and name.endswith(f"_spans{suffix}"), name
    assert reader.get("without_units") is True  # the span counters' unit ({spans}) adds nothing either way


def test_prometheus_scrapes_the_collectors_metrics_port() -> None:
    reader = collector_reader()
    config = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert "otel-collector" in compose["services"]
    assert f"otel-collector:{reader['port']}" in scraped(config)


def test_an_alert_reads_the_collectors_lost_spans() -> None:
    """The spans the collector gave up on and those its full queue refused, both: the agents'
    own counters show neither (their exports succeeded)."""
    read = metric_names(ALERTS[ALERT]["expr"])
    assert {names.COLLECTOR_SEND_FAILED_SPANS, names.COLLECTOR_ENQUEUE_FAILED_SPANS} <= read
    assert ALERTS[ALERT]["labels"]["severity"] == "ticket"
    assert (ROOT / "docs" / "runbooks" / f"{ALERT}.md").is_file()
    fires = [g for g in unit_tests_of(ALERT) if g["name"].startswith("fires")]
    assert len(fires) >= 2 and all(any(evaluations(g, ALERT)) for g in fires)
    series = " ".join(s["series"] for g in fires for s in g["input_series"])
    assert names.COLLECTOR_SEND_FAILED_SPANS in series and names.COLLECTOR_ENQUEUE_FAILED_SPANS in series


def test_every_collector_series_a_rule_reads_is_in_the_names_module() -> None:
    read = {name for rule in rules() for name in metric_names(rule["expr"]) if name.startswith("otelcol_")}
    assert read and read <= names.COLLECTOR_METRICS
