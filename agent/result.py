"""What a run returns: a stop reason and the structured result around it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.snapshot import Snapshot


class StopReason(StrEnum):
    """Every way a run segment can end (DESIGN.md, "Stop reasons")."""

    SUCCESS = "success"
    LIMIT = "limit"
    GAVE_UP = "gave_up"
    NO_PROGRESS = "no_progress"
    NEED_HELP = "need_help"
    HELP_TIMEOUT = "help_timeout"
    CANCELLED = "cancelled"
    ERROR = "error"

    @property
    def terminal(self) -> bool:
        """False only for a suspended run waiting for a person."""
        return self is not StopReason.NEED_HELP

    @property
    def resumable(self) -> bool:
        """True when the result carries a snapshot that `resume` takes."""
        return self in (StopReason.NEED_HELP, StopReason.CANCELLED)


class LimitKind(StrEnum):
    """Which budget ran out for a `limit` stop."""

    TURNS = "turns"
    SECONDS = "seconds"
    TOKENS = "tokens"
    COST = "cost"
    CONTEXT = "context"


class StopCause(StrEnum):
    """Who ended a `gave_up` run: the agent itself, the model API's refusal, or a guardrail."""

    AGENT = "agent"
    REFUSAL = "refusal"
    GUARDRAIL = "guardrail"


class FinishKind(StrEnum):
    """The kinds the model may pass to the `finish` tool."""

    DONE = "done"
    GIVE_UP = "give_up"
    NEED_HELP = "need_help"


@dataclass(frozen=True)
class PendingAction:
    """A tool call that waits for a person's approval before it runs."""

    tool_use_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Suspension:
    """Why a run is waiting for a person, and until when."""

    question: str
    deadline: float
    suspended_at: float
    pending: PendingAction | None = None
    call_id: str = ""  # the call the answer goes to: the finish call, or the pending tool call


@dataclass(frozen=True)
class RunResult:
    """The structured end of a run segment. Never a bare string or boolean."""

    run_id: str
    agent: str
    task_type: str
    reason: StopReason
    limit: LimitKind | None = None
    cause: StopCause | None = None  # gave_up only
    output: str = ""
    note: str = ""
    summary: str = ""
    verified: bool = False
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    active_seconds: float = 0.0
    waiting_seconds: float = 0.0
    verifier_failures: tuple[str, ...] = ()
    last_text: str = ""
    error_type: str | None = None
    trace_id: str | None = None
    suspension: Suspension | None = None
    snapshot: Snapshot | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the snapshot is left out; serialise it on its own)."""
        data = asdict(self)
        data.pop("snapshot", None)
        data["reason"] = str(self.reason)
        data["limit"] = str(self.limit) if self.limit else None
        data["cause"] = str(self.cause) if self.cause else None
        data["verifier_failures"] = list(self.verifier_failures)
        return data
