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

What it prints comes from whoever can post to it: every value is printed with the characters a
terminal would act on (escape sequences, carriage returns, bidi overrides) as `\\xNN` escapes, and
cut past `SHOWN_CHARS`. A body that is not a notification (not JSON, not Alertmanager's shape,
over `MAX_BODY` bytes, sent slower than `SEND_SECONDS`) is refused with a 4xx and one line on stderr.
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
SHOWN_CHARS = 2000  # of one value (a label set, a summary, a description, a link), what is printed
MAX_BODY = 8 * 1024 * 1024  # bytes of one notification: Alertmanager's hold a group's alerts
SEND_SECONDS = 30  # a sender that stalls this long mid-request is dropped (it holds a thread)


class Refused(Exception):
    """A request that is no notification: `status`, and why (one line, printed escaped)."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


def shown(value: object) -> str:
    """`value` as one printable line: each character a terminal would act on or not show as itself
    (controls, escapes, line breaks, bidi and zero-width marks, lone surrogates) as its escape, and
    cut past `SHOWN_CHARS` characters."""
    text = str(value)
    cut = f"... ({len(text) - SHOWN_CHARS:,} more characters)" if len(text) > SHOWN_CHARS else ""
    text = text[:SHOWN_CHARS]
    if not text.isprintable():
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    return text + cut


def alert_lines(path: str, alert: dict[str, Any]) -> list[str]:
    """One alert of a notification to `path`: its first line, then its description and links."""
    labels, notes = alert.get("labels") or {}, alert.get("annotations") or {}
    status, name, summary = alert.get("status"), labels.get("alertname"), notes.get("summary")
    lines = [" ".join(shown(v) for v in (path, status, name, labels, summary))]
    if path == HEARTBEAT:
        return lines
    if notes.get("description"):
        lines.append(f"    {shown(' '.join(str(notes['description']).split()))}")
    lines += [f"    {word}: {shown(notes[key])}" for key, word in LINKS if notes.get(key)]
    return lines


def alerts_of(body: bytes) -> list[dict[str, Any]]:
    """The alerts of a notification's body, as Alertmanager's webhook sends it; `Refused` when it is
    not one (not JSON, or not that shape)."""
    try:
        notification = json.loads(body)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser's depth
        raise Refused(400, f"the body is not JSON ({str(exc)[:200]})") from None
    alerts = notification.get("alerts") if isinstance(notification, dict) else None
    if not isinstance(alerts, list):
        raise Refused(400, "the body is not an Alertmanager notification: no list of 'alerts'")
    for alert in alerts:
        if not isinstance(alert, dict) or not all(
            isinstance(alert.get(key) or {}, dict) for key in ("labels", "annotations")
        ):
            raise Refused(400, "an alert is not an object with 'labels' and 'annotations' objects")
    return alerts


class AlertLog(BaseHTTPRequestHandler):
    timeout = SEND_SECONDS  # on the socket: a sender that stalls is dropped, not waited for

    def do_POST(self) -> None:
        try:
            alerts = alerts_of(self._body())
        except Refused as exc:
            self._refuse(exc.status, str(exc))
            return
        except TimeoutError:
            self._refuse(408, f"the body did not arrive within {SEND_SECONDS} s")
            return
        for alert in alerts:
            print("\n".join(alert_lines(self.path, alert)), flush=True)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _body(self) -> bytes:
        """The request's body, of the length it says; `Refused` for a length missing, bad or too big."""
        given = self.headers.get("Content-Length")
        if given is None:
            raise Refused(411, "no Content-Length: send the notification's length")
        if not given.strip().isdigit():
            raise Refused(400, f"Content-Length {given[:40]!r} is not a number of bytes")
        if int(given) > MAX_BODY:
            raise Refused(413, f"a body of {int(given):,} bytes is over this pager's {MAX_BODY:,}")
        return self.rfile.read(int(given))

    def _refuse(self, status: int, why: str) -> None:
        """Answer `status` with `why`, say it on stderr, and close: the rest of the request is not read."""
        said = f"alert-log: refused a request to {shown(self.path)}: {shown(why)}"
        print(said, file=sys.stderr, flush=True)
        body = f"{why}\n".encode()
        self.close_connection = True
        try:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the sender is gone
            pass

    def log_message(self, format: str, *args: object) -> None:
        return


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9099
    ThreadingHTTPServer(("0.0.0.0", port), AlertLog).serve_forever()
