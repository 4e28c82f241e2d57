"""What a run returns: a stop reason and the structured result around it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from agent._frozen import fast_init
from agent.snapshot import Snapshot
from agent.stops import FinishKind, LimitKind, PendingAction, StopCause, StopReason, Suspension
from agent.text import json_ready
from agent.usage import Usage, WithUsage

__all__ = [
    "FinishKind", "LimitKind", "PendingAction", "RunResult", "StopCause", "StopReason", "Suspension", "Usage",
]  # fmt: skip


@fast_init
@dataclass(frozen=True)
class RunResult(WithUsage):
    """The structured end of a run segment. Never a bare string or boolean.

    `usage` is what the whole run used so far (all its segments); its cost is
    None when a model's price is unknown (never a made-up $0).
    """

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
    usage: Usage = field(default_factory=Usage)
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
        """JSON-ready fields, flat (tokens and cost beside the rest; the snapshot is left out:
        serialise it on its own), as standard JSON holds them (`json_ready`: NaN and the infinities
        as null)."""
        data: dict[str, Any] = {}
        # neither the snapshot nor a framework's result is copied, nor serialised
        for key, value in asdict(replace(self, raw=None, snapshot=None)).items():
            if key == "usage":
                data |= {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
                data["cost_usd"] = self.cost_usd
            elif key not in ("snapshot", "raw"):
                data[key] = value
        data["reason"] = str(self.reason)
        data["limit"] = str(self.limit) if self.limit else None
        data["cause"] = str(self.cause) if self.cause else None
        data["verifier_failures"] = list(self.verifier_failures)
        ready: dict[str, Any] = json_ready(data)
        return ready
