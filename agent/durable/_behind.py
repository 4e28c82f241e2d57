"""Checkpoints written behind the loop, so that a write overlaps the next model call.

The loop hands each checkpoint over and goes on at once; before a tool starts
and before the segment ends it awaits the last one handed over
(`_loop.durable`). A checkpoint is written by whoever gets to it first:

- the runner's writer thread, to which it is handed as soon as the loop next
  waits on anything (a model call over the network: seconds in production);
- the loop itself, when it reaches the barrier before that (a model that
  answers at once, as in the benchmarks): then it is written right there, as
  a synchronous checkpoint was, without a thread hop. Not in a server
  (`on_loop=False`): there the loop hands it to the writer and waits, so a
  store waiting for a lock never holds the event loop.

A store that can send a statement ahead (PostgreSQL: `send_checkpoint`) needs
no thread: the checkpoint goes to the server at once, the server writes it
while the loop goes on, and the barrier reads its outcome.

The writes of a segment land in the order they were handed over (a write is
taken by the loop only when every earlier one has landed), and awaiting one
waits for every earlier one too and raises the first failure among them: the
last one stands for all. A write that failed is not lost: its entries go with
the segment's next write (the run's last entries, when the run ends as error),
so the journal in the store never has a gap; the segment's last write, if it
failed, goes with the segment's record (`unsaved`). A write the store failed (a
restarted database, a lock held past its timeout, a full disk: a plain
`StoreError`) is written again at the barrier, a few times over some seconds
(`RETRIES`); past them the segment ends there and the runner leaves the run to
recovery, unrecorded, as a crash would (`gave_up`): the store is unreachable, and an
end recorded once it is back would end for good a run that recovery continues. A
lost lease or a refused write is final at once (the run ends as error).

A finished or limited run's last checkpoint that holds no tool's result (the
final reply and the stop, typically) is not written on its own: it goes with
the segment's record (`unsaved` too), in one statement with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from agent.durable.store import Lease, StoreError, StoreTimeout
from agent.journal import Result, Started
from agent.snapshot import Checkpoint, SnapshotKind

log = logging.getLogger("endstate.runner")
RETRIES = (0.5, 1.0, 2.0, 4.0)  # seconds before each new attempt at a checkpoint that failed
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

    def failed(self, exc: BaseException) -> None:
        """It could not even be started (nobody writes it now): it landed, failing with `exc`."""
        self.take()
        self.error, self.done = exc, True

    def wait(self) -> None:
        """On the writer thread: return when this write has landed, whoever writes it. One never
        handed to the writer was taken by the loop, which writes it before it hands over the next."""
        if self.future is not None:
            self.future.exception()

    def __await__(self) -> Generator[Any, None, None]:
        """Wait for this write and every earlier one; raise the first failure among them that
        writing again a few times (`RETRIES`: a restarted database, a lock held a while) did not mend."""
        failure = yield from self._landed()
        if failure is not None and retryable(failure):
            failure = yield from self._behind.again(failure).__await__()
        if failure is not None:
            raise failure

    def _landed(self) -> Generator[Any, None, BaseException | None]:
        """Wait for this write and every earlier one; the first failure among them, if any."""
        failure: BaseException | None = None
        if (before := self.before) is not None:  # earlier writes first: they stay in order
            failure = yield from before._landed()
            self.before = None
        if self._behind.on_loop and self.take():  # the writer thread has not started it: write it here
            self.land()
        elif not self.done:  # the writer thread has it (so it has a future), or gets it now
            if self.future is None:
                self._behind._hand_off(self)
            assert self.future is not None
            with contextlib.suppress(Exception):  # how it went is in `error`
                yield from asyncio.shield(asyncio.wrap_future(self.future)).__await__()
        return failure or self.error


class Behind:
    """The checkpointer of one segment: each call hands one checkpoint over and returns at once."""

    def __init__(
        self,
        pool: ThreadPoolExecutor,
        write: Write,
        lease: Callable[[], Lease],
        now: Callable[[], float],
        send: Send | None = None,
        on_loop: bool = True,
        lease_check: Callable[[], Awaitable[None] | None] | None = None,
    ) -> None:
        self._pool, self._write, self._lease, self._now, self._send = pool, write, lease, now, send
        self.on_loop = on_loop  # the loop may write a checkpoint the writer has not taken yet
        # before a tool starts (`_loop.run_tool`): None while the lease is surely still held, else the
        # lease confirmed (`LeaseLost` when another worker took the run meanwhile)
        self.lease_check = lease_check
        self._last: Written | None = None
        self._unsaved: Checkpoint | None = None  # a checkpoint that failed: its entries go with the next
        self.gave_up: BaseException | None = None  # the store's failure that outlasted `RETRIES`

    @property
    def unsaved(self) -> Checkpoint | None:
        """The entries (and latest head) of writes that failed and no later write carried: the
        segment's record writes them, so a last checkpoint that failed loses nothing either."""
        return self._unsaved

    def __call__(self, checkpoint: Checkpoint) -> Written | None:
        if self.gave_up is not None:  # the store failed past the retries: this is the segment's end,
            self._unsaved = self._with_unsaved(checkpoint)  # which the runner leaves unrecorded
            return None
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
        except Exception as exc:  # not even sent: awaiting it writes it again, or the next write or
            self._unsaved = checkpoint  # the segment's record carries it
            written.failed(exc)
        self._last = written
        return written

    async def again(self, failure: BaseException) -> BaseException | None:
        """Write the unsaved entries again after each pause of `RETRIES`; None once they are written
        (or a later write carried them), else the last failure."""
        for delay in RETRIES:
            if self._unsaved is None:
                return None
            log.warning("a checkpoint was not written (%s); trying again in %.1f s", failure, delay)
            await asyncio.sleep(delay)
            try:
                await asyncio.get_running_loop().run_in_executor(self._pool, self._write_unsaved)
            except Exception as exc:
                if not retryable(exc):
                    return exc
                failure = exc
            else:
                return None
        self.gave_up = failure
        return failure

    def _write_unsaved(self) -> None:
        if (unsaved := self._unsaved) is not None:
            self.write(unsaved, self._lease(), self._now())

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
        if not written.taken and written.future is None:  # (the loop may have written or handed it)
            written.future = Future()  # before the writer can take it: whoever lands it settles this
            self._pool.submit(_on_writer, written)


def retryable(exc: BaseException) -> bool:
    """A store that failed as such (a connection refused, a lock held past its timeout, a full disk,
    a server that did not answer in time): not a lease another worker took, nor a write the database
    refused, which no retry mends."""
    return type(exc) in (StoreError, StoreTimeout)


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
