"""What a run returns: a stop reason and the structured result around it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from agent.snapshot import Snapshot
from agent.stops import FinishKind, LimitKind, PendingAction, StopCause, StopReason, Suspension

__all__ = ["FinishKind", "LimitKind", "PendingAction", "RunResult", "StopCause", "StopReason", "Suspension"]


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
    cost_usd: float | None = 0.0  # None when a model's price is unknown (never a made-up $0)
    active_seconds: float = 0.0
    waiting_seconds: float = 0.0
    verifier_failures: tuple[str, ...] = ()
    last_text: str = ""
    error_type: str | None = None
    trace_id: str | None = None
    suspension: Suspension | None = None
    snapshot: Snapshot | None = field(default=None, repr=False, compare=False)
    raw: Any = field(default=None, repr=False, compare=False)  # a foreign framework's own result

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the snapshot is left out; serialise it on its own)."""
        data = asdict(replace(self, raw=None))  # a framework's result is not copied, nor serialised
        data.pop("snapshot", None)
        data.pop("raw", None)
        data["reason"] = str(self.reason)
        data["limit"] = str(self.limit) if self.limit else None
        data["cause"] = str(self.cause) if self.cause else None
        data["verifier_failures"] = list(self.verifier_failures)
        return data
