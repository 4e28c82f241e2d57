"""Verifiers: code that confirms a model's "done". Failures go back to the model."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from agent.context import RunContext


@runtime_checkable
class Verifier(Protocol):
    """Checks the world after the model says it is done.

    Returns the reasons the criterion is not met; an empty list means it is.
    Raising is a bug in the verifier and ends the run as `error`.
    """

    def __call__(self, ctx: RunContext) -> list[str]: ...


@dataclass(frozen=True)
class CommandVerifier:
    """A command that must exit 0, such as `pytest -q`."""

    argv: Sequence[str]
    cwd: str | Path | None = None
    timeout: float = 300.0
    tail_chars: int = 1500

    def __call__(self, ctx: RunContext) -> list[str]:
        try:
            done = subprocess.run(
                list(self.argv), cwd=self.cwd, capture_output=True, text=True, timeout=self.timeout
            )
        except subprocess.TimeoutExpired:
            return [f"`{' '.join(self.argv)}` did not finish within {self.timeout:g} s"]
        if done.returncode == 0:
            return []
        tail = (done.stdout + done.stderr)[-self.tail_chars :].strip()
        return [f"`{' '.join(self.argv)}` exited {done.returncode}:\n{tail}"]


@dataclass(frozen=True)
class PredicateVerifier:
    """A predicate over the run's context, with the reason to give when it fails."""

    predicate: Callable[[RunContext], bool]
    reason: str

    def __call__(self, ctx: RunContext) -> list[str]:
        return [] if self.predicate(ctx) else [self.reason]


def command(*argv: str, cwd: str | Path | None = None, timeout: float = 300.0) -> CommandVerifier:
    """A verifier that passes when the command exits 0."""
    return CommandVerifier(argv, cwd=cwd, timeout=timeout)


def predicate(check: Callable[[RunContext], bool], reason: str) -> PredicateVerifier:
    """A verifier that passes when `check(ctx)` is true."""
    return PredicateVerifier(check, reason)


@dataclass(frozen=True)
class AllOf:
    """Every verifier must pass; the failures of all of them are reported."""

    verifiers: tuple[Verifier, ...]

    def __call__(self, ctx: RunContext) -> list[str]:
        return [reason for verifier in self.verifiers for reason in verifier(ctx)]


def all_of(*verifiers: Verifier) -> AllOf:
    """Combine verifiers; the run succeeds only when all of them pass."""
    return AllOf(tuple(verifiers))
