"""Every Endstate process of the compose stack waits for Prometheus's first read of its /metrics
before it takes on runs, for as long as Prometheus takes to find it and scrape it.

alerts/README.md ("Fleets"): a process that recovers or polls for runs before its first scrape
has its counters read above zero first, so increase() never counts those runs, and a deploy's
resumed runs dilute every share for an hour; "set --first-scrape-wait on every replica". The agent
service waited 30 s; the Temporal workers, found by DNS every 30 s and scraped every 15 s, waited
not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_compose import compose, metrics_port, seconds

from agent.cli.main import build_parser
from agent.service.server import ENV_FIRST_SCRAPE_WAIT

ROOT = Path(__file__).resolve().parents[1]
PROMETHEUS = ROOT / "deploy" / "prometheus" / "prometheus.yml"
DNS_REFRESH_DEFAULT = "30s"  # Prometheus's dns_sd_configs refresh_interval when none is given


@pytest.fixture(scope="module")
def stack() -> dict[str, Any]:
    """The stack as docker-compose resolves it (every profile's services)."""
    done = compose()
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def first_read(config: dict[str, Any], host: str, port: int) -> float:
    """The most seconds Prometheus takes, after a process at host:port starts, to scrape it once: a
    scrape interval, after the DNS refresh that finds it when the job discovers it by name."""
    interval = seconds(config["global"]["scrape_interval"])
    for job in config["scrape_configs"]:
        every = seconds(job.get("scrape_interval", interval))
        for static in job.get("static_configs", []):
            if f"{host}:{port}" in static["targets"]:
                return every
        for dns in job.get("dns_sd_configs", []):
            if host in dns["names"] and dns.get("port") == port:
                return seconds(dns.get("refresh_interval", DNS_REFRESH_DEFAULT)) + every
    pytest.fail(f"Prometheus does not scrape {host}:{port}")


def first_scrape_wait(service: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> float:
    """The --first-scrape-wait the service's `endstate` command runs with, its environment's
    ENDSTATE_FIRST_SCRAPE_WAIT counted (the option's default, read when the parser is built)."""
    monkeypatch.delenv(ENV_FIRST_SCRAPE_WAIT, raising=False)
    if ENV_FIRST_SCRAPE_WAIT in service.get("environment", {}):
        monkeypatch.setenv(ENV_FIRST_SCRAPE_WAIT, str(service["environment"][ENV_FIRST_SCRAPE_WAIT]))
    return float(build_parser().parse_args(service["command"][1:]).first_scrape_wait)


def test_every_endstate_process_waits_until_prometheus_can_have_read_it(
    stack: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = yaml.safe_load(PROMETHEUS.read_text())
    services = stack["services"]
    served = {name: (s, port) for name, s in services.items() if (port := metrics_port(s)) is not None}
    assert {"agent", "endstate-worker"} <= served.keys()
    short = {
        name: (wait, needed)
        for name, (service, port) in served.items()
        if (wait := first_scrape_wait(service, monkeypatch)) < (needed := first_read(config, name, port))
    }
    assert not short, f"waits for the first scrape (s) shorter than Prometheus takes to read them: {short}"
