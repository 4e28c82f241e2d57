"""A client that asks for a large response and then takes none of it (a slow reader) is cut off after
`--body-timeout` seconds, rather than holding its connection, its task and the buffered response for
good (past the connection cap, enough of them would refuse every other client)."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

from test_service_support import Server

from agent import Agent
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel, finish

OUTPUT = 8 * 1024 * 1024  # characters of the run's output: far more than the sockets' buffers hold


def _big_run(path: Path) -> str:
    """A finished run in the store at `path` whose output is `OUTPUT` characters; its id."""
    catalog = Catalog()
    catalog.register(
        "big", lambda state: Agent(name="big", model=ScriptedModel([[finish("done", "x" * OUTPUT)]]))
    )
    store = open_store(str(path))
    try:
        return asyncio.run(Runner(store, catalog).start("big", "write a lot")).run_id
    finally:
        store.close()


def _read_to_end(conn: socket.socket) -> tuple[int, bool]:
    """Bytes read until the service closed the connection (True), or until 10 s of silence (False)."""
    got = 0
    conn.settimeout(10)
    try:
        while chunk := conn.recv(65536):
            got += len(chunk)
    except TimeoutError:
        return got, False
    except ConnectionResetError:
        pass
    return got, True


def test_a_client_that_takes_none_of_its_response_is_cut_off(tmp_path: Path) -> None:
    run_id = _big_run(tmp_path / "runs.db")
    with Server(str(tmp_path / "runs.db"), tmp_path, "--body-timeout", "2") as server:
        conn = socket.socket()
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        conn.connect(("127.0.0.1", server.port))
        try:
            conn.sendall(f"GET /runs/{run_id} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            time.sleep(6)  # takes none of it: past the 2 s, the service cuts the connection
            got, closed = _read_to_end(conn)
        finally:
            conn.close()
        said = server.log.read_text()
    assert closed and got < OUTPUT, (closed, got)
    assert "cut off a client that took none of its response for 2 s" in said, said[-2000:]
