"""Checks that run after every turn and may end the run (seed 000's "check every turn").

A goal check ends the run as `success` as soon as the goal state is reached,
whether or not the model has noticed; an invariant ends it as `error` the
moment the world is in a state it must never be in. Both read the run as
tools do (`RunContext`) and should be cheap: they run after every turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from agent.context import RunContext
from agent.stops import StopReason


@dataclass(frozen=True)
class TurnVerdict:
    """A check's decision to end the run now."""

    reason: StopReason  # success (the goal is reached) or error (an invariant broke)
    note: str
    error_type: str | None = None


class TurnCheck(Protocol):
    """Looks at the run after a turn: a `TurnVerdict` ends it, None lets it go on."""

    def __call__(self, ctx: RunContext) -> TurnVerdict | None: ...


@dataclass(frozen=True)
class Goal:
    """Ends the run as `success` (verified) once `reached(ctx)` holds."""

    reached: Callable[[RunContext], bool]
    output: str

    def __call__(self, ctx: RunContext) -> TurnVerdict | None:
        return TurnVerdict(StopReason.SUCCESS, self.output) if self.reached(ctx) else None


@dataclass(frozen=True)
class Invariant:
    """Ends the run as `error` (error type `invariant_broken`) once `holds(ctx)` is false."""

    holds: Callable[[RunContext], bool]
    reason: str

    def __call__(self, ctx: RunContext) -> TurnVerdict | None:
        if self.holds(ctx):
            return None
        return TurnVerdict(StopReason.ERROR, f"Invariant broken: {self.reason}", "invariant_broken")


def goal(reached: Callable[[RunContext], bool], output: str) -> Goal:
    """A per-turn check that ends the run as success when `reached` holds."""
    return Goal(reached, output)


def invariant(holds: Callable[[RunContext], bool], reason: str) -> Invariant:
    """A per-turn check that ends the run as error when `holds` stops holding."""
    return Invariant(holds, reason)
