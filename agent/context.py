"""What tools and verifiers may read about the run they are part of."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.models.base import Message


@dataclass(frozen=True)
class CallRecord:
    """A tool call the run made, and what it returned."""

    name: str
    arguments: dict[str, Any]
    result: str
    is_error: bool = False


@dataclass
class RunContext:
    """The run as tools and verifiers see it.

    `state` is the agent's own JSON-ready scratch space; it is saved in
    snapshots, so a resumed run sees what the suspended one left there.
    """

    run_id: str
    agent: str
    task: str
    task_type: str
    messages: list[Message] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    note: str = ""
