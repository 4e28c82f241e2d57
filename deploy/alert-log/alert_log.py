"""The stack's stand-in for a pager: prints every Alertmanager notification it receives.

Alertmanager posts to /page and /ticket (alerts/alertmanager.yml). Replace the
URLs there with your paging and ticketing bridges in production.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class AlertLog(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        for alert in body.get("alerts", []):
            labels, notes = alert.get("labels", {}), alert.get("annotations", {})
            status, name, summary = alert.get("status"), labels.get("alertname"), notes.get("summary")
            print(f"{self.path} {status} {name} {labels} {summary}", flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9099
    ThreadingHTTPServer(("0.0.0.0", port), AlertLog).serve_forever()
