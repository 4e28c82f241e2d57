"""The stack's pager (deploy/alert-log/alert_log.py, `docker compose logs -f alert-log`) shows the
person it wakes where to go next: the alert's description, runbook and dashboard links, as the
project's Alertmanager config delivers them. It printed the summary alone, so the runbook_url and
dashboard_url every alert carries never reached anyone paged through the stack."""

from __future__ import annotations

import importlib.util
import json
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

import pytest
from prom_stack import alertmanager, alertmanager_config, wait_until

ROOT = Path(__file__).resolve().parents[1]
ALERT_LOG = ROOT / "deploy" / "alert-log" / "alert_log.py"
ALERTMANAGER = ROOT / "alerts" / "alertmanager.yml"
RUNBOOK = "https://wiki.example.com/runbooks/EndstateLimitStopShareHigh.md"
DASHBOARD = "https://grafana.example.com/d/endstate-agent-stops/agent-stops?var-agent=researcher&var-task_type=research"
DESCRIPTION = (  # folded in the rule file, but a line break may reach the pager
    "Over the last hour 40% of the runs of agent researcher\n"
    "on task type research ended because a budget ran out."
)


def alert_log() -> ModuleType:
    """deploy/alert-log/alert_log.py, the file the compose stack's alert-log service runs."""
    spec = importlib.util.spec_from_file_location("alert_log", ALERT_LOG)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def pager() -> Iterator[str]:
    """The alert-log's handler on a free loopback port; yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), alert_log().AlertLog)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def post_alert(am_url: str) -> None:
    """A page as Prometheus sends it to Alertmanager, with the annotations every alert carries."""
    labels = {"alertname": "EndstateLimitStopShareHigh", "severity": "page", "agent": "researcher",
              "task_type": "research"}  # fmt: skip
    notes = {"summary": "researcher/research: 40% of runs stopped at a limit", "description": DESCRIPTION,
             "runbook_url": RUNBOOK, "dashboard_url": DASHBOARD}  # fmt: skip
    body = json.dumps([{"labels": labels, "annotations": notes}]).encode()
    request = urllib.request.Request(f"{am_url}/api/v2/alerts", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


@pytest.mark.slow
def test_a_page_through_the_stacks_alertmanager_shows_its_runbook_and_dashboard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said: list[str] = []

    def printed() -> str:
        said.append(capsys.readouterr().out)
        return "".join(said) if "/page firing" in "".join(said) else ""

    with pager() as url, alertmanager(alertmanager_config(ALERTMANAGER, url), tmp_path / "am") as am:
        post_alert(am.url)
        out = wait_until(printed, 60, "the page at the alert-log")
    first, *rest = out.strip().splitlines()
    assert first.startswith("/page firing EndstateLimitStopShareHigh ")
    assert first.endswith(" researcher/research: 40% of runs stopped at a limit")
    assert rest == [
        "    Over the last hour 40% of the runs of agent researcher on task type research ended because a "
        "budget ran out.",
        f"    runbook: {RUNBOOK}",
        f"    dashboard: {DASHBOARD}",
    ]


def test_an_alert_without_links_prints_its_first_line_alone() -> None:
    """A notification of an alert with no description or links (another rule file's) still prints."""
    lines = alert_log().alert_lines("/ticket", {"status": "resolved", "labels": {"alertname": "X"}})
    assert lines == ["/ticket resolved X {'alertname': 'X'} None"]
