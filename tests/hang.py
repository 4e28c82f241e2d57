"""Things that hang, for timeout tests (no tests here): servers that hang without closing, and a
module whose import hangs (`hanging_import`).

`SilentServer` accepts TCP connections on a free loopback port and never says a word: a database
process that froze, or a load balancer with nothing behind it. `FreezableProxy` forwards a port
to a real server until `freeze()`: from then on it holds every byte in both directions while the
connections stay open (a network that drops packets without a reset looks the same to a client),
until `thaw()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import socket
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


class SilentServer:
    """Accepts connections and keeps them open, silent, until `close()`."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed
                return
            self._held.append(conn)

    def close(self) -> None:
        self._listener.close()
        for conn in self._held:
            conn.close()

    def __enter__(self) -> SilentServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FreezableProxy:
    """A TCP proxy from a free loopback port to `127.0.0.1:target`, on an event loop of its own."""

    def __init__(self, target: int) -> None:
        self.target = target
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.port: int = self._call(self._start())
        self.connections = 0

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

    async def _start(self) -> int:
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._writers: set[asyncio.StreamWriter] = set()  # both ends of every connection, closed at stop
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Any:
        """A connection, kept as it is accepted (not when its task first runs: `_stop` may cancel that
        task before it starts, and its socket was then never closed, a `ResourceWarning` later, in
        whichever test the collector ran); its task serves it."""
        self.connections += 1
        self._writers.add(writer)
        return self._serve(reader, writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        await asyncio.gather(
            self._pump(reader, up_writer), self._pump(up_reader, writer), return_exceptions=True
        )

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                await self._flowing.wait()  # frozen: held here, the connection open
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()

    def freeze(self) -> None:
        self._call(self._set(False))

    def thaw(self) -> None:
        self._call(self._set(True))

    async def _set(self, flowing: bool) -> None:
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    def close(self) -> None:
        self.thaw()
        self._call(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _stop(self) -> None:
        """Close every connection, then let its task end. Connections are ended by aborting their
        sockets, not by cancelling their tasks: a task cancelled while it opened its upstream
        connection, or before it started, left a socket that nothing closed (a `ResourceWarning`
        later, in whichever test the collector ran)."""
        self._server.close()
        for _ in range(3):  # a task opening its upstream connection registers it, and a next round ends it
            for writer in list(self._writers):
                writer.transport.abort()
            tasks = asyncio.all_tasks() - {asyncio.current_task()}
            if not tasks:
                break
            await asyncio.wait(tasks, timeout=1)
        for task in asyncio.all_tasks() - {asyncio.current_task()}:  # a task still hanging, if any
            task.cancel()
        await self._server.wait_closed()
        for _ in range(3):  # the aborts close their sockets in callbacks: run them before the loop closes
            await asyncio.sleep(0)

    def __enter__(self) -> FreezableProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def hanging_import(
    folder: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str, gate: str
) -> Iterator[threading.Event]:
    """Modules written to `folder` (put on `sys.path`): `gate`, which holds `GATE`, and `module`, of
    `source`, which waits on `{gate}.GATE` as it is imported. Yields that gate; on the way out it opens
    it (the hung import ends, and its thread with it) and forgets both modules."""
    (folder / f"{gate}.py").write_text("import threading\n\nGATE = threading.Event()\n")
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(folder))
    made = importlib.import_module(gate)  # made here: no module of a distribution
    try:
        yield made.GATE
    finally:
        made.GATE.set()
        for name in (gate, module):
            sys.modules.pop(name, None)
