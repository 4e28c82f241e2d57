"""A paused run as versioned JSON, so any process can take it back."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from agent.budget import Usage
from agent.context import CallRecord
from agent.errors import SnapshotError
from agent.models.base import Message
from agent.result import PendingAction, StopReason, Suspension

SNAPSHOT_VERSION = 1


@dataclass
class Snapshot:
    """Everything a run needs to go on: history, budget used, what it waits for.

    `open_results` holds the tool results already produced for the last
    assistant message; `None` marks the slot the person's answer fills.
    """

    run_id: str
    agent: str
    task: str
    task_type: str
    reason: StopReason
    segment: int
    messages: list[Message]
    usage: Usage
    calls: list[CallRecord] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    progress: dict[str, Any] = field(default_factory=dict)
    verifier_failures: list[str] = field(default_factory=list)
    last_text: str = ""
    suspension: Suspension | None = None
    open_results: list[dict[str, Any] | None] = field(default_factory=list)
    trace_id: str | None = None
    span_id: str | None = None
    version: int = SNAPSHOT_VERSION

    def to_json(self) -> str:
        """Serialise without deep-copying the history (`asdict` would copy every message)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["usage"] = asdict(self.usage)
        data["calls"] = [vars(call) for call in self.calls]
        data["suspension"] = asdict(self.suspension) if self.suspension else None
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> Snapshot:
        """Parse a snapshot; a clear `SnapshotError` says what is wrong."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SnapshotError(f"snapshot is not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise SnapshotError("snapshot must be a JSON object")
        version = data.get("version")
        if version != SNAPSHOT_VERSION:
            raise SnapshotError(
                f"snapshot version {version!r} is not supported; this Endstate reads "
                f"version {SNAPSHOT_VERSION}"
            )
        try:
            return cls._from_dict(data)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise SnapshotError(f"snapshot is missing or has a bad field: {exc!r}") from exc

    @classmethod
    def _from_dict(cls, data: dict[str, Any]) -> Snapshot:
        suspension = data.get("suspension")
        if suspension is not None:
            pending = suspension.get("pending")
            suspension = Suspension(
                question=suspension["question"],
                deadline=float(suspension["deadline"]),
                suspended_at=float(suspension["suspended_at"]),
                pending=PendingAction(**pending) if pending else None,
            )
        return cls(
            **{
                **data,
                "reason": StopReason(data["reason"]),
                "usage": Usage(**data["usage"]),
                "calls": [CallRecord(**c) for c in data.get("calls", [])],
                "suspension": suspension,
            }
        )
