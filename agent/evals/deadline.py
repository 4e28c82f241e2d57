"""A deadline per eval case: a case that hangs (a judge or a catalog's `build()` stuck in sync code, a
model that never answers an agent with no time budget) ends as a failed case that says in which
phase it timed out, and the other cases still run.

Each case runs on a daemon thread with its own event loop, so sync code that blocks cannot stop the
eval from keeping time. At the deadline the case's task is cancelled: a run in flight ends `cancelled`
(its hooks and checkpoint record it) within `GRACE` seconds when it is awaiting, and the case reports
what it reached. A thread stuck in sync code cannot be killed: it is left behind, and being a daemon
thread it never keeps the process from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from agent.finish import FINISH_TOOL
from agent.hooks import RunInfo, RunObserver

if TYPE_CHECKING:
    from agent.models.base import ModelReply, ToolCall
    from agent.result import RunResult

T = TypeVar("T")

DEFAULT_TIMEOUT = 1800.0  # seconds a case may take on top of its agent's time budget, unless set
MAX_TIMEOUT = 86400.0  # a day: the most a case's `timeout:` or `--case-timeout` may say
GRACE = 5.0  # the most seconds a run cut at the deadline is given to end `cancelled` and be recorded


class Phase(StrEnum):
    """Where a case was when its deadline passed."""

    BUILD = "build"  # the case's world and agent: a catalog's prepare() and build(), a fixture
    RUN = "run"  # the agent's run segments: model calls, tools
    VERIFY = "verify"  # the agent's verifiers checking a "done"
    JUDGE = "judge"  # the eval's judges, and the replay's comparison
    CLEANUP = "cleanup"  # a catalog entry's cleanup()


@dataclass(frozen=True)
class TimedOut:
    """A case its deadline cut: where it was, and the deadline in seconds."""

    phase: Phase
    seconds: float

    def __str__(self) -> str:
        return f"timed out in its {self.phase} phase after {self.seconds:g}s (the case's deadline)"

    def to_dict(self) -> dict[str, Any]:
        return {"phase": str(self.phase), "seconds": self.seconds}


class CaseExit(Exception):
    """What a case raised that is no `Exception` (a judge's `sys.exit`, its own `KeyboardInterrupt`):
    the case could not run, and the eval goes on."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


class Expired(BaseException):
    """Raised in a case's thread as it enters a phase after its deadline: the case stops there.
    A `BaseException`, so that no handler of a failing case takes it for the case's own failure."""


@dataclass
class Watch:
    """A case's deadline and phase, shared by its thread (which moves the phase on) and the eval
    (which cuts it). `chosen` is False for the default deadline, which grows by the agent's own time
    budget once the agent is built (`budgeted`)."""

    seconds: float
    chosen: bool = True
    phase: Phase = Phase.BUILD
    results: list[RunResult] = field(default_factory=list)  # each run segment's result, as it ends
    started: float = field(default_factory=time.monotonic)
    expired: threading.Event = field(default_factory=threading.Event)

    @property
    def deadline(self) -> float:
        return self.started + self.seconds

    def enter(self, phase: Phase) -> None:
        """Move on to `phase`; `Expired` once the deadline has passed."""
        if self.expired.is_set():
            raise Expired
        self.phase = phase

    def ran(self, result: RunResult) -> RunResult:
        """Keep a run segment's result, so a case cut later still shows how its runs ended."""
        self.results.append(result)
        return result

    def budgeted(self, seconds: float | None) -> None:
        """A default deadline grows by the built agent's time budget: a healthy run may use it all."""
        if not self.chosen and seconds:
            self.seconds += seconds

    def expire(self) -> TimedOut:
        self.expired.set()
        return TimedOut(self.phase, self.seconds)


async def bounded(work: Callable[[], Awaitable[T]], watch: Watch) -> T | TimedOut:
    """`work()` on a daemon thread with its own event loop; `TimedOut` when `watch`'s deadline passes
    first (the work's task cancelled, and a run in flight given up to `GRACE` seconds to end)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    case = _CaseThread(work, done)
    case.start()
    try:
        while (left := watch.deadline - time.monotonic()) > 0:
            await asyncio.wait({done}, timeout=left)
            if done.done():
                return done.result()
    except asyncio.CancelledError:  # the eval itself is interrupted (Ctrl-C): so is the case's run,
        _abandon(done, watch, case)  # which is given the grace to end `cancelled` and be recorded
        await asyncio.wait({done}, timeout=GRACE)
        raise
    cut = watch.expire()
    _abandon(done, watch, case)
    if cut.phase in (Phase.RUN, Phase.VERIFY):
        await asyncio.wait({done}, timeout=min(GRACE, watch.seconds))
    return cut


def _abandon(done: asyncio.Future[Any], watch: Watch, case: _CaseThread) -> None:
    """Cut the case: its next phase raises `Expired`, its task is cancelled, and what it ends with is
    dropped (retrieved, so that no "exception was never retrieved" is logged from a finalizer)."""
    watch.expire()
    case.cancel()
    done.add_done_callback(lambda f: f.cancelled() or f.exception())


class _CaseThread:
    """A daemon thread running one case's coroutine on its own event loop, in a copy of the caller's
    context; it hands the outcome to `done` (on the caller's loop, when that is still open)."""

    def __init__(self, work: Callable[[], Awaitable[Any]], done: asyncio.Future[Any]) -> None:
        self.work, self.done = work, done
        self.caller = asyncio.get_running_loop()
        self.context = contextvars.copy_context()
        self.task: asyncio.Task[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.lock = threading.Lock()
        self.cancelled = False

    def start(self) -> None:
        thread = threading.Thread(target=self.context.run, args=(self._main,), daemon=True)
        thread.name = "endstate-eval-case"
        thread.start()

    def cancel(self) -> None:
        """Cancel the case's task (at its next await: sync code runs on until it returns)."""
        with self.lock:
            self.cancelled = True
            if self.loop is not None and self.task is not None:
                with contextlib.suppress(RuntimeError):  # its loop has closed: the case ended meanwhile
                    self.loop.call_soon_threadsafe(self.task.cancel)

    def _main(self) -> None:
        try:
            outcome: tuple[bool, Any] = (True, asyncio.run(self._body()))
        except BaseException as exc:  # handed over (or dropped: a case cut at its deadline)
            outcome = (False, exc if isinstance(exc, Exception | Expired) else CaseExit(exc))
        with contextlib.suppress(RuntimeError):  # the eval's loop has closed: nobody waits any more
            self.caller.call_soon_threadsafe(self._settle, *outcome)

    async def _body(self) -> Any:
        with self.lock:
            self.loop, self.task = asyncio.get_running_loop(), asyncio.current_task()
            if self.cancelled:
                raise Expired
        return await self.work()

    def _settle(self, returned: bool, value: Any) -> None:
        if self.done.done():
            return
        if returned:
            self.done.set_result(value)
        else:
            self.done.set_exception(value)


class PhaseHooks:
    """Run hooks that tell a case's `Watch` when its run moves from running to verifying a "done"
    and back, so a deadline passed in a verifier says `verify`."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch

    def run_started(self, info: RunInfo) -> RunObserver:
        return _PhaseObserver(self.watch)


class _PhaseObserver(RunObserver):
    def __init__(self, watch: Watch) -> None:
        self.watch, self.finishing = watch, False

    def turn_started(self, index: int, continued: bool = False) -> None:
        self.finishing, self.watch.phase = False, Phase.RUN

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None:
        self.finishing = reply is not None and any(_is_done(block) for block in reply.content)
        self._after_call()

    def tool_started(self, call: ToolCall) -> None:
        self.watch.phase = Phase.RUN

    def tool_ended(self, call: ToolCall, outcome: Any) -> None:
        self._after_call()

    def verified(self, failures: list[str]) -> None:
        self.finishing, self.watch.phase = False, Phase.RUN

    def _after_call(self) -> None:
        self.watch.phase = Phase.VERIFY if self.finishing else Phase.RUN


def _is_done(block: dict[str, Any]) -> bool:
    """A model's `finish(kind="done")` call: what runs the verifiers next."""
    given = block.get("input")
    return (
        block.get("type") == "tool_use"
        and block.get("name") == FINISH_TOOL
        and isinstance(given, dict)
        and given.get("kind") == "done"
    )
