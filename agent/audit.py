"""Success audits: a share of the runs that ended `success` is checked again, later, independently.

A run's own verifiers decide `success`; an audit asks a second, independent
check (an eval judge, an evaluator model, a look at the outside world once
it has settled) whether that success was real. The outcome of each audit is
counted (`confirmed`, `false_success`, `error`), so a dashboard can show the
false-success share and an alert can fire when it rises.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

from agent._valid import is_finite_from_zero, is_number
from agent.errors import ConfigError
from agent.verify import Verifier


class AuditOutcome(StrEnum):
    CONFIRMED = "confirmed"  # the independent check agrees: the success was real
    FALSE_SUCCESS = "false_success"  # the check found the goal not met
    ERROR = "error"  # the check could not be made (it raised, or the run could not be rebuilt)


@dataclass(frozen=True)
class SuccessAudit:
    """Re-check `share` of an agent's successes with `check`, `after` seconds after they ended."""

    check: Verifier
    share: float = 0.1
    after: float = 0.0

    def __post_init__(self) -> None:
        share, after = self.share, self.after
        if not (is_number(share) and 0 < share <= 1 and is_finite_from_zero(after)):
            raise ConfigError(
                f"SuccessAudit needs 0 < share <= 1 and a finite after >= 0 seconds; got {share!r}, {after!r}"
            )
        if not callable(self.check):
            raise ConfigError(
                f"SuccessAudit's check is a verifier (a function of the RunContext), not {self.check!r}"
            )

    def samples(self, run_id: str) -> bool:
        """Whether this run is audited: a stable choice from its id (the same in every process)."""
        digest = hashlib.blake2b(run_id.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2**64 < self.share


@dataclass(frozen=True)
class Audit:
    """An audit that is due or done."""

    run_id: str
    agent: str
    task_type: str
    due_at: float
    outcome: AuditOutcome | None = None
    note: str = ""
    checked_at: float | None = None
