"""What each worker in this process gives its workflows: telemetry hooks and timeouts.

Workflow code cannot take constructor arguments, so a worker registers its
setup here under its task queue and the workflow looks it up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.hooks import NoHooks, RunHooks
from agent.temporal._wire import CATALOG_WAIT


@dataclass(frozen=True)
class WorkerSetup:
    """A worker's telemetry hooks and activity timeouts (seconds)."""

    hooks: RunHooks = field(default_factory=NoHooks)
    heartbeat_seconds: float = 30.0
    model_timeout: float = 600.0
    tool_grace: float = 5.0  # the activity outlives the tool's own timeout by this much
    cut_grace: float = 5.0  # how long a cut model call may take to report what it used
    cancel_grace: float = 10.0  # how long a cancelled run's turn in flight may take to end (see `workflow`)
    # a run whose execution's history has more events continues as new at its next turn (see `workflow`)
    continue_after_events: int | None = 10_000  # None: never
    # how long a call that a worker's catalog cannot build (its agent or task type missing) is tried again,
    # on any worker of the queue, before the run ends `error` (see `_wire.CATALOG_WAIT`)
    catalog_wait: float = CATALOG_WAIT


_SETUPS: dict[str, WorkerSetup] = {}


def register(task_queue: str, setup: WorkerSetup) -> None:
    _SETUPS[task_queue] = setup


def lookup(task_queue: str) -> WorkerSetup:
    """The setup of this process's worker on `task_queue`; defaults (no telemetry) for a replayer."""
    return _SETUPS.get(task_queue) or _DEFAULT


_DEFAULT = WorkerSetup()
