"""audit12: the pending-help read from Temporal's visibility is bounded well inside a scrape.

Before: `TemporalPending` (the gauges `agent_help_pending`/`agent_help_oldest_pending_seconds` of
`endstate worker --metrics-port` and `serve --temporal`) waited up to 10 s for Temporal at each scrape, and
left the read running when it gave up. While Temporal hung, every scrape of /metrics took 10 s, which is
Prometheus' default scrape timeout: the scrape failed whole (`up` 0: the worker taken for down, every other
series lost, the failed read's count with them), and one more read was left running at each scrape.

Here Temporal "hangs": a TCP listener that takes connections and never answers.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from agent.temporal.pending import READ_TIMEOUT_S, TemporalPending

SCRAPE_TIMEOUT_S = 10.0  # Prometheus' default scrape_timeout (deploy/prometheus keeps it)


class Hung:
    """A loopback "server" that accepts connections and never says a word."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        """Let every client go: their connections end (a clean end for the client's own threads)."""
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the `accept` that waits
        self.sock.close()
        self._thread.join(timeout=10)
        for conn in self.held:
            conn.close()


@pytest.fixture
def hung() -> Iterator[Hung]:
    server = Hung()
    try:
        yield server
    finally:
        server.close()


def _reads_left(pending: TemporalPending) -> int:
    """The reads still running on the source's loop (this count's own task aside)."""

    async def count() -> int:
        await asyncio.sleep(0)  # a read cancelled a moment ago ends here
        return len(asyncio.all_tasks()) - 1

    return asyncio.run_coroutine_threadsafe(count(), pending._loop).result(timeout=30)


def test_a_hung_temporal_fails_the_read_well_inside_a_scrape_and_leaves_no_read_running(hung: Hung) -> None:
    pending = TemporalPending(hung.address)
    try:
        for _ in range(2):  # a scrape, and the next: each bounded, none left running
            began = time.monotonic()
            with pytest.raises(TimeoutError, match="did not answer"):
                pending()
            took = time.monotonic() - began
            assert took < SCRAPE_TIMEOUT_S - 2.0, took  # room for the rest of the page on a loaded host
            assert _reads_left(pending) == 0
    finally:
        pending.close()


def test_the_read_bound_leaves_half_a_default_scrape_for_the_rest() -> None:
    assert 0 < READ_TIMEOUT_S <= SCRAPE_TIMEOUT_S / 2
