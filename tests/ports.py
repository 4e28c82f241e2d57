"""Free loopback ports for the servers tests start, and starting them again when a port was taken.

A port picked by `free_port` is free when picked, not when a server binds it a moment later:
another process may take it in between (any program's outgoing connection gets its local port
from the same range). `on_free_port(start, what)` calls `start(port)` on a fresh port; when it
raises `PortTaken` (the server exited, or logged that the address was in use), it starts again
on another port, a few times. A server is ready when it answers *and* `held_by` says the port is
its own: until it exits, a process that holds the port may answer in its place.

    proc = on_free_port(lambda port: start_my_server(port), "my server")
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ATTEMPTS = 5
T = TypeVar("T")

# How a server says another process holds its port: Go (Prometheus, Alertmanager, Temporal),
# Python's OSError (errno 98), PostgreSQL ("could not bind IPv4 address ...: Address already in use").
_IN_USE = ("address already in use",)


class PortTaken(Exception):
    """A server could not bind the port it was given: another process holds it."""


def free_ports(count: int) -> list[int]:
    """`count` distinct loopback TCP ports no socket is bound to right now."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in socks:  # all bound at once, so no two get the same port
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def free_port() -> int:
    """A loopback TCP port no socket is bound to right now (nothing listens on it: a client's
    connection to it is refused)."""
    return free_ports(1)[0]


_REFUSING: list[socket.socket] = []  # bound, never listening, open until the test process ends


def refused_port() -> int:
    """A loopback TCP port where every connection is refused for as long as the test process lives:
    a socket of this process holds it bound and never listens (a port merely free now may be taken
    meanwhile by a server that another test, or another test run on this machine, starts)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    _REFUSING.append(sock)
    return int(sock.getsockname()[1])


def held_by(pid: int, port: int) -> bool:
    """Whether process `pid` listens on TCP `port` (Linux's /proc): an answer on the port may come
    from another process that took it first, while `pid` is about to exit for want of it."""
    return port in listening_ports(pid)


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process `pid` listens on (Linux's /proc); empty once it has gone."""
    inodes = set()
    for fd in _fds(pid):
        with contextlib.suppress(OSError):  # closed since listed
            link = os.readlink(fd)
            if link.startswith("socket:["):
                inodes.add(link[len("socket:[") : -1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()  # sl local_address rem_address st ... inode
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _fds(pid: int) -> list[Path]:
    try:
        return list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # the process has gone
        return []


def port_clash(output: str) -> bool:
    """Whether a server's output says its port was taken."""
    lowered = output.lower()
    return any(words in lowered for words in _IN_USE)


def on_free_port(start: Callable[[int], T], what: str, attempts: int = ATTEMPTS) -> T:
    """`start(port)` on a free port; on `PortTaken`, again on another port, up to `attempts` times."""
    return on_free_ports(1, lambda ports: start(ports[0]), what, attempts)


def on_free_ports(count: int, start: Callable[[list[int]], T], what: str, attempts: int = ATTEMPTS) -> T:
    """`start(ports)` on `count` free ports (a server that binds several); on `PortTaken`, again on
    other ports, up to `attempts` times."""
    clashes: list[str] = []
    for _ in range(attempts):
        ports = free_ports(count)
        try:
            return start(ports)
        except PortTaken as exc:
            clashes.append(f"ports {ports}: {exc}")
    raise RuntimeError(f"{what} found its port taken {attempts} times in a row:\n" + "\n".join(clashes))
