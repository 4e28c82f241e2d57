"""`endstate limits suggest --prometheus URL` with a password in the URL, and without a scheme.

A Prometheus behind basic auth (an auth proxy in front of it, as teams run it) was out of reach:
urllib took `admin:secret@host` for the host name ("Name or service not known"), and the error,
like the report's "from Prometheus at ..." line, printed the password, which the README promises
never happens to a URL. Now the URL's `user:password@` goes as an `Authorization: Basic` header
and every message shows `user:***@`. A URL without `http://` says to add it.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from agent.cli.main import main

SECRET = "s3cret:pw@x"  # a password with the characters that break a naive parse
QUOTED = "s3cret%3Apw%40x"


class AuthProxy(BaseHTTPRequestHandler):
    """Stands in for the auth proxy before a Prometheus: 401 without the right basic auth, else
    the HTTP API's answer to an instant query over no series (an empty vector)."""

    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        got = self.headers.get("Authorization")
        self.seen.append(got)
        want = "Basic " + base64.b64encode(f"admin:{SECRET}".encode()).decode()
        if got != want:
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b"Unauthorized")
            return
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[int]:
    AuthProxy.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), AuthProxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def suggest(capsys: pytest.CaptureFixture[str], url: str) -> tuple[int, str]:
    code = main(["limits", "suggest", "--prometheus", url])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_the_urls_credentials_go_as_basic_auth_and_are_never_printed(
    proxy: int, capsys: pytest.CaptureFixture[str]
) -> None:
    code, said = suggest(capsys, f"http://admin:{QUOTED}@127.0.0.1:{proxy}")
    assert AuthProxy.seen and all(h and h.startswith("Basic ") for h in AuthProxy.seen)
    # the port is masked first: a port such as 40173 holds "401" and is no HTTP status
    shown = said.replace(f"127.0.0.1:{proxy}", "127.0.0.1:PORT")
    assert "401" not in shown and "Unauthorized" not in shown, said
    assert code == 1  # Prometheus answered: no successful runs there yet, so no ceiling
    assert f"http://admin:***@127.0.0.1:{proxy}" in said
    assert "s3cret" not in said


def test_a_refused_password_is_not_printed_either(proxy: int, capsys: pytest.CaptureFixture[str]) -> None:
    code, said = suggest(capsys, f"http://admin:wrong-s3cret@127.0.0.1:{proxy}")
    assert code == 2
    assert "admin:***@" in said and "wrong-s3cret" not in said


def test_an_unreachable_prometheus_with_a_password_is_said_masked(capsys: pytest.CaptureFixture[str]) -> None:
    with socket_closed() as port:
        code, said = suggest(capsys, f"http://admin:{QUOTED}@127.0.0.1:{port}")
    assert code == 2
    assert "cannot query Prometheus at http://admin:***@127.0.0.1" in said and "s3cret" not in said
    assert "Name or service not known" not in said  # the host is the host, not "admin:..."


def test_a_url_without_scheme_says_to_add_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, said = suggest(capsys, "127.0.0.1:9090")
    assert code == 2
    assert "http://" in said and len(said.strip().splitlines()) == 1


class socket_closed:
    """A loopback port that nothing listens on."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        pass
