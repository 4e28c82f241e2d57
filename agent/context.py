"""What tools and verifiers may read about the run they are part of."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.models.base import Message, ModelReply


@dataclass(frozen=True)
class CallRecord:
    """A tool call the run made, and what it returned."""

    name: str
    arguments: dict[str, Any]
    result: str
    is_error: bool = False


@dataclass(frozen=True)
class ModelCharge:
    """A model call made for the run outside the loop (an evaluator verifier's): it counts in the budget."""

    model: str
    reply: ModelReply


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
    charges: list[ModelCharge] = field(default_factory=list)  # drained by the loop after verifiers run

    def charge(self, model: str, reply: ModelReply) -> None:
        """Count a model call made for this run (tokens and cost) in its budget."""
        self.charges.append(ModelCharge(model, reply))
