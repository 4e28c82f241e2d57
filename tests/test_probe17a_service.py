"""probe17a: `endstate serve` keeps its settings for the inbox's forms as for the JSON API."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from test_service_support import TOKEN, Server

from agent.service.auth import COOKIE, Token

FORMS = ["/inbox/login", "/inbox/some-run/approve", "/inbox/review/runs/some-run/label"]


@pytest.mark.parametrize("path", FORMS)
def test_a_form_whose_body_does_not_arrive_within_the_body_timeout_is_a_408(
    path: str, tmp_path: Path
) -> None:
    # The README: "a body within --body-timeout (408)". The JSON API read its bodies within the setting;
    # the inbox's and review pages' forms within the default 30 s whatever it was, so a client that
    # sends a form's headers and then trickles (or never sends) its body held a connection 60 times
    # longer than `--body-timeout 0.5` allows.
    with Server(str(tmp_path / "runs.db"), tmp_path, "--body-timeout", "0.5") as server:
        here, signed = f"127.0.0.1:{server.port}", Token(TOKEN).cookie_value
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            head = (
                f"POST {path} HTTP/1.1\r\nHost: {here}\r\nOrigin: http://{here}\r\n"
                f"Cookie: {COOKIE}={signed}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n"
            )
            began = time.monotonic()
            sock.sendall(head.encode() + b"token=")
            answer = b""
            while b"did not arrive" not in answer and (chunk := sock.recv(4096)):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"did not arrive within 0.5 s" in answer and time.monotonic() - began < 5
