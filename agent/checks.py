"""Checks that run after every turn and may end the run (seed 000's "check every turn").

A goal check ends the run as `success` as soon as the goal state is reached,
whether or not the model has noticed; an invariant ends it as `error` the
moment the world is in a state it must never be in. Both read the run as
tools do (`RunContext`) and should be cheap: they run after every turn.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agent.context import RunContext
from agent.errors import ConfigError
from agent.stops import StopReason


@dataclass(frozen=True)
class TurnVerdict:
    """A check's decision to end the run now."""

    reason: StopReason  # success (the goal is reached) or error (an invariant broke)
    note: str
    error_type: str | None = None

    def __post_init__(self) -> None:
        """Only a goal (success) or a broken invariant (error) ends a run from a check: any other
        reason would end it without what that reason needs (need_help its question and snapshot,
        limit its budget), or with no named reason at all."""
        if self.reason not in _VERDICTS:
            raise ConfigError(
                f"a TurnVerdict's reason is 'success' (a goal reached) or 'error' (an invariant broke), "
                f"not {self.reason!r}"
            )
        object.__setattr__(self, "reason", StopReason(self.reason))  # "success" as the enum
        if not isinstance(self.note, str):
            raise ConfigError(f"a TurnVerdict's note is a string, not {type(self.note).__name__}")
        if self.error_type is not None and not isinstance(self.error_type, str):
            raise ConfigError(f"a TurnVerdict's error_type is a string or None, not {self.error_type!r}")


_VERDICTS = (StopReason.SUCCESS, StopReason.ERROR)


class TurnCheck(Protocol):
    """Looks at the run after a turn: a `TurnVerdict` ends it, None lets it go on."""

    def __call__(self, ctx: RunContext) -> TurnVerdict | None: ...


@dataclass(frozen=True)
class Goal:
    """Ends the run as `success` (verified) once `reached(ctx)` holds."""

    reached: Callable[[RunContext], bool]
    output: str

    def __post_init__(self) -> None:
        _check_made("goal", self.reached, self.output, "the output the run ends with")

    def __call__(self, ctx: RunContext) -> TurnVerdict | None:
        return TurnVerdict(StopReason.SUCCESS, self.output) if _held(self.reached(ctx)) else None


@dataclass(frozen=True)
class Invariant:
    """Ends the run as `error` (error type `invariant_broken`) once `holds(ctx)` is false."""

    holds: Callable[[RunContext], bool]
    reason: str

    def __post_init__(self) -> None:
        _check_made("invariant", self.holds, self.reason, "the reason to give when it breaks")

    def __call__(self, ctx: RunContext) -> TurnVerdict | None:
        if _held(self.holds(ctx)):
            return None
        return TurnVerdict(StopReason.ERROR, f"Invariant broken: {self.reason}", "invariant_broken")


def _check_made(what: str, test: object, text: object, says: str) -> None:
    """A clear `ConfigError` when a check is made wrong, not a run that ends as `error` the turn the
    check first fires (a goal's output of None failed at the moment of success). An `async def` test
    is refused: checks run on the loop after every turn, unawaited, and its coroutine is always true."""
    if not callable(test):
        raise ConfigError(f"{what}() takes a function of the RunContext, not {type(test).__name__}")
    if inspect.iscoroutinefunction(test):
        raise ConfigError(
            f"{what}() takes a plain def, not an async def: checks run after every turn, unawaited"
        )
    if not isinstance(text, str):
        raise ConfigError(f"{what}() needs {says}, as text; got {text!r:.60}")


def _held(answer: object) -> object:
    """A check's answer; one that must be awaited (a coroutine: always true) raises, and the run ends as
    `error` saying so, rather than a goal reached at once or an invariant that never breaks."""
    if inspect.isawaitable(answer):
        if inspect.iscoroutine(answer):
            answer.close()
        raise ConfigError("a per-turn check returned an awaitable: checks are plain defs, called unawaited")
    return answer


def goal(reached: Callable[[RunContext], bool], output: str) -> Goal:
    """A per-turn check that ends the run as success when `reached` holds."""
    return Goal(reached, output)


def invariant(holds: Callable[[RunContext], bool], reason: str) -> Invariant:
    """A per-turn check that ends the run as error when `holds` stops holding."""
    return Invariant(holds, reason)
