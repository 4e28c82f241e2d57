"""The mutable state of one run segment, kept in one place."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agent.budget import Usage
from agent.context import RunContext
from agent.models.base import ModelReply
from agent.progress import ProgressDetector
from agent.result import LimitKind, RunResult, StopReason, Suspension
from agent.snapshot import Snapshot


@dataclass
class RunState:
    """All that changes while a segment runs; the loop reads and writes only this."""

    ctx: RunContext
    usage: Usage
    progress: ProgressDetector
    segment: int = 1
    failures: list[str] = field(default_factory=list)
    last_text: str = ""
    trace_id: str | None = None
    span_id: str | None = None
    open_results: list[dict[str, Any] | None] | None = None  # results of the turn in flight
    _active_before: float = 0.0
    _started: float = field(default_factory=time.monotonic)
    _turn_start: tuple[int, int] = (0, 0)

    def tick(self) -> Usage:
        """Bring active seconds up to now and return the usage."""
        self.usage.active_seconds = self._active_before + (time.monotonic() - self._started)
        return self.usage

    def add_usage(self, reply: ModelReply, cost_usd: float) -> None:
        self.usage.input_tokens += reply.input_tokens
        self.usage.output_tokens += reply.output_tokens
        self.usage.cost_usd += cost_usd

    def begin_turn(self) -> int:
        self._turn_start = (len(self.ctx.messages), len(self.ctx.calls))
        self.open_results = None
        self.usage.turns += 1
        return self.usage.turns

    def turn_in_flight(self) -> bool:
        """True when the last reply's tool calls have not all been answered."""
        last = self.ctx.messages[-1] if self.ctx.messages else {}
        content = last.get("content")
        return (
            last.get("role") == "assistant"
            and isinstance(content, list)
            and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
        )

    def rewind_open_turn(self) -> None:
        """Drop a turn whose model call never returned; a recorded reply and results stay."""
        if self.open_results is not None or not self._turn_start[0]:
            return
        messages, calls = self._turn_start
        del self.ctx.messages[messages:]
        del self.ctx.calls[calls:]
        self.usage.turns -= 1

    def snapshot(
        self,
        reason: StopReason,
        suspension: Suspension | None = None,
    ) -> Snapshot:
        ctx = self.ctx
        return Snapshot(
            run_id=ctx.run_id,
            agent=ctx.agent,
            task=ctx.task,
            task_type=ctx.task_type,
            reason=reason,
            segment=self.segment,
            messages=list(ctx.messages),
            usage=self.tick().copy(),
            calls=list(ctx.calls),
            state=dict(ctx.state),
            progress=self.progress.to_json(),
            verifier_failures=list(self.failures),
            last_text=self.last_text,
            suspension=suspension,
            open_results=list(self.open_results or []),
            trace_id=self.trace_id,
            span_id=self.span_id,
        )

    def result(
        self,
        reason: StopReason,
        *,
        limit: LimitKind | None = None,
        output: str = "",
        note: str = "",
        summary: str = "",
        verified: bool = False,
        error_type: str | None = None,
        suspension: Suspension | None = None,
        snapshot: Snapshot | None = None,
    ) -> RunResult:
        usage = self.tick()
        return RunResult(
            run_id=self.ctx.run_id,
            agent=self.ctx.agent,
            task_type=self.ctx.task_type,
            reason=reason,
            limit=limit,
            output=output,
            note=note,
            summary=summary,
            verified=verified,
            turns=usage.turns,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=round(usage.cost_usd, 6),
            active_seconds=round(usage.active_seconds, 6),
            waiting_seconds=round(usage.waiting_seconds, 6),
            verifier_failures=tuple(self.failures),
            last_text=self.last_text,
            error_type=error_type,
            trace_id=self.trace_id,
            suspension=suspension,
            snapshot=snapshot,
        )

    @classmethod
    def from_snapshot(cls, snap: Snapshot, progress: ProgressDetector) -> RunState:
        progress.load_json(snap.progress)
        ctx = RunContext(
            run_id=snap.run_id,
            agent=snap.agent,
            task=snap.task,
            task_type=snap.task_type,
            messages=list(snap.messages),
            calls=list(snap.calls),
            state=dict(snap.state),
        )
        usage = snap.usage.copy()
        return cls(
            ctx=ctx,
            usage=usage,
            progress=progress,
            segment=snap.segment + 1,
            failures=list(snap.verifier_failures),
            last_text=snap.last_text,
            open_results=list(snap.open_results) if snap.open_results else None,
            _active_before=usage.active_seconds,
        )
