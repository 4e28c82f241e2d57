"""A checkpoint larger than the socket's buffers reaches PostgreSQL whole (durable47).

The store sends checkpoints ahead on a nonblocking libpq connection: what does not fit in the
socket's buffers stays in libpq's own until it is flushed. Unflushed, the server waited for the
rest of the statement and the store for its answer, until the store's timeout dropped the
connection: every checkpoint of a few megabytes (a huge answer, a tool that read a big file)
stalled its run for the whole timeout and failed once. A proxy in front of the real PostgreSQL,
frozen while the checkpoint is sent, makes the buffers fill every time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from test_store import lease, suspended
from test_store_hangs import in_time, proxied  # noqa: F401  (the fixture)

from agent.durable.store import NewRun, open_store
from agent.journal import Note
from agent.snapshot import Checkpoint, SnapshotKind

NOW = 1_800_000_000.0
BIG = 24 * 1024 * 1024  # characters: past a loopback socket's send and receive buffers together


def test_a_checkpoint_bigger_than_the_socket_buffers_is_written_whole(proxied: Any, make_agent: Any) -> None:  # noqa: F811
    proxy, url = proxied
    store: Any = open_store(url, timeout=30)
    try:
        snap = suspended(make_agent, "r1").snapshot
        assert snap is not None
        head = dataclasses.replace(snap, kind=SnapshotKind.CHECKPOINT, journal=[])
        store.create(NewRun("r1", "test-agent", "pay the invoice", "default", {}), lease(), NOW)
        in_time(store.send_checkpoint("r1", Checkpoint(head, 0, [Note("small")]), lease(), NOW).result)
        proxy.freeze()  # nothing is read from the socket: its buffers fill, the rest waits in libpq
        big = Checkpoint(head, 1, [Note("x" * BIG)])
        sent = in_time(lambda: store.send_checkpoint("r1", big, lease(), NOW))
        proxy.thaw()
        in_time(sent.result)  # unflushed: the server never saw the statement's end, a StoreTimeout
        written = store.snapshot("r1")
        assert written is not None and written.journal == [Note("small"), Note("x" * BIG)]
    finally:
        proxy.thaw()
        store.close()
