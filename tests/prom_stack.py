"""Real Prometheus, Alertmanager and agent processes for tests, on free loopback ports.

Every helper is a context manager that waits until its process is ready and
always stops it afterwards. Binaries come from Debian's packages (`prometheus`,
`prometheus-alertmanager`); a missing one fails the test with the command that
installs it, never a skip.

    with prometheus(config_text, tmp_path) as prom:
        prom.query("up")
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from ports import PortTaken, held_by, on_free_port, port_clash
from reaper import Reaper

from telemetry import names

INSTALL_HINT = {
    "prometheus": "apt-get install -y prometheus",
    "promtool": "apt-get install -y prometheus",
    "prometheus-alertmanager": "apt-get install -y prometheus-alertmanager",
    "amtool": "apt-get install -y prometheus-alertmanager",
    "docker-compose": "apt-get install -y docker-compose",
    "endstate": "pip install -e .",
}


def require_binary(name: str) -> str:
    """The path of `name` on PATH, or a test failure that says how to install it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not on PATH: {INSTALL_HINT.get(name, 'install it')}", pytrace=False)
    return path


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


def wait_until(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    """Poll `check` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}", pytrace=False)


@contextlib.contextmanager
def running(
    argv_for: Callable[[int], list[str]],
    log: Path,
    ready_url_for: Callable[[int], str],
    what: str,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
) -> Iterator[int]:
    """Start `argv_for(port)` on a free port, wait until `ready_url_for(port)` answers 200, and
    always stop it; yields the port. A start that finds its port taken is made again on another."""

    def start(port: int) -> tuple[subprocess.Popen[bytes], Reaper, int]:
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv_for(port), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        reaper = Reaper(pids=[proc.pid])  # stops it if this process dies without the `finally` below
        try:
            _wait_ready(proc, port, ready_url_for(port), log, what, timeout)
        except BaseException:
            stop(proc)
            reaper.done()
            raise
        return proc, reaper, port

    proc, reaper, port = on_free_port(start, what)
    try:
        yield port
    finally:
        stop(proc)
        reaper.done()


def _wait_ready(
    proc: subprocess.Popen[bytes], port: int, url: str, log: Path, what: str, timeout: float
) -> None:
    """Until `url` answers 200 from `proc` (not from another process that took `port` first):
    `PortTaken` when it exited saying its port was taken."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            if port_clash(tail(log)):
                raise PortTaken(f"{what}: {tail(log, 3)}")
            pytest.fail(f"{what} exited with {proc.returncode}:\n{tail(log)}", pytrace=False)
        if http_get(url, timeout=1.0)[0] == 200 and held_by(proc.pid, port):
            return
        time.sleep(0.1)
    pytest.fail(f"{what} not ready at {url} after {timeout:.0f}s:\n{tail(log)}", pytrace=False)


def stop(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=grace)


def tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


# -- Prometheus ----------------------------------------------------------------


@dataclass
class Prometheus:
    url: str
    workdir: Path

    def api(self, path: str, **params: str) -> Any:
        """GET an /api/v1 endpoint; returns its `data`, fails the test on an error status."""
        status, body = http_get(f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}")
        payload = json.loads(body or b"{}")
        if status != 200 or payload.get("status") != "success":
            pytest.fail(f"Prometheus {path} {params} -> {status}: {body[:500]!r}", pytrace=False)
        return payload["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query; the result list (vector or matrix or scalar wrapped in a list)."""
        data = self.api("query", query=expr)
        result = data["result"]
        return result if isinstance(result, list) else [{"value": result}]

    def exemplars(self, expr: str, window: float = 600.0) -> list[dict[str, Any]]:
        now = time.time()
        return self.api("query_exemplars", query=expr, start=str(now - window), end=str(now))

    def alerts(self) -> list[dict[str, Any]]:
        return self.api("alerts")["alerts"]

    def reload(self, config_text: str) -> None:
        """Take a new config (say, another target) as a running Prometheus does on /-/reload."""
        (self.workdir / "prometheus.yml").write_text(config_text)
        request = urllib.request.Request(f"{self.url}/-/reload", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200, f"Prometheus refused the reload: {response.status}"

    def targets_up(self) -> bool:
        active = self.api("targets")["activeTargets"]
        return bool(active) and all(t["health"] == "up" for t in active)


def prometheus_config(
    targets: list[str],
    rule_files: Sequence[Path] = (),
    alertmanager: str | None = None,
    interval: str = "1s",
) -> str:
    """A Prometheus config scraping `targets` (host:port) as job `endstate-agent`."""
    config: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [{"job_name": "endstate-agent", "static_configs": [{"targets": targets}]}],
    }
    if alertmanager:
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]}
    return yaml.safe_dump(config, sort_keys=False)


@contextlib.contextmanager
def serving(argv: list[str], workdir: Path, what: str) -> Iterator[int]:
    """Prometheus's or Alertmanager's `argv` listening on a free loopback port (`running`), ready when
    its `/-/ready` answers, logging to `workdir/{what}.log`; yields the port."""
    with running(
        lambda port: [*argv, f"--web.listen-address=127.0.0.1:{port}"],
        workdir / f"{what}.log",
        lambda port: f"http://127.0.0.1:{port}/-/ready",
        what,
    ) as port:
        yield port


@contextlib.contextmanager
def prometheus(config_text: str, workdir: Path) -> Iterator[Prometheus]:
    """A real Prometheus with exemplar storage, on a free loopback port."""
    binary = require_binary("prometheus")
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(config_text)
    argv = [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={workdir / 'data'}",
        "--enable-feature=exemplar-storage",
        "--web.enable-lifecycle",
    ]
    with serving(argv, workdir, "prometheus") as port:
        yield Prometheus(url=f"http://127.0.0.1:{port}", workdir=workdir)


def fast_rules(
    sources: Sequence[Path],
    workdir: Path,
    windows: dict[str, str] | None = None,
    hold: str = "1s",
    interval: str = "1s",
    steps: dict[str, str] | None = None,
) -> list[Path]:
    """Copies of rule files that act within seconds: range windows swapped (`{"1h": "1m"}`),
    subquery steps swapped (`steps={"1h": "1s"}` turns `[7d:1h]` into `[7d:1s]`), every
    `for:` set to `hold`, every group evaluated each `interval`. Names, labels,
    annotations and thresholds are left alone."""
    workdir.mkdir(parents=True, exist_ok=True)
    copies = []
    for source in sources:
        doc = yaml.safe_load(source.read_text())
        for group in doc["groups"]:
            group["interval"] = interval
            for rule in group["rules"]:
                _hurry(rule, windows or {}, hold, steps or {})
        copy = workdir / source.name
        copy.write_text(yaml.safe_dump(doc, sort_keys=False))
        copies.append(copy)
    return copies


def _hurry(rule: dict[str, Any], windows: dict[str, str], hold: str, steps: dict[str, str]) -> None:
    def swap(m: re.Match[str]) -> str:
        window, step = m.group(1), m.group(2)
        window = windows.get(window, window)
        return f"[{window}]" if step is None else f"[{window}:{steps.get(step, step)}]"

    rule["expr"] = re.sub(r"\[(\w+)(?::(\w+))?\]", swap, rule["expr"])
    if "for" in rule:
        rule["for"] = hold


# -- Alertmanager --------------------------------------------------------------


@dataclass
class Alertmanager:
    url: str
    address: str  # host:port, for a Prometheus `alerting` section


def alertmanager_config(source: Path, webhook_url: str, group_wait: str = "1s") -> str:
    """The project's Alertmanager config with every webhook sent to `webhook_url` and fast grouping.

    The routing tree, matchers and inhibitions stay as they are; only the
    receivers' URLs and the timers change.
    """
    config = yaml.safe_load(source.read_text())
    for receiver in config.get("receivers", []):
        for hook in receiver.get("webhook_configs", []):
            path = urllib.parse.urlparse(hook["url"]).path
            hook["url"] = webhook_url.rstrip("/") + path
    _speed_up(config["route"], group_wait)
    return yaml.safe_dump(config, sort_keys=False)


def _speed_up(route: dict[str, Any], group_wait: str) -> None:
    route["group_wait"] = group_wait
    route["group_interval"] = group_wait
    for child in route.get("routes", []):
        for key in ("group_wait", "group_interval"):
            child.pop(key, None)


@contextlib.contextmanager
def alertmanager(config_text: str, workdir: Path) -> Iterator[Alertmanager]:
    """A real Alertmanager (no cluster) on a free loopback port."""
    binary = require_binary("prometheus-alertmanager")
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "alertmanager.yml"
    config.write_text(config_text)
    argv = [
        binary,
        f"--config.file={config}",
        f"--storage.path={workdir / 'data'}",
        "--cluster.listen-address=",
    ]
    with serving(argv, workdir, "alertmanager") as port:
        yield Alertmanager(url=f"http://127.0.0.1:{port}", address=f"127.0.0.1:{port}")


# -- A webhook receiver ------------------------------------------------------------


@dataclass
class Webhook:
    """Records every POST: (path, decoded JSON body)."""

    url: str
    received: list[tuple[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, path: str, body: Any) -> None:
        with self.lock:
            self.received.append((path, body))

    def posts(self) -> list[tuple[str, Any]]:
        with self.lock:
            return list(self.received)

    def alerts(self, **labels: str) -> list[tuple[str, dict[str, Any]]]:
        """Every alert received so far whose labels include `labels`, with the path it came to."""
        found = []
        for path, body in self.posts():
            for alert in body.get("alerts", []):
                if all(alert.get("labels", {}).get(k) == v for k, v in labels.items()):
                    found.append((path, alert))
        return found


def _handler(hook: Webhook) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            hook.record(self.path, json.loads(raw or b"null"))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


@contextlib.contextmanager
def webhook_receiver() -> Iterator[Webhook]:
    """A stdlib HTTP server on a free loopback port that records the POSTs it gets."""
    hook = Webhook(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hook))
    hook.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- The agent -----------------------------------------------------------------------


def demo_help() -> str:
    """`endstate demo --help`, or "" when the CLI cannot run."""
    binary = shutil.which("endstate")
    if binary is None:
        return ""
    done = subprocess.run([binary, "demo", "--help"], capture_output=True, text=True, timeout=60)
    return done.stdout if done.returncode == 0 else ""


def require_demo_flags(*flags: str) -> None:
    """Fail clearly when `endstate demo` lacks the flags these live tests drive it with."""
    help_text = demo_help()
    missing = [flag for flag in flags if flag not in help_text]
    if missing:
        pytest.fail(f"endstate demo lacks {', '.join(missing)}, which the live tests drive it with")


@dataclass
class Demo:
    """A running `endstate demo`: the port of its /metrics, the JSON-lines file its spans go to."""

    port: int
    traces: Path

    @property
    def target(self) -> str:
        """Its /metrics as a Prometheus scrape target (host:port)."""
        return f"127.0.0.1:{self.port}"


@contextlib.contextmanager
def agent_demo(args: Sequence[str], workdir: Path, timeout: float = 60.0) -> Iterator[Demo]:
    """`endstate demo --metrics-port PORT --hold ARGS...` on a free port, ready once /metrics answers.

    Spans go to a JSON-lines file (no collector needed), so runs have trace ids
    and their exemplars point at traces that exist.
    """
    binary = require_binary("endstate")
    workdir.mkdir(parents=True, exist_ok=True)
    traces = workdir / "traces.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_EXPORTER_OTLP")}
    env[names.ENV_TRACES_FILE] = str(traces)
    with running(
        lambda port: [binary, "demo", "--metrics-port", str(port), "--hold", *args],
        workdir / "agent.log",
        lambda port: f"http://127.0.0.1:{port}/metrics",
        "endstate demo",
        timeout,
        env,
    ) as port:
        yield Demo(port=port, traces=traces)
