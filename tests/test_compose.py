"""Static proofs for the stack: docker-compose validates it, and what it runs is
pinned, bound to loopback, read-only, and wired the way the dashboards and
alerts expect (collector, Tempo, Prometheus with exemplars and rules, Grafana)."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from prom_stack import http_get, require_binary, serving

from telemetry import names

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
SERVICES = {"agent", "otel-collector", "tempo", "prometheus", "alertmanager", "grafana"}
PINNED = re.compile(r"^[\w./-]+:(?!latest$)[\w.-]*\d[\w.-]*$")


def compose(*args: str, password: str | None = "test-only") -> subprocess.CompletedProcess[str]:
    binary = require_binary("docker-compose")
    env = {k: v for k, v in os.environ.items() if k != "GF_ADMIN_PASSWORD"}
    if password is not None:
        env["GF_ADMIN_PASSWORD"] = password
    argv = [binary, "-f", str(COMPOSE), "config", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)


@pytest.fixture(scope="module")
def stack() -> dict[str, Any]:
    """The stack as docker-compose resolves it."""
    done = compose()
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def test_config_no_interpolate_passes() -> None:
    done = compose("--no-interpolate", password=None)
    assert done.returncode == 0, done.stderr


def test_grafana_password_has_no_default() -> None:
    done = compose(password=None)
    assert done.returncode != 0
    assert "GF_ADMIN_PASSWORD" in done.stderr


def test_grafana_password_comes_from_the_environment(stack: dict[str, Any]) -> None:
    assert stack["services"]["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"] == "test-only"
    raw = yaml.safe_load(COMPOSE.read_text())
    assert raw["services"]["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"].startswith(
        "${GF_ADMIN_PASSWORD:?"
    )


def test_services(stack: dict[str, Any]) -> None:
    assert set(stack["services"]) >= SERVICES


def test_images_are_pinned(stack: dict[str, Any]) -> None:
    images = {name: service.get("image", "") for name, service in stack["services"].items()}
    assert all(PINNED.match(image) for image in images.values()), images


def test_ports_are_bound_to_loopback(stack: dict[str, Any]) -> None:
    for name, service in stack["services"].items():
        for port in service.get("ports", []):
            published = port if isinstance(port, str) else f"{port.get('host_ip')}:{port.get('published')}"
            assert published.startswith("127.0.0.1:"), f"{name}: {port}"


def bind_mounts(service: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(host path, container path, mode) for each bind mount of a service."""
    mounts = []
    for volume in service.get("volumes", []):
        parts = volume.split(":") if isinstance(volume, str) else [volume["source"], volume["target"]]
        if parts[0].startswith("/"):
            mounts.append((parts[0], parts[1], parts[2] if len(parts) > 2 else "rw"))
    return mounts


def test_config_files_are_mounted_read_only_and_exist(stack: dict[str, Any]) -> None:
    for name, service in stack["services"].items():
        for host, target, mode in bind_mounts(service):
            assert mode == "ro", f"{name}: {host} -> {target} is {mode}"
            assert Path(host).exists() and Path(host).is_relative_to(ROOT), f"{name}: {host}"


def mounted(service: dict[str, Any], relative: str) -> str:
    """Where the repository path `relative` is mounted in a service."""
    targets = {Path(host).relative_to(ROOT).as_posix(): target for host, target, _ in bind_mounts(service)}
    return targets[relative]


def test_prometheus_keeps_exemplars_and_loads_the_rules(stack: dict[str, Any]) -> None:
    prometheus = stack["services"]["prometheus"]
    assert "--enable-feature=exemplar-storage" in prometheus["command"]
    assert mounted(prometheus, "alerts/rules") == "/etc/prometheus/rules"
    assert mounted(prometheus, "deploy/prometheus/prometheus.yml") == "/etc/prometheus/prometheus.yml"


def test_prometheus_config_is_valid_with_the_rules(tmp_path: Path) -> None:
    """`promtool check config` on the stack's config, with the rules where the container has them."""
    (tmp_path / "prometheus.yml").write_text((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    (tmp_path / "rules").symlink_to(ROOT / "alerts" / "rules")
    done = subprocess.run([require_binary("promtool"), "check", "config", str(tmp_path / "prometheus.yml")],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for path in sorted((ROOT / "alerts" / "rules").glob("*.yml")):
        count = sum(len(group["rules"]) for group in yaml.safe_load(path.read_text())["groups"])
        assert f"{path.name}\n  SUCCESS: {count} rules found" in done.stdout, (path.name, done.stdout)


def test_prometheus_scrapes_the_agent_and_the_collector_and_alerts_to_alertmanager() -> None:
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    assert {"agent:8000", "otel-collector:8888"} <= scraped(config).keys()
    managers = config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert managers == ["alertmanager:9093"]


def metrics_port(service: dict[str, Any]) -> int | None:
    """The port a service's Endstate process serves /metrics on: `endstate serve` on ENDSTATE_PORT,
    any other `endstate` command with `--metrics-port`; None for a service that is no Endstate."""
    command = service.get("command") or []
    if command[:1] != ["endstate"]:
        return None
    if command[1:2] == ["serve"]:
        return int(service.get("environment", {}).get("ENDSTATE_PORT", 8000))
    return int(command[command.index("--metrics-port") + 1]) if "--metrics-port" in command else None


def scraped(config: dict[str, Any]) -> dict[str, str]:
    """host:port -> how Prometheus finds it: `static` (one address) or `dns` (every address a name has)."""
    found = {}
    for job in config["scrape_configs"]:
        for static in job.get("static_configs", []):
            found |= dict.fromkeys(static["targets"], "static")
        for dns in job.get("dns_sd_configs", []):
            if dns.get("type", "SRV") == "A":
                found |= dict.fromkeys((f"{name}:{dns['port']}" for name in dns["names"]), "dns")
    return found


def test_prometheus_scrapes_every_endstate_process_of_every_profile(stack: dict[str, Any]) -> None:
    """Each service that serves /metrics is scraped, every replica of it: a static target names one
    address, which Docker's DNS answers with one replica at a time, so replicas need DNS discovery
    (type A: every address of the service's name). The Temporal workers' runs were in no panel."""
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    targets = scraped(config)
    served = {name: port for name, s in stack["services"].items() if (port := metrics_port(s)) is not None}
    assert {"agent", "endstate-worker"} <= served.keys()
    for name, port in served.items():
        assert f"{name}:{port}" in targets, f"{name} serves /metrics on {port}; Prometheus scrapes {targets}"
        if stack["services"][name].get("deploy", {}).get("replicas", 1) > 1:
            assert targets[f"{name}:{port}"] == "dns", (
                f"{name} has replicas: scrape each (dns_sd_configs type A)"
            )


def test_collector_pipeline() -> None:
    config = yaml.safe_load((ROOT / "telemetry" / "collector.yaml").read_text())
    protocols = config["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317") and protocols["http"]["endpoint"].endswith(":4318")
    traces = config["service"]["pipelines"]["traces"]
    assert traces["processors"][0] == "memory_limiter" and "batch" in traces["processors"]
    assert [config["exporters"][e]["endpoint"] for e in traces["exporters"]] == ["tempo:4317"]
    reader = config["service"]["telemetry"]["metrics"]["readers"][0]["pull"]["exporter"]["prometheus"]
    assert reader["port"] == 8888


def test_the_collector_takes_every_signal_the_agent_sends_over_otlp() -> None:
    """Spans, and content events (OTLP logs) when message content goes out as events: a collector
    with no logs pipeline refuses /v1/logs, and every batch fails (a ticket, nothing kept)."""
    config = yaml.safe_load((ROOT / "telemetry" / "collector.yaml").read_text())
    pipelines = config["service"]["pipelines"]
    for signal in (names.SIGNAL_TRACES, names.SIGNAL_LOGS):
        assert signal in pipelines, f"the collector has no {signal} pipeline: {sorted(pipelines)}"
        pipeline = pipelines[signal]
        assert pipeline["receivers"] == ["otlp"] and pipeline["processors"][0] == "memory_limiter"
        assert all(e in config["exporters"] for e in pipeline["exporters"])


def test_the_collector_memory_limiter_has_a_limit_to_be_a_share_of(stack: dict[str, Any]) -> None:
    """`limit_percentage` is a share of the container's memory limit; with none set it is a share of
    the whole host's memory, and the collector grows until the host runs short before refusing."""
    config = yaml.safe_load((ROOT / "telemetry" / "collector.yaml").read_text())
    limiter = config["processors"]["memory_limiter"]
    collector = stack["services"]["otel-collector"]
    if "limit_percentage" in limiter:
        limits = collector.get("deploy", {}).get("resources", {}).get("limits", {})
        assert collector.get("mem_limit") or limits, "otel-collector has no memory limit in the compose file"
    else:
        assert limiter.get("limit_mib"), "the memory limiter has no limit"
    # The Go runtime should collect before the limiter has to refuse data.
    assert collector.get("environment", {}).get("GOMEMLIMIT")


def seconds(duration: str | int | float) -> float:
    """A compose duration (`30s`, `1m30s`, or a number of seconds) in seconds."""
    if isinstance(duration, int | float):
        return float(duration)
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|m|s|ms|us)", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    scale = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6}
    return sum(float(n) * scale[u] for n, u in parts)


def test_the_agent_gets_the_time_to_checkpoint_its_runs_when_stopped(stack: dict[str, Any]) -> None:
    """`docker compose stop` sends SIGTERM, then SIGKILL after stop_grace_period (10s by default).
    `endstate serve` lets HTTP requests finish (up to --grace), gives runs --grace to end as
    `cancelled` with a checkpoint, then flushes spans: all of it must fit before the SIGKILL."""
    import argparse

    from agent.service.server import add_serve_args
    from telemetry.setup import CLOSE_TIMEOUT_S

    parser = argparse.ArgumentParser()
    add_serve_args(parser)
    agent = stack["services"]["agent"]
    grace = float(parser.parse_args([a for a in agent["command"][2:] if a != "--demo-workload"]).grace)
    assert seconds(agent.get("stop_grace_period", "10s")) >= 2 * grace + CLOSE_TIMEOUT_S + 5


def test_nothing_in_the_stack_reports_usage_home(stack: dict[str, Any]) -> None:
    """Grafana and Tempo both send anonymous usage reports to Grafana Labs unless told not to."""
    grafana = stack["services"]["grafana"]["environment"]
    assert grafana["GF_ANALYTICS_REPORTING_ENABLED"] == "false"
    tempo = yaml.safe_load((ROOT / "deploy" / "tempo" / "tempo.yaml").read_text())
    assert tempo.get("usage_report", {}).get("reporting_enabled") is False


def test_collector_and_agent_are_wired(stack: dict[str, Any]) -> None:
    collector, agent = stack["services"]["otel-collector"], stack["services"]["agent"]
    assert mounted(collector, "telemetry/collector.yaml") in " ".join(collector["command"])
    assert agent["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    assert agent["command"] == ["endstate", "serve", "--demo-workload"]
    assert agent["environment"]["ENDSTATE_HOST"] == "0.0.0.0"  # else Prometheus cannot scrape it


def test_grafana_is_provisioned_with_the_generated_dashboards(stack: dict[str, Any]) -> None:
    grafana = stack["services"]["grafana"]
    providers = yaml.safe_load((ROOT / "dashboards/provisioning/dashboards/endstate.yml").read_text())
    assert providers["providers"][0]["options"]["path"] == mounted(grafana, "dashboards/json")
    assert mounted(grafana, "dashboards/provisioning/datasources") == "/etc/grafana/provisioning/datasources"
    assert mounted(grafana, "dashboards/provisioning/dashboards") == "/etc/grafana/provisioning/dashboards"


def test_alertmanager_uses_the_project_config(stack: dict[str, Any]) -> None:
    alertmanager = stack["services"]["alertmanager"]
    assert mounted(alertmanager, "alerts/alertmanager.yml") == "/etc/alertmanager/alertmanager.yml"
    assert "--config.file=/etc/alertmanager/alertmanager.yml" in alertmanager["command"]


def test_dockerfile() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11[\w.-]*-slim", text, re.M)
    assert re.search(r"^RUN pip install \.", text, re.M)
    assert 'CMD ["endstate", "serve", "--demo-workload"]' in text
    assert re.search(r"^USER (?!root)", text, re.M) and "EXPOSE 8000" in text


def test_the_temporal_profile_runs_a_server_on_postgresql_its_ui_and_workers(stack: dict[str, Any]) -> None:
    services = stack["services"]
    temporal = {"temporal-postgresql", "temporal", "temporal-ui", "endstate-worker"}
    assert all(services[name]["profiles"] == ["temporal"] for name in temporal)
    assert not any("profiles" in s for name, s in services.items() if name not in temporal)
    assert services["temporal"]["environment"]["DB"] == "postgres12"
    assert services["temporal"]["environment"]["POSTGRES_SEEDS"] == "temporal-postgresql"
    assert services["temporal-ui"]["environment"]["TEMPORAL_ADDRESS"] == "temporal:7233"
    worker = services["endstate-worker"]
    assert worker["command"][:4] == ["endstate", "worker", "--temporal", "temporal:7233"]
    assert worker["build"]["args"]["EXTRAS"] == "[temporal]"
    assert "ARG EXTRAS" in (ROOT / "Dockerfile").read_text()


def test_the_agent_waits_for_prometheuss_first_scrape_before_it_recovers_runs(stack: dict[str, Any]) -> None:
    # Without the wait, a new container resumed the runs a deploy cancelled before Prometheus read
    # its /metrics once: those resumes went uncounted and diluted the stop shares for an hour.
    config = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    interval = int(config["global"]["scrape_interval"].rstrip("s"))
    wait = float(stack["services"]["agent"]["environment"]["ENDSTATE_FIRST_SCRAPE_WAIT"])
    assert wait >= interval


# -- Tempo's service graph and span metrics, remote-written into the stack's Prometheus -----------

TEMPO_CONFIG = ROOT / "deploy/tempo/tempo.yaml"
GRAPH_SERIES = "traces_service_graph_request_total"  # what Grafana's service graph queries


def tempo_remote_write() -> urllib.parse.SplitResult:
    """The one remote-write URL Tempo's metrics generator sends to."""
    writes = yaml.safe_load(TEMPO_CONFIG.read_text())["metrics_generator"]["storage"]["remote_write"]
    assert len(writes) == 1, writes
    return urllib.parse.urlsplit(writes[0]["url"])


def test_tempo_generates_the_service_graph_and_span_metrics(stack: dict[str, Any]) -> None:
    """Without the generator's processors Grafana's service graph (and span metrics) has no series."""
    config = yaml.safe_load(TEMPO_CONFIG.read_text())
    processors = config["overrides"]["defaults"]["metrics_generator"]["processors"]
    assert {"service-graphs", "span-metrics"} <= set(processors)
    generator = config["metrics_generator"]
    # the model provider is the far end of each `chat` span (a CLIENT span no server answers)
    assert names.GEN_AI_PROVIDER_NAME in generator["processor"]["service_graphs"]["peer_attributes"]
    volumes = [v.split(":")[1] for v in stack["services"]["tempo"]["volumes"] if not v.startswith("/")]
    assert any(Path(generator["storage"]["path"]).is_relative_to(v) for v in volumes), volumes


def test_tempo_remote_writes_into_the_stacks_prometheus(stack: dict[str, Any]) -> None:
    url = tempo_remote_write()
    assert url.hostname in stack["services"] and url.hostname == "prometheus"
    assert url.port == 9090 and url.path == "/api/v1/write"
    assert yaml.safe_load(TEMPO_CONFIG.read_text())["metrics_generator"]["storage"]["remote_write"][0][
        "send_exemplars"
    ]


def test_grafana_links_tempos_service_graph_to_prometheus() -> None:
    sources = yaml.safe_load((ROOT / "dashboards/provisioning/datasources/datasources.yml").read_text())
    by_type = {s["type"]: s for s in sources["datasources"]}
    prometheus_uid = by_type["prometheus"]["uid"]
    assert by_type["tempo"]["jsonData"]["serviceMap"]["datasourceUid"] == prometheus_uid
    assert by_type["tempo"]["jsonData"]["tracesToMetrics"]["datasourceUid"] == prometheus_uid


def snappy_block(data: bytes) -> bytes:
    """`data` in Snappy's block format as literals only (valid Snappy, not compressed)."""
    out, size = bytearray(), len(data)
    while True:  # the uncompressed length as a varint
        out.append((size & 0x7F) | (0x80 if size > 0x7F else 0))
        size >>= 7
        if not size:
            break
    for start in range(0, len(data), 65536):
        chunk = data[start : start + 65536]
        n = len(chunk) - 1
        out += bytes([n << 2]) if n < 60 else bytes([61 << 2]) + n.to_bytes(2, "little")
        out += chunk
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (lengths here stay below 128)."""
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def write_request(labels: dict[str, str], value: float, millis: int) -> bytes:
    """A remote-write `WriteRequest` holding one sample, as Tempo's generator sends them."""
    encoded = b"".join(_field(1, _field(1, k.encode()) + _field(2, v.encode())) for k, v in labels.items())
    stamp, varint = millis, bytearray()
    while True:
        varint.append((stamp & 0x7F) | (0x80 if stamp > 0x7F else 0))
        stamp >>= 7
        if not stamp:
            break
    sample = b"\x09" + struct.pack("<d", value) + b"\x10" + bytes(varint)
    return _field(1, encoded + _field(2, sample))


def test_the_stacks_prometheus_takes_tempos_remote_writes(stack: dict[str, Any], tmp_path: Path) -> None:
    """The real Prometheus, started with the compose file's own flags, stores a service-graph sample
    posted where Tempo posts them; without the remote-write receiver it answered 404 and Grafana's
    service graph stayed empty."""
    (tmp_path / "prometheus.yml").write_text((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    (tmp_path / "rules").symlink_to(ROOT / "alerts" / "rules")
    paths = {"--config.file": tmp_path / "prometheus.yml", "--storage.tsdb.path": tmp_path / "data"}
    flags = [f"{f.split('=')[0]}={paths[f.split('=')[0]]}" if f.split("=")[0] in paths else f
             for f in stack["services"]["prometheus"]["command"]]  # fmt: skip
    with serving([require_binary("prometheus"), *flags], tmp_path, "prometheus") as port:
        labels = {"__name__": GRAPH_SERIES, "client": "endstate-agent", "server": "anthropic"}
        body = snappy_block(write_request(labels, 3.0, int(time.time() * 1000)))
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}{tempo_remote_write().path}",
            data=body,
            headers={
                "Content-Encoding": "snappy",
                "Content-Type": "application/x-protobuf",
                "X-Prometheus-Remote-Write-Version": "0.1.0",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status = answer.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status == 204, f"Prometheus answered Tempo's remote write with {status}"
        query = urllib.parse.urlencode({"query": f'{GRAPH_SERIES}{{client="endstate-agent"}}'})
        found = json.loads(http_get(f"http://127.0.0.1:{port}/api/v1/query?{query}")[1])["data"]["result"]
        assert [r["value"][1] for r in found] == ["3"], found
