"""The answers written below the app say `nosniff` and `no-store` too. The README: "Every response, a
500 included, says `X-Content-Type-Options: nosniff` and, unless it sets its own, `Cache-Control:
no-store`". The app's responses did (`SafeHeaders`), but two answers are written by the HTTP protocol
before any app sees the request, and said neither: uvicorn's 400 to a request it cannot parse (a
request line with a space in its path, a header name that is no token), and the 503 to a connection
past the open-file cap (`guard._refusal`)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from test_service_support import Server

SAFE = {"x-content-type-options": "nosniff", "cache-control": "no-store"}


def head_of(response: bytes) -> tuple[str, dict[str, str]]:
    """A raw HTTP response's status line and its headers (names lower-cased)."""
    head = response.partition(b"\r\n\r\n")[0].decode("latin-1")
    status, *lines = head.split("\r\n")
    return status, {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


def test_the_refusal_past_the_connection_cap_says_nosniff_and_no_store() -> None:
    from agent.service.guard import _refusal

    status, headers = head_of(_refusal())
    assert status.startswith("HTTP/1.1 503") and headers["retry-after"] == "5"
    assert {k: headers.get(k) for k in SAFE} == SAFE, headers
    body = _refusal().partition(b"\r\n\r\n")[2]
    assert int(headers["content-length"]) == len(body)  # the headers added, the body still whole


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("auditX_headers")
    with Server(str(tmp / "runs.db"), tmp) as s:
        yield s


def _sent(port: int, raw: bytes) -> bytes:
    """What the service answers `raw` with, up to its closing the connection."""
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(raw)
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


@pytest.mark.slow
@pytest.mark.parametrize(
    "raw",
    [
        b"GET /ru ns HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",  # a space in the path
        b"GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Name: x\r\n\r\n",  # a header name that is no token
        b"GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n",  # two Host headers
    ],
)
def test_a_request_the_protocol_cannot_parse_is_answered_400_with_nosniff_and_no_store(
    server: Server, raw: bytes
) -> None:
    status, headers = head_of(_sent(server.port, raw))
    assert status.startswith("HTTP/1.1 400"), status
    assert {k: headers.get(k) for k in SAFE} == SAFE, headers
    assert server.proc.poll() is None  # and the service goes on
