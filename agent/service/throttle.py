"""Online guessing of the service token, throttled per client address.

A wrong token offered to the API (`Authorization: Bearer ...`) or to the inbox's sign-in form is a
failed attempt of its client's address. After `limit` failed attempts within `window` seconds, the
address's next attempts are refused 429 with Retry-After, without the token being checked at all,
until its oldest failure in the window is `window` seconds old. Requests that carry no token, right
tokens from an address that is not throttled, and inbox sessions (their cookie is a signature, not
a secret to guess) are never slowed.

The address is the one uvicorn gives the request: the peer's, or the `X-Forwarded-For` of a proxy it
trusts (`$FORWARDED_ALLOW_IPS`, loopback by default); no one else's header is believed. An IPv6
client is counted by its /64 network, which one host usually holds whole. The table of addresses
holds at most `max_clients`: past it, the one that failed longest ago is forgotten (memory stays
bounded under a spread of addresses).

Requests without a client address (uvicorn on a unix socket, a proxy there that sends no
`X-Forwarded-For` or is not trusted to) cannot be told apart, so they are one client with one budget
of their own (`NO_ADDRESS`), as every client of a proxy the service does not trust shares the
proxy's: guessing from them stays throttled, and one of them guessing pauses the others' token
attempts (never a signed-in inbox, nor the CLI, which reads the store). The log says so once, with
the fix: the proxy sends `X-Forwarded-For`, and uvicorn trusts it (`$FORWARDED_ALLOW_IPS`).
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from starlette.requests import Request

log = logging.getLogger("endstate.service")

FAILED_LIMIT = 10  # failed token attempts an address may make within `FAILED_WINDOW` seconds
FAILED_WINDOW = 60.0
MAX_CLIENTS = 10_000  # addresses the throttle remembers; past it the stalest is forgotten
SAY_EVERY = 60.0  # seconds between two log lines about throttled attempts
MAX_KEY = 253  # characters of an address that is no IP kept as its key (X-Forwarded-For says any text)
NO_ADDRESS = "(no address)"  # the key of every request without a client address: no address reads so


class Throttle:
    """Failed token attempts per client address, in a sliding window, under a cap of addresses."""

    def __init__(
        self,
        limit: int = FAILED_LIMIT,
        window: float = FAILED_WINDOW,
        max_clients: int = MAX_CLIENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit, self.window, self.max_clients, self.clock = limit, window, max_clients, clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()  # stalest first
        self._throttled = 0  # attempts refused since the last log line
        self._said = -math.inf
        self._said_no_address = False

    def retry_after(self, address: str | None) -> int:
        """Whole seconds until `address` may offer a token again; 0: it may now."""
        failures = self._failures.get(client_key(address))
        if failures is None or len(failures) < self.limit:
            return 0
        wait = failures[0] + self.window - self.clock()
        if wait <= 0:
            return 0
        self._note_throttled()
        return max(1, math.ceil(wait))

    def failed(self, address: str | None) -> None:
        """Count a wrong token offered from `address`."""
        now, key = self.clock(), client_key(address)
        failures = self._failures.pop(key, None) or deque(maxlen=self.limit)
        failures.append(now)
        self._failures[key] = failures  # now the freshest
        self._forget(now)
        if key == NO_ADDRESS and not self._said_no_address:
            self._said_no_address = True
            log.warning(
                "a wrong token came from a client without a client address (a unix socket, or a proxy that "
                "sends no X-Forwarded-For or is not trusted to): such clients share one budget of %d wrong "
                "tokens in %g s, so one guessing pauses them all. Give them theirs: have the proxy send "
                "X-Forwarded-For and let uvicorn trust it ($FORWARDED_ALLOW_IPS)",
                self.limit,
                self.window,
            )

    def __len__(self) -> int:
        return len(self._failures)

    def _forget(self, now: float) -> None:
        """Drop addresses whose last failure left the window, then the stalest past `max_clients`."""
        while self._failures:
            stalest = next(iter(self._failures))
            if now - self._failures[stalest][-1] < self.window and len(self._failures) <= self.max_clients:
                break
            del self._failures[stalest]

    def _note_throttled(self) -> None:
        """Say in the log, once a minute at most, how many attempts were refused."""
        self._throttled += 1
        now = time.monotonic()
        if now - self._said >= SAY_EVERY:
            log.warning(
                "refused %d token attempt(s) from addresses past %d failed attempts in %g s "
                "(someone may be guessing the service token)",
                self._throttled,
                self.limit,
                self.window,
            )
            self._said, self._throttled = now, 0


def client_key(address: str | None) -> str:
    """The key an address is counted under: an IPv4 address or name itself, an IPv6 one's /64; none
    (or an empty one), `NO_ADDRESS`."""
    if not address:
        return NO_ADDRESS
    text = address
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return text[:MAX_KEY]  # a name, or what a trusted proxy's header said: at most a DNS name's length
    if isinstance(ip, ipaddress.IPv6Address):
        mapped = ip.ipv4_mapped  # ::ffff:192.0.2.1 is that IPv4 client
        return str(mapped) if mapped else str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def address_of(request: Request) -> str | None:
    """The request's client address as uvicorn gives it (a trusted proxy's X-Forwarded-For applied)."""
    return request.client.host if request.client else None


def shared_note(request: Request) -> str:
    """What a 429 adds for a request without a client address: it shares its budget, and why."""
    if client_key(address_of(request)) != NO_ADDRESS:
        return ""
    return (
        " Your request came without a client address (a unix socket, or a proxy that sends no "
        "X-Forwarded-For): every client without one shares this budget, so another's wrong tokens pause "
        "yours; ask the operator to have the proxy send X-Forwarded-For."
    )
