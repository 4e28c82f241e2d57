"""flakes48: the tests' Temporal dev server (tests/temporal_server.py) is ready only once the ports it
was given are its own. A port picked free is free when picked, not when the server binds it: when
another dev server took it first, the health check reached that one and passed while this one was
exiting for want of its port; the tests then ran against the other module's server and lost it
mid-test ("tcp connect error") when that module stopped it."""

from __future__ import annotations

import sys

import ports
import pytest
from ports import free_ports, held_by, listening_ports
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


# A dev server whose frontend serves on its three ports at once and whose worker service binds a port
# of its own later: on its first start another process holds that port, and the server ends.
LATE_CLASH = """
import socket, sys, time
given = [socket.create_server(("127.0.0.1", int(port))) for port in sys.argv[1:4]]
time.sleep(1.0)
if sys.argv[4] == "clash":
    sys.stderr.write('msg="Failed to start gRPC listener" error="listen tcp 127.0.0.1:33301: bind: '
                     'address already in use" service=worker\\n')
    sys.exit(2)
services = [socket.create_server(("127.0.0.1", 0)) for _ in range(3)]
time.sleep(600)
"""


class LateClash(TemporalServer):
    ready_seconds = 30.0

    def __init__(self) -> None:
        self.starts = 0
        super().__init__()

    def command(self, ports: list[int]) -> list[str]:
        self.starts += 1
        return [sys.executable, "-c", LATE_CLASH, *map(str, ports), "clash" if self.starts == 1 else "serve"]

    def _healthy(self) -> bool:
        return True  # the frontend says SERVING as soon as it listens


def test_a_server_whose_own_service_loses_its_port_after_serving_starts_again_before_it_is_ready() -> None:
    # Was: ready once SERVING on its three ports; its worker service's bind then failed, the server
    # exited (exit code 2) and the module's first test waited 60 s for a server that was gone.
    server = LateClash()
    try:
        assert server.starts == 2
        assert len(listening_ports(server.proc.pid)) == 6 and server.died() is None
    finally:
        server.stop()


def test_a_real_dev_server_is_ready_only_with_its_services_listening(temporal: TemporalServer) -> None:
    held = listening_ports(temporal.proc.pid)
    assert set(temporal.ports) <= held and len(held) >= TemporalServer.listeners
