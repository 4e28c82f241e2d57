"""flakes48: the tests' Temporal dev server (tests/temporal_server.py) is ready only once the ports it
was given are its own. A port picked free is free when picked, not when the server binds it: when
another dev server took it first, the health check reached that one and passed while this one was
exiting for want of its port; the tests then ran against the other module's server and lost it
mid-test ("tcp connect error") when that module stopped it."""

from __future__ import annotations

import sys

import ports
import pytest
from ports import free_ports, held_by
from temporal_server import TemporalServer, temporal_fixture

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


class Impostor(TemporalServer):
    """A "server" that is a process binding nothing: what a dev server that lost its port to another
    is until it exits."""

    ready_seconds = 5.0  # never ready: how long the start tries

    def command(self, ports: list[int]) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(600)"]


def test_a_server_whose_port_another_dev_server_answers_on_is_not_ready(temporal: TemporalServer) -> None:
    # Was: ready at once (the other server said SERVING, and this process had not exited yet)
    impostor = Impostor.__new__(Impostor)
    with pytest.raises(RuntimeError, match=f"{temporal.port}, not this one"):
        impostor._start_on([temporal.port, *free_ports(2)])
    assert impostor.proc.poll() is not None  # the process that never served was stopped
    assert temporal.proc.poll() is None  # the server that owns the port serves on


def test_a_server_given_the_port_another_dev_server_holds_starts_on_other_ports(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, picks = ports.free_ports, []

    def pick(count: int) -> list[int]:
        fresh = real(count)
        if not picks:  # the first pick's frontend port: taken by the module's server meanwhile
            fresh[0] = temporal.port
        picks.append(fresh)
        return fresh

    monkeypatch.setattr(ports, "free_ports", pick)
    server = TemporalServer()
    try:
        assert len(picks) == 2 and server.port == picks[1][0] != temporal.port
        assert held_by(server.proc.pid, server.port) and server.died() is None
    finally:
        server.stop()
