"""Verifiers: code that confirms a model's "done". Failures go back to the model."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import dataclasses
import functools
import inspect
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agent._aio import in_running_loop
from agent._valid import is_number, is_text, is_whole
from agent.errors import ConfigError, EndstateError, ModelError, TransientModelError
from agent.models.base import (
    PROVIDER_DATA,
    Model,
    ModelReply,
    ModelRequest,
    max_tokens_problem,
    recording_cut_calls,
    refusal_said,
)
from agent.policies import MAX_RETRY_AFTER, RetryPolicy
from agent.stops import MESSAGES_API_STOPS, StopKind
from agent.text import written

DEFAULT_TIMEOUT = 300.0  # seconds any verifier gets, unless it says (command(timeout=), within())
# Seconds past its timeout or the run's time budget that a verifier which stops itself then (`cuts_itself`:
# a judge, whose model call is cut off and charged) is waited for, so that what it used is counted.
CUT_GRACE = 5.0
MOST_JUDGE_PAUSES = 20  # paused turns of a judge sent back before it counts as failed (as the loop's)

if TYPE_CHECKING:
    from agent.context import RunContext


@runtime_checkable
class Verifier(Protocol):
    """Checks the world after the model says it is done.

    Returns the reasons the criterion is not met; an empty list means it is.
    It may be an `async def`. Raising, or returning anything but a list of
    strings, is a bug in the verifier and ends the run as `error`. It runs
    within a timeout (`DEFAULT_TIMEOUT` unless made with one: `within`); one
    that does not finish in it is a failure told to the model.
    """

    def __call__(self, ctx: RunContext) -> list[str]: ...


@dataclass(frozen=True)
class CommandVerifier:
    """A command that must exit 0, such as `pytest -q`."""

    argv: Sequence[str]
    cwd: str | Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    tail_chars: int = 1500
    cut_by_limit: bool = field(default=False, repr=False)  # set by `bounded`: a timeout is the run's

    def __post_init__(self) -> None:
        argv = self.argv
        words = not isinstance(argv, str | bytes) and isinstance(argv, Sequence) and len(argv) > 0
        if not (words and all(isinstance(a, str | os.PathLike) for a in argv)):
            raise ConfigError(
                f"a command verifier needs the command's words as strings, as command('pytest', '-q') "
                f"takes them; got {argv!r:.80}"
            )
        _refuse_one_string(argv, self.cwd)
        t = self.timeout
        if not (is_number(t) and 0 < t < math.inf):
            raise ConfigError(f"a command verifier's timeout is a number of seconds > 0, not {t!r}")
        if not (is_whole(self.tail_chars) and self.tail_chars >= 0):
            raise ConfigError(
                f"a command verifier's tail_chars is a whole number >= 0, not {self.tail_chars!r}"
            )

    def __call__(self, ctx: RunContext) -> list[str]:
        try:
            done = run_as_group(list(self.argv), self.cwd, self.timeout)
        except subprocess.TimeoutExpired:
            if self.cut_by_limit:
                raise BudgetCut(f"`{self.shown}` was stopped: the run's time budget ran out") from None
            return [f"`{self.shown}` did not finish within {self.timeout:g} s"]
        if done.returncode == 0:
            return []
        tail = (
            (done.stdout + done.stderr)[-self.tail_chars :].strip() if self.tail_chars else ""
        )  # [-0:]: all
        return [f"`{self.shown}` exited {done.returncode}" + (f":\n{tail}" if tail else "")]

    @property
    def shown(self) -> str:
        """The command as its failures name it (a path among its words as the path)."""
        return " ".join(str(os.fspath(a)) for a in self.argv)

    def bounded(self, seconds: float) -> CommandVerifier:
        """This command, killed after at most `seconds` (the time left in the run)."""
        if seconds >= self.timeout:
            return self
        return dataclasses.replace(self, timeout=seconds, cut_by_limit=True)


def run_as_group(argv: list[str], cwd: str | Path | None, timeout: float) -> subprocess.CompletedProcess[str]:
    """`argv` run to its end within `timeout` seconds, its output read as text (what is no UTF-8 is
    replaced: a latin-1 name, binary); `TimeoutExpired` past them. The command runs in a process
    group of its own, and past its timeout the whole group is killed: what it started (a `make`'s
    test run, a shell's children, a suite's server) never outlives a check that overran, one more
    for every such run of a long-lived process."""
    with subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
        start_new_session=True,
    ) as process:  # fmt: skip
        _RUNNING_GROUPS.add(process)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except BaseException:  # past the timeout (or the thread's caller gave up on it)
            _kill_group(process)
            raise
        finally:
            _RUNNING_GROUPS.discard(process)
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


# The commands running now. In a session of their own, a terminal's Ctrl-C no longer reaches them:
# a process that exits mid-check (Ctrl-C, SIGTERM, the end of a script) kills them as it goes.
_RUNNING_GROUPS: set[subprocess.Popen[str]] = set()


@atexit.register
def _kill_running_groups() -> None:
    for process in list(_RUNNING_GROUPS):
        with contextlib.suppress(OSError):
            _kill_group(process)


def _kill_group(process: subprocess.Popen[str]) -> None:
    """Kill `process` and every process of its group, and reap it."""
    if hasattr(os, "killpg"):  # POSIX; elsewhere the command's own process only
        with contextlib.suppress(ProcessLookupError):  # gone, and every one of its group with it
            os.killpg(process.pid, signal.SIGKILL)  # its group's id is its pid (`start_new_session`)
    process.kill()
    process.wait()


@dataclass(frozen=True)
class PredicateVerifier:
    """A predicate over the run's context, with the reason to give when it fails."""

    predicate: Callable[[RunContext], bool]
    reason: str
    timeout: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        check_timeout("predicate()", self.timeout)
        if not callable(self.predicate):
            raise ConfigError(
                f"predicate() takes a function of the RunContext, not {type(self.predicate).__name__}"
            )
        if not is_text(self.reason):
            raise ConfigError(
                f"predicate() needs the reason to give when it fails, as text; got {self.reason!r}"
            )

    def __call__(self, ctx: RunContext) -> list[str]:
        held = self.predicate(ctx)
        if inspect.isawaitable(held):  # an `async def` check: its answer, not the coroutine (always true)
            held = _in_new_loop(_awaited(held))
        return [] if held else [self.reason]


def _refuse_one_string(argv: Sequence[str], cwd: str | Path | None) -> None:
    """Refuse a whole command line in one word (`command("python -m pytest")`): no shell splits it,
    so each `done` ended the run `error` (FileNotFoundError), after the model's paid turns."""
    line = argv[0]
    if len(argv) != 1 or not isinstance(line, str) or len(line.split()) < 2:
        return
    if shutil.which(line) is None and not (Path(cwd or ".") / line).exists():
        try:
            split = shlex.split(line)
        except ValueError:  # an unclosed quote
            split = line.split()
        words = ", ".join(repr(w) for w in split)
        raise ConfigError(
            f"command({line!r}) names one program of that whole name, and there is none: no shell splits "
            f"it, so give the command's words apart: command({words})"
        )


def command(*argv: str, cwd: str | Path | None = None, timeout: float = DEFAULT_TIMEOUT) -> CommandVerifier:
    """A verifier that passes when the command exits 0."""
    return CommandVerifier(argv, cwd=cwd, timeout=timeout)


def predicate(
    check: Callable[[RunContext], bool], reason: str, timeout: float = DEFAULT_TIMEOUT
) -> PredicateVerifier:
    """A verifier that passes when `check(ctx)` is true (a failure when it takes over `timeout` s)."""
    return PredicateVerifier(check, reason, timeout)


@dataclass(frozen=True)
class Within:
    """Any verifier (a plain function, an `async def`) with its own timeout in seconds."""

    timeout: float
    verifier: Verifier

    def __post_init__(self) -> None:
        check_timeout("within()", self.timeout)
        if not callable(self.verifier):
            raise ConfigError(
                "within(seconds, verifier) takes a function of the RunContext, "
                f"not {type(self.verifier).__name__}"
            )

    def __call__(self, ctx: RunContext) -> list[str]:
        return self.verifier(ctx)  # an `async def` one's coroutine is awaited by whoever runs it

    def bounded(self, seconds: float) -> Within:
        """The verifier bounded by `seconds` (a command inside is killed then)."""
        return dataclasses.replace(self, verifier=_bounded(self.verifier, seconds))


def within(seconds: float, verifier: Verifier) -> Within:
    """`verifier`, failed when it does not finish within `seconds` (default for any verifier: 300 s)."""
    return Within(seconds, verifier)


def check_timeout(maker: str, seconds: object) -> None:
    """A `ConfigError` saying what to write, unless `seconds` is a number of seconds > 0."""
    if not (is_number(seconds) and 0 < seconds < math.inf):
        raise ConfigError(
            f"{maker}'s timeout is a number of seconds > 0 that the verifier gets before it counts as "
            f"failed, say timeout=600; not {seconds!r}"
        )


@dataclass(frozen=True)
class AllOf:
    """Every verifier must pass; the failures of all of them are reported."""

    verifiers: tuple[Verifier, ...]

    def __post_init__(self) -> None:
        if not self.verifiers or not all(callable(v) for v in self.verifiers):
            given = [type(v).__name__ for v in self.verifiers]
            raise ConfigError(
                f"all_of() takes one or more verifiers (functions of the RunContext), not {given}"
            )

    def __call__(self, ctx: RunContext) -> list[str]:
        failures: list[str] = []
        for verifier in self.verifiers:
            value = verifier(ctx)
            if inspect.isawaitable(value):  # an `async def` one: run to its end on this thread's own loop
                value = _in_new_loop(_awaited(value))
            failures.extend(reasons_of(verifier, value))  # a part's wrong answer named as at the top
        return failures

    @property
    def timeout(self) -> float:
        """Its parts' timeouts added up: they run one after another (`run_verifiers` runs each apart)."""
        return seconds_for(self.verifiers)

    def bounded(self, seconds: float) -> AllOf:
        """Each part bounded by `seconds` (`run_verifiers` bounds the whole)."""
        return AllOf(tuple(_bounded(v, seconds) for v in self.verifiers))


def all_of(*verifiers: Verifier) -> AllOf:
    """Combine verifiers; the run succeeds only when all of them pass."""
    return AllOf(tuple(verifiers))


# -- running verifiers for the loop -------------------------------------------------------------


class BudgetCut(Exception):
    """A verifier was stopped because the run's time budget ran out (not a failure of its own)."""


class VerifierError(EndstateError):
    """A verifier raised something that is not an `Exception` (such as `SystemExit`)."""


class JudgeRefused(EndstateError):
    """The model an `EvaluatorVerifier` judges with refused to judge (the API's `stop_reason: "refusal"`).
    No `finish` the agent makes can be judged then: the loop ends the run `gave_up` with cause
    `refusal`, as for a refusal of the agent's own model (an audit's outcome is `error`)."""


class Unfinished(EndstateError):
    """A verifier did not finish within its own timeout (its thread is left behind)."""


@dataclass(frozen=True)
class Verdict:
    """What the verifiers said: the reasons a criterion is not met, and whether time ran out.

    With `budget_cut` the verifiers did not all finish: the run's time budget
    ran out first, and `failures` holds only what finished before.
    """

    failures: list[str]
    budget_cut: bool = False


async def run_verifiers(
    verifiers: Sequence[Verifier], ctx: RunContext, limit: float | None = None
) -> Verdict:
    """Run `verifiers` in order off the event loop, each within its own timeout, all within `limit`
    seconds when given.

    A verifier still running at its own timeout (300 s unless it says: `command(timeout=)`,
    `predicate(timeout=)`, `within()`) is a failure the model is told of, and is abandoned on its
    daemon thread (a command's process killed); `all_of`'s parts are run as verifiers of their own.
    At the `limit` a command's process is killed and any other verifier abandoned, and no further
    verifier starts: the verdict is `budget_cut`. A verifier that raises an `Exception` raises it
    here (the loop ends the run `error`); `SystemExit` and other non-`Exception`s are raised as
    `VerifierError`; `KeyboardInterrupt` as `asyncio.CancelledError` (the run ends `cancelled`).
    """
    deadline = None if limit is None else time.monotonic() + limit
    failures: list[str] = []
    for verifier in parts(verifiers):
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return Verdict(failures, budget_cut=True)
        try:
            failures.extend(await _run_one(verifier, ctx, left))
        except Unfinished as exc:  # told to the model: its code may be what hangs
            failures.append(str(exc))
        except BudgetCut:
            return Verdict(failures, budget_cut=True)
    return Verdict(failures)


async def check_once(verifier: Verifier, ctx: RunContext) -> list[str]:
    """One verifier run off the event loop within its own timeout, for a caller that must not take a
    hung check for a failed one (a success audit): `Unfinished` past the timeout."""
    return await _run_one(verifier, ctx, None)


def parts(verifiers: Sequence[Verifier]) -> list[Verifier]:
    """`verifiers` with each `all_of` replaced by its parts (the same checks, each with its own
    timeout: one hung part is named, the others still run)."""
    return [p for v in verifiers for p in (parts(v.verifiers) if isinstance(v, AllOf) else [v])]


def timeout_of(verifier: Verifier) -> float | None:
    """The seconds `verifier` gets: the timeout it was made with (`command`, `predicate`,
    `evaluator`, `within`, `all_of`'s parts added up), else `DEFAULT_TIMEOUT` (a `timeout` attribute
    of a class of yours may mean something else, say its HTTP client's); None when it says it is
    bounded elsewhere (`bounded_elsewhere`: the Temporal workflow's verify activity)."""
    if getattr(verifier, "bounded_elsewhere", False) is True:
        return None
    if isinstance(verifier, CommandVerifier | PredicateVerifier | EvaluatorVerifier | Within | AllOf):
        return verifier.timeout
    return DEFAULT_TIMEOUT


def seconds_for(verifiers: Sequence[Verifier]) -> float:
    """How long `verifiers` may take, one after another, each to its own timeout."""
    return sum(timeout_of(v) or DEFAULT_TIMEOUT for v in parts(verifiers))


def unfinished(verifier: Verifier, seconds: float) -> str:
    """The failure the model is told of when `verifier` ran out its own timeout."""
    return f"`{shown(verifier)}` did not finish within {seconds:g} s"


def shown(verifier: Verifier) -> str:
    """How a failure names `verifier`: a command's words, a function's name, the judge's model."""
    if isinstance(verifier, Within):
        return shown(verifier.verifier)
    if isinstance(verifier, CommandVerifier):
        return verifier.shown
    if isinstance(verifier, EvaluatorVerifier):
        return f"evaluator({verifier.model.name})"
    named: Any = verifier.predicate if isinstance(verifier, PredicateVerifier) else verifier
    while isinstance(named, functools.partial):
        named = named.func
    return str(getattr(named, "__name__", None) or type(named).__name__)


async def _run_one(verifier: Verifier, ctx: RunContext, left: float | None) -> list[str]:
    try:
        return await _timed(verifier, ctx, left)
    except asyncio.CancelledError as exc:
        from agent.tools import run_cancelled

        if run_cancelled():
            raise  # the run itself is cancelled
        told = await said_by(exc, left) or "no message"
        raise VerifierError(f"CancelledError raised inside the verifier ({told})") from exc
    except Exception:
        raise
    except KeyboardInterrupt as exc:
        raise asyncio.CancelledError("a verifier was interrupted (KeyboardInterrupt)") from exc
    except BaseException as exc:  # SystemExit, GeneratorExit: the verifier's failure
        raise VerifierError(f"{type(exc).__name__}: {await said_by(exc, left)}") from exc


async def said_by(exc: BaseException, left: float | None) -> str:
    """What a verifier's exception says, read off the event loop (its `__str__` is the verifier's code
    too) within `SAY_SECONDS`, and within `left` (the run's time left) when given."""
    from agent.tools import SAY_SECONDS, said_within

    return await said_within(exc, SAY_SECONDS if left is None else min(SAY_SECONDS, left))


async def _timed(verifier: Verifier, ctx: RunContext, left: float | None) -> list[str]:
    """The verifier's failures; `Unfinished` at its own timeout; `BudgetCut` at the limit."""
    own = timeout_of(verifier)
    by_limit = left is not None and (own is None or left <= own)
    checked = _bounded(verifier, left) if left is not None else verifier
    check = functools.partial(checked, ctx)
    grace = CUT_GRACE if getattr(checked, "cuts_itself", False) is True else 0.0
    seconds = left if by_limit else own
    if seconds is None:  # bounded elsewhere (the Temporal verify activity), no budget: no timer at all
        return await _checked(verifier, check)
    scope = asyncio.timeout(seconds + grace)
    try:  # the coroutine made where it is awaited: none left unawaited if entering the timeout fails
        async with scope:
            return await _checked(verifier, check)
    except TimeoutError:
        if not scope.expired():
            raise  # the verifier's own TimeoutError: it raised, as any other exception
        if by_limit:
            raise BudgetCut from None
        assert own is not None  # by_limit otherwise
        raise Unfinished(unfinished(verifier, own)) from None


async def _checked(verifier: Verifier, check: Callable[[], Any]) -> list[str]:
    """`check()`'s failure reasons, each step off the event loop."""
    from agent.tools import _in_daemon_thread  # the tools' pool: no hung check blocks exit

    value = await _settled(_in_daemon_thread(check, {}))
    if (plain := _plain_reasons(value)) is not None:
        return plain
    # a value of the verifier's own type: its `__iter__` or `__repr__` runs, off the loop
    reasons: list[str] = await _in_daemon_thread(reasons_of, {"verifier": verifier, "value": value})
    return reasons


def checked_in_thread(verifier: Verifier, check: Callable[[], Any]) -> list[str]:
    """For a caller with no event loop to spare (a foreign run's end): `check()`, a call of `verifier`,
    on a daemon thread within the verifier's own timeout. Its failure reasons; past the timeout a
    failure saying so (the thread abandoned); what it raised is raised here."""
    seconds = timeout_of(verifier)
    outcome: list[tuple[bool, Any]] = []
    context = contextvars.copy_context()

    def job() -> None:
        try:  # its reasons read here too: a value of its own type (a list subclass) runs its own code
            outcome.append((True, reasons_of(verifier, context.run(check))))
        except BaseException as exc:  # handed to the caller
            outcome.append((False, exc))

    thread = threading.Thread(target=job, name=f"endstate-verifier-{shown(verifier)}", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        assert seconds is not None  # joined to the end otherwise
        return [unfinished(verifier, seconds)]
    [(returned, value)] = outcome
    if not returned:
        raise value
    reasons: list[str] = value
    return reasons


async def _settled(work: Any) -> Any:
    """A verifier's return value; an `async def` verifier's coroutine is awaited on the loop (and left
    behind when it goes on after the deadline cancels it: see `agent.tools.driven`)."""
    from agent.tools import driven

    value = await work
    if inspect.iscoroutine(value):
        return await driven(value)
    return await value if inspect.isawaitable(value) else value


def _plain_reasons(value: Any) -> list[str] | None:
    """`reasons_of(value)` when reading it runs no code of the verifier's: a built-in list or tuple of
    built-in strings; else None."""
    if type(value) in (list, tuple) and all(type(r) is str for r in value):
        return list(value)
    return None


def reasons_of(verifier: Verifier, value: Any) -> list[str]:
    """The failure reasons a verifier returned, or a `VerifierError` saying what it should return."""
    if isinstance(value, list | tuple) and all(isinstance(r, str) for r in value):
        return [str.__str__(r) for r in value]  # plain copies: a subclass's own methods never run
    raise VerifierError(
        f"verifier {shown(verifier)!r} returned {written(value):.60} ({type(value).__name__}): a verifier "
        "returns a list of the reasons the check failed, as strings, and [] when it passed"
    )


def _bounded(verifier: Verifier, seconds: float) -> Verifier:
    """`verifier` with its own timeouts at most `seconds`, when it has a `bounded` method."""
    bound = getattr(verifier, "bounded", None)
    return bound(seconds) if callable(bound) else verifier


# -- a second model as the judge -------------------------------------------------

VERDICT_TOOL = "verdict"
VERDICT_SPEC: dict[str, Any] = {
    "name": VERDICT_TOOL,
    "description": "Give your verdict: passed=true only when every criterion is met; else the reasons.",
    "input_schema": {
        "type": "object",
        "properties": {
            "passed": {"type": "boolean"},
            "reasons": {
                "type": "array",
                "items": {"type": "string"},
                "description": "One line per criterion not met, saying what is missing. Empty when passed.",
            },
        },
        "required": ["passed", "reasons"],
        "additionalProperties": False,
    },
}

JUDGE_INSTRUCTIONS = (
    "You check another agent's work. You get its task, the criteria the result must meet, "
    "its final report and the last tool calls it made with their results. Judge only from "
    "that evidence; a claim the evidence does not show is not met. Call the verdict tool once."
)


@dataclass(frozen=True)
class EvaluatorVerifier:
    """A second model judges a `finish(done)` against `criteria`.

    A rejection returns the judge's reasons, which go back to the agent as
    the result of its `finish` call. The judge's tokens and cost count in the
    run's budget: each call is charged to the run (`RunContext.charge`).
    Transient failures of the judge are retried (`retry`); one that still
    fails raises (the run ends as `error`, as for any verifier that raises).
    A judge that answers without a verdict is a rejection saying so, so the
    agent's next `finish` asks again.
    """

    model: Model
    criteria: Sequence[str]
    max_tokens: int = 4096  # a judge that thinks spends some first; only the tokens used are billed
    instructions: str = JUDGE_INSTRUCTIONS
    recent_calls: int = 20
    result_chars: int = 800
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(max_attempts=3))
    timeout: float = DEFAULT_TIMEOUT  # the judging, retries too; past it, a failure told to the agent
    deadline: float | None = field(default=None, repr=False, compare=False)  # set by `bounded`

    def __post_init__(self) -> None:
        check_timeout("evaluator()", self.timeout)
        if not (
            callable(getattr(self.model, "complete", None))
            and isinstance(getattr(self.model, "name", None), str)
        ):
            raise ConfigError(
                f"EvaluatorVerifier needs a model to judge with, such as AnthropicModel('claude-haiku-4-5'), "
                f"not {self.model!r:.60} ({type(self.model).__name__})"
            )
        if isinstance(self.criteria, str) or not self.criteria:
            raise ConfigError("EvaluatorVerifier needs criteria: a list of one or more strings")
        for name, least in (("max_tokens", 1), ("recent_calls", 0), ("result_chars", 0)):
            if not (is_whole(value := getattr(self, name)) and value >= least):
                raise ConfigError(
                    f"EvaluatorVerifier.{name} must be a whole number >= {least}, not {value!r}"
                )
        if (problem := max_tokens_problem(self.model, self.max_tokens)) is not None:
            raise ConfigError(f"EvaluatorVerifier: {problem}")

    cuts_itself = True  # it stops its own call at its timeout and the run's budget: waited for, a little

    def bounded(self, seconds: float) -> EvaluatorVerifier:
        """This judge, its model call cut off once `seconds` (the run's time left) have passed, and
        what the cut call used charged to the run, as a cut call of the agent's own model is."""
        return dataclasses.replace(self, deadline=time.monotonic() + seconds)

    def __call__(self, ctx: RunContext) -> list[str]:
        reply: ModelReply = _in_new_loop(self._judged(ctx, *self._cut_at()))
        if (reply.stop or MESSAGES_API_STOPS[reply.stop_reason]) is StopKind.REFUSED:
            provider_data = reply.extra.get(PROVIDER_DATA)
            said = refusal_said(reply.stop_reason, provider_data if isinstance(provider_data, dict) else {})
            raise JudgeRefused(
                f"The evaluator's model ({self.model.name}) refused to judge the result {said}"
            )
        reasons = verdict(reply)
        if reasons is NO_VERDICT_CUT_OFF:  # the agent cannot fix this: another `finish` is cut off too
            raise VerifierError(
                f"the judge's reply ({self.model.name}) was cut off at max_tokens={self.max_tokens} before "
                "its verdict (a model that thinks spends tokens on it first): raise EvaluatorVerifier's "
                "max_tokens"
            )
        return reasons

    def _cut_at(self) -> tuple[float, bool]:
        """When the judging stops (`time.monotonic()`), and whether it is the run's time budget that
        stops it then (else its own `timeout`)."""
        own = time.monotonic() + self.timeout
        if self.deadline is not None and self.deadline <= own:
            return self.deadline, True
        return own, False

    def _cut(self, by_budget: bool) -> Exception:
        """What stopping the judging raises: the budget's `BudgetCut`, or `Unfinished` at its timeout."""
        if by_budget:
            return BudgetCut("the run's time budget ran out while the judge judged")
        return Unfinished(unfinished(self, self.timeout))

    async def _judged(self, ctx: RunContext, until: float, by_budget: bool) -> ModelReply:
        """The judge's answer, by `until`. A paused turn (a server tool of the judge's model still working)
        is sent back to go on, as the loop does with the agent's model, at most `MOST_JUDGE_PAUSES` times."""
        request = ModelRequest.of_messages(
            self.instructions, [{"role": "user", "content": self.brief(ctx)}], [VERDICT_SPEC], self.max_tokens
        )
        for _ in range(MOST_JUDGE_PAUSES):
            reply = await self._answered(request, ctx, until, by_budget)
            if (reply.stop or MESSAGES_API_STOPS[reply.stop_reason]) is not StopKind.PAUSED:
                return reply
            journal = (*request.journal, reply.entry(reply.parts))
            request = ModelRequest(request.system, journal, request.tools, request.max_tokens)
        raise VerifierError(
            f"the judge's model ({self.model.name}) paused {MOST_JUDGE_PAUSES} times, with no verdict"
        )

    async def _answered(
        self, request: ModelRequest, ctx: RunContext, until: float, by_budget: bool
    ) -> ModelReply:
        """One answer of the judge's model to `request`, transient failures retried (`retry`)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                reply = await self._call(request, ctx, until, by_budget)
            except TransientModelError as exc:
                delay = self.retry.delay(attempt, exc.retry_after)
                if delay is None:
                    raise
                if delay > MAX_RETRY_AFTER:  # as the loop's own model calls: no run sleeps through it
                    raise VerifierError(
                        f"the judge's model API asked to wait {delay:g} s (retry-after), more than the "
                        f"{MAX_RETRY_AFTER:g} s a run waits out: {exc}"
                    ) from exc
                if time.monotonic() + delay >= until:
                    raise self._cut(by_budget) from exc
                await asyncio.sleep(delay)
                continue
            ctx.charge(self.model.name, reply)
            return reply

    async def _call(
        self, request: ModelRequest, ctx: RunContext, until: float, by_budget: bool
    ) -> ModelReply:
        """One call of the judge's model, cut off at `until` (`_cut`); a call cut off, or whose stream
        broke, is charged to the run for what the adapter recorded it used."""
        left = max(0.0, until - time.monotonic())
        with recording_cut_calls(left) as cut:
            try:
                async with asyncio.timeout(left) as scope:
                    return await self.model.complete(request)
            except (TimeoutError, asyncio.CancelledError, ModelError) as exc:
                for partial in cut:
                    ctx.charge(self.model.name, partial)
                if isinstance(exc, TimeoutError) and scope.expired():
                    raise self._cut(by_budget) from None
                raise

    def brief(self, ctx: RunContext) -> str:
        """What the judge is shown: task, criteria, the agent's report, its last calls."""
        criteria = "\n".join(f"{i}. {c}" for i, c in enumerate(self.criteria, 1))
        calls = [
            f"- {c.name}({json.dumps(c.arguments, sort_keys=True)}) -> "
            f"{'ERROR ' if c.is_error else ''}{c.result[: self.result_chars]}"
            for c in (ctx.calls[-self.recent_calls :] if self.recent_calls else [])  # [-0:] is every call
        ]
        return (
            f"<task>\n{ctx.task}\n</task>\n<criteria>\n{criteria}\n</criteria>\n"
            f"<final_report>\n{ctx.note}\n</final_report>\n"
            f"<tool_calls>\n{chr(10).join(calls) or '(none)'}\n</tool_calls>"
        )


def evaluators(verifiers: Sequence[Verifier]) -> list[EvaluatorVerifier]:
    """The evaluator verifiers among `verifiers`, those inside `all_of` too (their models need a price
    under a cost budget, wherever they sit)."""
    found: list[EvaluatorVerifier] = []
    for v in verifiers:
        if isinstance(v, EvaluatorVerifier):
            found.append(v)
        elif isinstance(v, AllOf):
            found.extend(evaluators(v.verifiers))
    return found


def evaluator(model: Model, *criteria: str, **options: Any) -> EvaluatorVerifier:
    """A verifier that passes when a second model judges every criterion met."""
    return EvaluatorVerifier(model, criteria, **options)


def verdict(reply: ModelReply) -> list[str]:
    """The reasons a judge's reply rejects the work (empty when it passes); `NO_VERDICT_CUT_OFF` when
    the reply was cut off at its output limit before any verdict."""
    found = next((c.arguments for c in reply.tool_calls if c.name == VERDICT_TOOL), None)
    if found is None:
        found = _json_verdict(reply.text)
    if found is None and (reply.stop or MESSAGES_API_STOPS[reply.stop_reason]) is StopKind.MAX_TOKENS:
        return NO_VERDICT_CUT_OFF
    if found is None or not isinstance(found.get("passed"), bool):
        said = reply.text[:200] or "nothing"
        return [f"The evaluator gave no verdict (it said: {said}); call finish again to be judged."]
    if found["passed"]:
        return []
    given = found.get("reasons")  # a list by the schema; a model may send one reason as text, or worse
    items = given if isinstance(given, list) else [] if given is None else [given]
    reasons = [str(r) for r in items if str(r).strip()]
    return reasons or ["The evaluator rejected the result without a reason."]


NO_VERDICT_CUT_OFF: list[str] = ["The evaluator's reply was cut off before its verdict."]


def _json_verdict(text: str) -> dict[str, Any] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        parsed = json.loads(text[start : end + 1])
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _in_new_loop(coro: Any) -> Any:
    """Run a coroutine of a verifier (the judge's call, an `async def` part of `all_of`): verifiers run
    in a worker thread, which has no event loop of its own."""
    if not in_running_loop():
        return asyncio.run(coro)
    coro.close()
    raise ConfigError(
        "a verifier that awaits (an EvaluatorVerifier, or all_of with an async def part) was called inside "
        "a running event loop; the loop calls it in a thread"
    )


async def _awaited(value: Any) -> Any:
    return await value
