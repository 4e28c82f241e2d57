"""uvicorn's HTTP/1.1 protocol with a deadline for a request's headers (slow-header clients).

uvicorn times out idle keep-alive connections but not a client that opens a
connection and then sends its headers slowly or never: each such client would
hold a connection for good. Here a request's headers must arrive within
`header_timeout` seconds of the connection opening (or of the first byte of
the next request on a kept-alive connection), or the connection is closed.
The body has its own deadline, in the app (`read_body`).

Connections are also capped below the process's open-file limit (`connection_cap`): a flood
of connections (idle ones, each held until its deadline) would otherwise take every file
descriptor, and the runs in flight could then open no file, no store connection and no socket
(while asyncio logged a traceback for each failed accept). A connection past the cap is answered
503 at once and closed.

These answers, and uvicorn's 400 for a request it cannot parse, are written here, below the app: each
says `SAFE_HEADERS` (nosniff, no-store), as every response of the app does (`app.SafeHeaders`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from agent.service.http import SAFE_HEADERS

log = logging.getLogger("endstate.service")

RESERVED_FDS = 64  # file descriptors at least kept from connections, for runs, the store, telemetry
REFUSED_RETRY_AFTER = 5  # seconds a connection refused past the cap is told to wait
SAY_EVERY = 60.0  # seconds between two log lines about refused connections
_said = [float("-inf")]  # when refused connections were last logged (monotonic)


def _open_files() -> int:
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def _reserved(open_files: int) -> int:
    """File descriptors kept from connections: a quarter of the limit, at least `RESERVED_FDS`."""
    return max(RESERVED_FDS, open_files // 4)


def connection_cap(open_files: int | None = None) -> int:
    """How many connections the service holds at once: the open-file limit (`ulimit -n`; `open_files`
    when given) less those kept for the runs in flight (`_reserved`)."""
    limit = _open_files() if open_files is None else open_files
    return max(16, limit - _reserved(limit))


def accept_backlog(open_files: int | None = None) -> int:
    """The listening socket's backlog (`uvicorn.Config(backlog=...)`): asyncio accepts up to that many
    connections at a time before any is seen, so a burst passes the cap by at most that many; half the
    descriptors kept for runs, so a burst never takes them all."""
    limit = _open_files() if open_files is None else open_files
    return max(8, min(2048, _reserved(limit) // 2))


def _refusal() -> bytes:
    body = json.dumps(
        {
            "error": "this service holds as many connections as its open-file limit allows (ulimit -n); "
            f"connect again in {REFUSED_RETRY_AFTER} s, or raise the limit"
        }
    ).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
        f"retry-after: {REFUSED_RETRY_AFTER}\r\nconnection: close\r\ncontent-length: {len(body)}\r\n"
    )
    safe = "".join(f"{name.decode()}: {value.decode()}\r\n" for name, value in SAFE_HEADERS)
    return (head + safe + "\r\n").encode() + body


class HeaderDeadlineH11(H11Protocol):
    """`H11Protocol` that closes a connection whose request headers do not arrive in time."""

    header_timeout: float = 10.0
    max_connections: int = 1 << 20
    write_timeout: float = 30.0
    _header_timer: asyncio.TimerHandle | None = None
    _write_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            self._refuse()
            return
        self._arm()

    def _refuse(self) -> None:
        """Answer a connection past the cap 503 and close it (said in the log once a minute at most)."""
        if time.monotonic() - _said[0] >= SAY_EVERY:
            _said[0] = time.monotonic()
            log.warning(
                "refused connections past %d open at once (the open-file limit, ulimit -n, less those kept "
                "for runs); raise the limit if these are real clients",
                self.max_connections,
            )
        self.transport.write(_refusal())
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._between_requests():
            self._arm()
        super().data_received(data)
        if not self._between_requests():  # the headers of a request arrived
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._write_resumed()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client stopped taking the response: it has `write_timeout` s to take more of it."""
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(self.write_timeout, self._stalled)

    def resume_writing(self) -> None:
        self._write_resumed()
        super().resume_writing()

    def _write_resumed(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _stalled(self) -> None:
        """A client that took none of its response for `write_timeout` s (a slow reader holding a
        connection and its buffered response for good) is cut off: the response cannot be finished."""
        self._write_timer = None
        log.info("cut off a client that took none of its response for %g s", self.write_timeout)
        self.transport.abort()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request it cannot parse (a malformed request line or header), with
        `SAFE_HEADERS` as every other response: its body is plain text, never sniffed, never cached."""
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close"), *SAFE_HEADERS]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=msg.encode("ascii", "replace")),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.close()

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        if self._between_requests() and not self.transport.is_closing():
            log.info(
                "closed a connection whose request headers did not arrive within %g s", self.header_timeout
            )
            self.transport.close()


def guarded_h11(
    header_timeout: float, max_connections: int | None = None, write_timeout: float = 30.0
) -> type[HeaderDeadlineH11]:
    """The protocol class for `uvicorn.Config(http=...)`, with this header deadline, connection cap
    (`connection_cap()` unless given) and time a client may take none of its response."""
    if not header_timeout > 0:
        from agent.errors import ConfigError

        raise ConfigError(f"--header-timeout must be a positive number of seconds, not {header_timeout!r}")
    cap = connection_cap() if max_connections is None else max_connections
    return type(
        "HeaderDeadlineH11",
        (HeaderDeadlineH11,),
        {"header_timeout": header_timeout, "max_connections": cap, "write_timeout": write_timeout},
    )
