"""uvicorn's HTTP/1.1 protocol with a deadline for a request's headers (slow-header clients).

uvicorn times out idle keep-alive connections but not a client that opens a
connection and then sends its headers slowly or never: each such client would
hold a connection for good. Here a request's headers must arrive within
`header_timeout` seconds of the connection opening (or of the first byte of
the next request on a kept-alive connection), or the connection is closed.
The body has its own deadline, in the app (`read_body`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("endstate.service")


class HeaderDeadlineH11(H11Protocol):
    """`H11Protocol` that closes a connection whose request headers do not arrive in time."""

    header_timeout: float = 10.0
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._between_requests():
            self._arm()
        super().data_received(data)
        if not self._between_requests():  # the headers of a request arrived
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

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


def guarded_h11(header_timeout: float) -> type[HeaderDeadlineH11]:
    """The protocol class for `uvicorn.Config(http=...)`, with this header deadline."""
    if not header_timeout > 0:
        from agent.errors import ConfigError

        raise ConfigError(f"--header-timeout must be a positive number of seconds, not {header_timeout!r}")
    return type("HeaderDeadlineH11", (HeaderDeadlineH11,), {"header_timeout": header_timeout})
