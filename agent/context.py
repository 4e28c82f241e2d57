"""What tools and verifiers may read about the run they are part of."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent._frozen import fast_init
from agent.journal import Journal

if TYPE_CHECKING:
    from agent.models.base import ModelReply


@fast_init
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


_FIXED = frozenset({"run_id", "agent", "task", "task_type"})  # who the run is: set once, when made
_KEPT = "journal"  # the run's history: one for the run, appended to, never replaced


@dataclass
class RunContext:
    """The run as tools and verifiers see it.

    `state` is the agent's own JSON-ready scratch space; it is saved in
    snapshots, so a resumed run sees what the suspended one left there.
    `journal` is the run's history (read it; add to it only with
    `journal.append`); `calls` the tool calls that ran.
    While a tool runs, `idempotency_key` names its call, stable across
    retries, recovery and resumes: a tool with side effects can use it to
    do them at most once. The run's identity (`run_id`, `agent`, `task`,
    `task_type`) is fixed once it is made.
    """

    run_id: str
    agent: str
    task: str
    task_type: str
    journal: Journal = field(default_factory=Journal)
    calls: list[CallRecord] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    call_id: str = ""  # the call being run
    charges: list[ModelCharge] = field(default_factory=list)  # drained by the loop after verifiers run

    def __setattr__(self, name: str, value: Any) -> None:
        if name == _KEPT and name in self.__dict__:
            raise AttributeError(
                "RunContext.journal is the run's own history and cannot be replaced: add an entry with "
                "ctx.journal.append(entry)"
            )
        if name in _FIXED and name in self.__dict__:
            raise AttributeError(
                f"RunContext.{name} is fixed for the run; keep what a tool needs to change in ctx.state"
            )
        object.__setattr__(self, name, value)

    @property
    def idempotency_key(self) -> str:
        return f"{self.run_id}:{self.call_id}"

    def charge(self, model: str, reply: ModelReply) -> None:
        """Count a model call made for this run (tokens and cost) in its budget: a tool's are counted
        when the tool returns, a verifier's when the verifiers are done."""
        from agent.models.base import ModelReply  # not at import: the adapters' module imports much

        if not isinstance(model, str) or not isinstance(reply, ModelReply):
            raise TypeError(
                f"ctx.charge(model, reply) takes the model's name (str) and its ModelReply, not "
                f"{type(model).__name__} and {type(reply).__name__}"
            )
        self.charges.append(ModelCharge(model, reply))


def own_state(state: dict[str, Any]) -> dict[str, Any]:
    """A run's own copy of `state`: its dicts and lists copied all the way down (other values, which
    JSON cannot hold and the snapshot leaves out, are kept as they are), so that what one run's tools
    change in `ctx.state` no other run started from the same state (or snapshot) sees."""
    try:
        return _own(state)
    except RecursionError:  # deeper than Python can walk: the snapshot cannot hold it either
        return dict(state)


def _own(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: _own(v) for k, v in value.items()}
    if kind is list:
        return [_own(v) for v in value]
    return value
