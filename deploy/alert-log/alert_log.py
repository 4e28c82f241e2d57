"""The stack's stand-in for a pager: prints every Alertmanager notification it receives.

Alertmanager posts to /page and /ticket (alerts/alertmanager.yml). Replace the
URLs there with your paging and ticketing bridges in production.

It posts EndstateWatchdog, the alert that always fires, to /heartbeat every minute: printed as its
first line alone, e.g.

    /heartbeat firing EndstateWatchdog {'alertname': ...} The alerting pipeline is alive: ...

In production that URL is a dead man's switch (a healthchecks.io ping URL, a PagerDuty, Opsgenie or
Grafana OnCall heartbeat) that pages when these lines stop; here nothing watches for their absence.

Each alert is printed as a pager shows it: one line with the route, status, name, labels and
summary, then its description, runbook and dashboard links indented below (what the person it
wakes opens next), e.g.

    /page firing EndstateLimitStopShareHigh {'agent': 'researcher', ...} researcher/research: 40% of ...
        Over the last hour 40% of the runs of agent researcher ...
        runbook: https://wiki.example.com/runbooks/EndstateLimitStopShareHigh.md
        dashboard: https://grafana.example.com/d/endstate-agent-stops/agent-stops?var-agent=...
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The annotations printed under an alert's first line, in order, with the word that leads each.
LINKS = (("runbook_url", "runbook"), ("dashboard_url", "dashboard"))
# Where the heartbeat arrives: proof that the alerting pipeline is alive, for no person to read.
HEARTBEAT = "/heartbeat"


def alert_lines(path: str, alert: dict[str, Any]) -> list[str]:
    """One alert of a notification to `path`: its first line, then its description and links."""
    labels, notes = alert.get("labels", {}), alert.get("annotations", {})
    status, name, summary = alert.get("status"), labels.get("alertname"), notes.get("summary")
    lines = [f"{path} {status} {name} {labels} {summary}"]
    if path == HEARTBEAT:
        return lines
    if notes.get("description"):
        lines.append(f"    {' '.join(str(notes['description']).split())}")
    lines += [f"    {word}: {notes[key]}" for key, word in LINKS if notes.get(key)]
    return lines


class AlertLog(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        for alert in body.get("alerts", []):
            print("\n".join(alert_lines(self.path, alert)), flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9099
    ThreadingHTTPServer(("0.0.0.0", port), AlertLog).serve_forever()
