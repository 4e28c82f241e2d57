"""The Temporal dev server a benchmark runs on: its own (the tests' `TemporalServer`), or one already
running at `--temporal HOST:PORT` (the smoke test's), used and left running. Not a benchmark."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from temporal_server import TemporalServer


class Running:
    """A server someone else started and stops: `stop` leaves it running."""

    def __init__(self, address: str) -> None:
        self.address = address

    def stop(self) -> None:
        pass


def server_at(address: str | None) -> TemporalServer | Running:
    """The server at `address`, or a new one on free loopback ports when None."""
    return Running(address) if address else TemporalServer()


TEMPORAL_HELP = "use the Temporal server at HOST:PORT (left running) instead of starting one"
