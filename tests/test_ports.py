"""The test servers start on another port when theirs was taken between picking and binding it
(tests/ports.py): forced here by handing each server, first, a port another socket listens on."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import ports
import pytest
from pg import PostgresServer
from prom_stack import agent_demo, prometheus, prometheus_config
from temporal_server import TemporalServer
from test_service_support import Server

pytestmark = pytest.mark.slow


class Taken:
    """Sockets listening on ports handed out first, as if another process took them in between."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []
        self.picks = 0  # how many times ports were picked
        self.index = 0  # which of the first pick's ports is taken

    @property
    def ports(self) -> list[int]:
        return [int(s.getsockname()[1]) for s in self.sockets]

    def listen(self) -> int:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        self.sockets.append(sock)
        return int(sock.getsockname()[1])


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> Iterator[Taken]:
    """The first pick's port at `index` (set it before starting the server) is taken; later picks
    are free."""
    held = Taken()
    real = ports.free_ports

    def pick(count: int) -> list[int]:
        held.picks += 1
        fresh = real(count)
        if held.picks == 1:
            fresh[held.index] = held.listen()
        return fresh

    monkeypatch.setattr(ports, "free_ports", pick)
    yield held
    for sock in held.sockets:
        sock.close()


def test_prometheus_starts_on_another_port_when_its_port_was_taken(taken: Taken, tmp_path: Path) -> None:
    with prometheus(prometheus_config([]), tmp_path) as prom:
        assert taken.picks == 2 and prom.url != f"http://127.0.0.1:{taken.ports[0]}"
        assert prom.query("vector(1)")[0]["value"][1] == "1"


def test_the_demo_starts_on_another_port_when_its_port_was_taken(taken: Taken, tmp_path: Path) -> None:
    with agent_demo(["--repeat", "1", "csv/clean"], tmp_path) as demo:
        assert taken.picks == 2 and demo.port != taken.ports[0]
        assert httpx.get(f"http://{demo.target}/metrics", timeout=30).status_code == 200


def test_postgres_starts_on_another_port_when_its_port_was_taken(taken: Taken) -> None:
    import psycopg

    server = PostgresServer()
    try:
        assert taken.picks == 2 and server.port != taken.ports[0]
        with psycopg.connect(server.new_database()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        server.pause()
        server.resume()  # on the same port: the URLs given out name it
        with psycopg.connect(server.admin_url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()


@pytest.mark.parametrize("index", [0, 1, 2], ids=["frontend", "http", "metrics"])
def test_temporal_starts_on_other_ports_when_one_of_its_ports_was_taken(taken: Taken, index: int) -> None:
    taken.index = index
    server = TemporalServer()
    try:
        assert taken.picks == 2 and server.port not in taken.ports
    finally:
        server.stop()


def test_the_service_starts_on_another_port_when_its_port_was_taken(taken: Taken, tmp_path: Path) -> None:
    with Server(str(tmp_path / "runs.db"), tmp_path) as server:
        assert taken.picks == 2 and server.port != taken.ports[0]
        assert httpx.get(f"{server.url}/readyz", timeout=30).status_code == 200


def test_a_server_gives_up_with_every_clash_named_after_a_few_ports_taken() -> None:
    def start(port: int) -> None:
        raise ports.PortTaken(f"bind 127.0.0.1:{port}: address already in use")

    with pytest.raises(RuntimeError, match=r"my server found its port taken 5 times in a row") as info:
        ports.on_free_port(start, "my server")
    assert str(info.value).count("address already in use") == 5


def test_an_answer_on_a_port_is_the_servers_only_when_it_holds_the_port() -> None:
    taken = Taken()
    port = taken.listen()
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert ports.held_by(os.getpid(), port)
        assert not ports.held_by(other.pid, port)
        assert not ports.held_by(os.getpid(), ports.free_port())
    finally:
        other.communicate(b"")
        taken.sockets[0].close()
