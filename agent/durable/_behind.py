"""Checkpoints written behind the loop, so that a write overlaps the next model call.

The loop hands each checkpoint over and goes on at once; before a tool starts
and before the segment ends it awaits the last one handed over
(`_loop.durable`). A checkpoint is written by whoever gets to it first:

- the runner's writer thread, to which it is handed as soon as the loop next
  waits on anything (a model call over the network: seconds in production);
- the loop itself, when it reaches the barrier before that (a model that
  answers at once, as in the benchmarks): then it is written right there, as
  a synchronous checkpoint was, without a thread hop.

A store that can send a statement ahead (PostgreSQL: `send_checkpoint`) needs
no thread: the checkpoint goes to the server at once, the server writes it
while the loop goes on, and the barrier reads its outcome.

The writes of a segment land in the order they were handed over (a write is
taken by the loop only when every earlier one has landed), and awaiting one
waits for every earlier one too and raises the first failure among them: the
last one stands for all. A write that failed is not lost: its entries go with
the segment's next write (the run's last entries, when the run ends as error),
so the journal in the store never has a gap; the segment's last write, if it
failed, goes with the segment's record (`unsaved`).

A finished or limited run's last checkpoint that holds no tool's result (the
final reply and the stop, typically) is not written on its own: it goes with
the segment's record (`unsaved` too), in one statement with it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from agent.durable.store import Lease
from agent.journal import Result, Started
from agent.snapshot import Checkpoint, SnapshotKind

Write = Callable[[Checkpoint, Lease, float], None]  # the store's checkpoint of one run: (new, lease, now)


class Sent(Protocol):
    """A checkpoint a store sent ahead; `result()` returns when it is written, or raises why not."""

    def result(self) -> None: ...


Send = Callable[[Checkpoint, Lease, float], Sent]  # a store's send_checkpoint for one run


class Written:
    """One checkpoint handed over; awaiting it returns when it is durable (or raises why not).

    A cancelled waiter never cancels the write: once handed over, a checkpoint is written.
    `future` exists only once the write is handed to the writer thread (whoever writes it then
    settles it); a write the loop takes first needs none (the common case with a fast model).
    """

    __slots__ = (
        *("_behind", "_checkpoint", "_lease", "_now", "_token", "before"),
        *("done", "error", "future", "sent", "taken"),
    )

    def __init__(
        self, behind: Behind, checkpoint: Checkpoint, lease: Lease, now: float, before: Written | None
    ) -> None:
        self._behind, self._checkpoint, self._lease, self._now = behind, checkpoint, lease, now
        self.before = before  # the segment's previous write, while it may still be in flight
        self._token = threading.Lock()  # whoever acquires it writes this checkpoint
        self.taken = False
        self.done = False  # landed, well or not (`error` says which)
        self.error: BaseException | None = None
        self.future: Future[None] | None = None  # made on the loop's thread when handed to the writer
        self.sent: Sent | None = None  # sent to the server already: its outcome is read when it lands

    @property
    def landed(self) -> bool:
        """Written, and well."""
        return self.done and self.error is None

    def take(self) -> bool:
        """True for exactly one caller (the loop or the writer thread): that one writes it."""
        if not self._token.acquire(blocking=False):
            return False
        self.taken = True
        return True

    def land(self) -> None:
        """Write it now (on whichever thread took it); the outcome goes to `error` (and `future`)."""
        try:
            self._behind.land(self._checkpoint, self._lease, self._now, self.sent)
        except BaseException as exc:
            self.error = exc
        self.done = True
        if (future := self.future) is not None:
            if self.error is not None:
                future.set_exception(self.error)
            else:
                future.set_result(None)

    def wait(self) -> None:
        """On the writer thread: return when this write has landed, whoever writes it. One never
        handed to the writer was taken by the loop, which writes it before it hands over the next."""
        if self.future is not None:
            self.future.exception()

    def __await__(self) -> Generator[Any, None, None]:
        """Wait for this write and every earlier one; raise the first failure among them."""
        failure: BaseException | None = None
        if (before := self.before) is not None:  # earlier writes first: they stay in order
            try:
                yield from before.__await__()
            except Exception as exc:
                failure = exc
            self.before = None
        if self.take():  # the writer thread has not started it: write it here, now
            self.land()
        elif not self.done:  # the writer thread has it (so it has a future)
            assert self.future is not None
            yield from asyncio.shield(asyncio.wrap_future(self.future)).__await__()
        if failure is not None:
            raise failure
        if self.error is not None:
            raise self.error


class Behind:
    """The checkpointer of one segment: each call hands one checkpoint over and returns at once."""

    def __init__(
        self,
        pool: ThreadPoolExecutor,
        write: Write,
        lease: Callable[[], Lease],
        now: Callable[[], float],
        send: Send | None = None,
    ) -> None:
        self._pool, self._write, self._lease, self._now, self._send = pool, write, lease, now, send
        self._last: Written | None = None
        self._unsaved: Checkpoint | None = None  # a checkpoint that failed: its entries go with the next

    @property
    def unsaved(self) -> Checkpoint | None:
        """The entries (and latest head) of writes that failed and no later write carried: the
        segment's record writes them, so a last checkpoint that failed loses nothing either."""
        return self._unsaved

    def __call__(self, checkpoint: Checkpoint) -> Written | None:
        if self._for_record(checkpoint):
            self._unsaved = self._with_unsaved(checkpoint)  # `unsaved`: the record writes it
            return None
        if self._send is not None:
            return self._sent(checkpoint)
        last = self._last  # kept until it has landed: a failure is raised by every later write's waiter
        before = None if last is not None and last.landed else last
        self._last = written = Written(self, checkpoint, self._lease(), self._now(), before)
        asyncio.get_running_loop().call_soon(self._hand_off, written)  # when the loop next waits
        return written

    def _for_record(self, checkpoint: Checkpoint) -> bool:
        """True for a segment's last checkpoint (a finished or limited run's) that holds no result
        of a tool that ran and no call about to run, once every earlier write has landed: the
        segment's record writes it with the result, in one statement (one write a segment less).
        Every tool's result is still durable before the segment ends, as before."""
        if checkpoint.head.kind is SnapshotKind.CHECKPOINT:
            return False
        if any(isinstance(e, Started) or (isinstance(e, Result) and e.ran) for e in checkpoint.entries):
            return False
        last = self._last
        return last is None or last.landed

    def _sent(self, checkpoint: Checkpoint) -> Written:
        """A store that sends ahead (PostgreSQL): the statement goes to the server now, on this thread,
        and its outcome is read when the write is awaited (the server writes it meanwhile)."""
        if (last := self._last) is not None and last.take():  # its outcome first: a failed one's
            last.land()  # entries go with this one
        checkpoint = self._with_unsaved(checkpoint)
        lease, now = self._lease(), self._now()
        written = Written(self, checkpoint, lease, now, None)
        assert self._send is not None
        try:
            written.sent = self._send(checkpoint, lease, now)
        except BaseException:  # not even sent: the next write (or the segment's record) carries it
            self._unsaved = checkpoint
            raise
        self._last = written
        return written

    def land(self, checkpoint: Checkpoint, lease: Lease, now: float, sent: Sent | None) -> None:
        """Make one checkpoint durable: read the outcome of one sent, or write it."""
        if sent is None:
            return self.write(checkpoint, lease, now)
        try:
            sent.result()
        except BaseException:
            self._unsaved = checkpoint
            raise
        self._unsaved = None
        return None

    def write(self, checkpoint: Checkpoint, lease: Lease, now: float) -> None:
        """Write one checkpoint, with the entries of an earlier one that failed (none is lost)."""
        checkpoint = self._with_unsaved(checkpoint)
        try:
            self._write(checkpoint, lease, now)
        except BaseException:
            self._unsaved = checkpoint
            raise
        self._unsaved = None

    def _with_unsaved(self, checkpoint: Checkpoint) -> Checkpoint:
        """The checkpoint with the entries of an earlier one that failed before it, if any. Those it
        holds already are not added again: a checkpoint that raised when handed over (not sent) has
        its entries handed over again with the loop's next one."""
        if (unsaved := self._unsaved) is None or checkpoint.first <= unsaved.first:
            return checkpoint
        before = unsaved.entries[: checkpoint.first - unsaved.first]
        return Checkpoint(checkpoint.head, unsaved.first, [*before, *checkpoint.entries])

    def _hand_off(self, written: Written) -> None:
        if not written.taken:  # (the loop may have written it already)
            written.future = Future()  # before the writer can take it: whoever lands it settles this
            self._pool.submit(_on_writer, written)


def _on_writer(written: Written) -> None:
    if written.taken:
        return
    if (before := written.before) is not None:  # the loop may be writing the previous one: after it
        before.wait()
    if written.take():
        written.land()


def writer_pool() -> ThreadPoolExecutor:
    """The one writer thread of a runner (started with its first checkpoint)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="endstate-checkpoints")
