"""red53: the stack's stand-in pager (deploy/alert-log/alert_log.py) against hostile posts. Anyone who
can reach its port can post to it, and what it prints lands on an operator's terminal
(`docker compose logs -f alert-log`).

Before: an escape sequence in an alert's name, summary, description or links reached the terminal raw
(it could retitle, clear or rewrite it); a body that was not JSON, or JSON of another shape, raised in
the handler (a traceback on stderr, the connection dropped with no answer); a Content-Length of -1
read until the sender closed, a huge one was read whole, a sender that stalled held its thread forever;
a 100 MB description was printed whole."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
from test_oncall52_pager import alert_log

PAGER = alert_log()
ESC = "\x1b]0;PWNED\x07\x1b[2J\r\u202e"  # retitle, clear the screen, go back, reverse the line
ALERT = {
    "status": "firing",
    "labels": {"alertname": "EndstateLimitStopShareHigh", "severity": "page", "agent": "researcher"},
    "annotations": {
        "summary": "researcher: 40% of runs stopped at a limit",
        "description": "Over the last hour 40%.",
        "runbook_url": "https://wiki.example.com/r.md",
        "dashboard_url": "https://grafana.example.com/d/x",
    },
}


@contextmanager
def pager(timeout: float | None = None) -> Iterator[tuple[str, int]]:
    """The alert-log's handler on a free loopback port (its socket timeout `timeout` when given)."""
    handler = PAGER.AlertLog
    if timeout is not None:
        handler = type("Impatient", (PAGER.AlertLog,), {"timeout": timeout})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def post(where: tuple[str, int], body: bytes, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """POST `body` to /page; the status and body of the answer."""
    connection = http.client.HTTPConnection(*where, timeout=60)
    try:
        given = {"Content-Type": "application/json", "Content-Length": str(len(body)), **(headers or {})}
        connection.putrequest("POST", "/page", skip_accept_encoding=True)
        for key, value in given.items():
            connection.putheader(key, value)
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def notification(*alerts: dict[str, Any]) -> bytes:
    return json.dumps({"version": "4", "status": "firing", "alerts": list(alerts)}).encode()


def hostile_alert() -> dict[str, Any]:
    return {
        "status": f"firing{ESC}",
        "labels": {**ALERT["labels"], "alertname": f"X{ESC}"},
        "annotations": {key: f"{value}{ESC}" for key, value in ALERT["annotations"].items()},
    }


def test_what_a_terminal_acts_on_is_printed_escaped() -> None:
    lines = PAGER.alert_lines("/page", hostile_alert())
    printed = "\n".join(lines)
    assert len(lines) == 4
    for char in "\x1b\x07\r\u202e":
        assert char not in printed
    assert lines[0].startswith("/page firing\\x1b]0;PWNED\\x07\\x1b[2J\\r\\u202e X\\x1b]0;PWNED")
    assert lines[2] == "    runbook: https://wiki.example.com/r.md\\x1b]0;PWNED\\x07\\x1b[2J\\r\\u202e"


def test_a_heartbeat_and_plain_text_print_as_before() -> None:
    """Printable text (other scripts, emoji) is printed as it is; only what a terminal acts on is not."""
    alert = {**ALERT, "annotations": {**ALERT["annotations"], "summary": "naïve 日本 😀"}}
    assert PAGER.alert_lines("/heartbeat", alert) == [
        f"/heartbeat firing EndstateLimitStopShareHigh {ALERT['labels']} naïve 日本 😀"
    ]


def test_a_huge_description_is_cut() -> None:
    alert = {**ALERT, "annotations": {"description": "x" * 1_000_000}}
    [_, description] = PAGER.alert_lines("/page", alert)
    assert len(description) < 3000
    assert description.endswith(" more characters)")


def test_a_hostile_notification_is_printed_escaped_through_the_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pager() as where:
        assert post(where, notification(hostile_alert()))[0] == 200
    out = capsys.readouterr().out
    assert "X\\x1b]0;PWNED\\x07" in out
    assert "\x1b" not in out and "\r" not in out


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"{not json", "the body is not JSON"),
        (b"\xff\xfe", "the body is not JSON"),
        (b"[" * 100_000, "the body is not JSON"),
        (b"[]", "no list of 'alerts'"),
        (b'{"alerts": "all of them"}', "no list of 'alerts'"),
        (b'{"alerts": [1]}', "an alert is not an object"),
        (b'{"alerts": [{"labels": ["alertname"]}]}', "an alert is not an object"),
        (b'{"alerts": [{"labels": {}, "annotations": "runbook"}]}', "an alert is not an object"),
    ],
)
def test_a_body_that_is_no_notification_is_a_400_and_the_pager_goes_on(
    body: bytes, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pager() as where:
        status, said = post(where, body)
        assert (status, why in said) == (400, True)
        assert post(where, notification(ALERT))[0] == 200  # the next page still prints
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.err.startswith("alert-log: refused a request to /page: ") and why in captured.err
    assert captured.out.startswith("/page firing EndstateLimitStopShareHigh ")


@pytest.mark.parametrize(
    ("length", "status"),
    [("-1", 400), ("ten", 400), (str(10**12), 413), ("9000000", 413)],
)
def test_a_bad_or_huge_length_is_refused_unread(length: str, status: int) -> None:
    """Nothing of the body is sent: a pager that read it would wait for it (-1: until the sender
    closes) or allocate it."""
    with pager() as where:
        assert post(where, b"", {"Content-Length": length})[0] == status


def test_a_sender_that_stalls_is_dropped() -> None:
    """Half a body, then nothing: answered 408 once the handler's socket timeout passes (here 1 s; 30 s
    in the stack), not held for ever."""
    with pager(timeout=1.0) as where, socket.create_connection(where, timeout=60) as sender:
        sender.sendall(b'POST /page HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"alerts"')
        answer = sender.makefile("rb").readline()
    assert answer.startswith(b"HTTP/1.0 408 ")


def test_a_body_without_a_length_is_refused() -> None:
    """Chunked, or no length at all: 411 (Alertmanager sends a Content-Length), not read until the
    sender closes."""
    chunked = b"POST /page HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    with pager() as where, socket.create_connection(where, timeout=60) as sender:
        sender.sendall(chunked)
        answer = sender.makefile("rb").readline()
    assert answer.startswith(b"HTTP/1.0 411 ")
