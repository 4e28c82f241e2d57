"""`Agent`: a model, tools, verifiers and budgets, and the runs made with them."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from agent._loop import Stop, conclude, drive, run_tool
from agent._state import RunState
from agent.budget import Budget, PriceTable, Usage
from agent.context import RunContext
from agent.errors import ConfigError, SnapshotError
from agent.finish import FINISH_SPEC, FINISH_TOOL
from agent.hooks import HumanWait, NoHooks, RunHooks, RunInfo, RunObserver, SegmentLink, guard
from agent.models.base import Model, ToolCall
from agent.policies import HelpPolicy, RetryPolicy
from agent.progress import ProgressDetector
from agent.result import LimitKind, PendingAction, RunResult, StopReason, Suspension
from agent.snapshot import Snapshot
from agent.summary import summarize as default_summary
from agent.tools import Tool
from agent.verify import Verifier

Summarizer = Callable[[RunContext, Usage, StopReason, LimitKind | None], str]


@dataclass
class Agent:
    """What a team defines once and runs many tasks through.

    `run`/`arun` start a task, `resume`/`aresume` continue a suspended or
    cancelled one from its snapshot, `expire`/`aexpire` apply the help policy
    when a person never answered. None of them raises for an expected stop.
    """

    name: str
    model: Model
    instructions: str = ""
    tools: Sequence[Tool] = ()
    verifiers: Sequence[Verifier] = ()
    budget: Budget = field(default_factory=Budget)
    task_type: str = "default"
    progress: Callable[[], ProgressDetector] = ProgressDetector
    fingerprint: Callable[[RunContext], str] | None = None
    help: HelpPolicy = field(default_factory=HelpPolicy)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    prices: PriceTable = field(default_factory=PriceTable)
    hooks: RunHooks = field(default_factory=NoHooks)
    max_tokens: int = 4096
    summarize: Summarizer = default_summary
    checkpoint: Callable[[Snapshot], None] | None = None

    def __post_init__(self) -> None:
        names = [t.name for t in self.tools]
        if FINISH_TOOL in names:
            raise ConfigError(f"agent {self.name!r}: the tool name 'finish' is reserved for the loop")
        if dupes := sorted({n for n in names if names.count(n) > 1}):
            raise ConfigError(f"agent {self.name!r}: tool names must be unique; repeated: {dupes}")
        if self.budget.max_cost_usd is not None and not self.prices.knows(self.model.name):
            raise ConfigError(
                f"agent {self.name!r} has a cost budget but no price for model {self.model.name!r}; "
                f"pass prices=PriceTable({{{self.model.name!r}: Price(input, output)}})"
            )

    # -- what the loop asks of the agent ---------------------------------

    @cached_property
    def tool_specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self.tools] + [FINISH_SPEC]

    @property
    def system_prompt(self) -> str:
        return self.instructions

    def tool_named(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def suspension(self, question: str, pending: PendingAction | None) -> Suspension:
        now = time.time()
        return Suspension(question, now + self.help.wait_seconds, now, pending)

    # -- entry points ----------------------------------------------------

    def run(self, task: str, **kwargs: Any) -> RunResult:
        """Sync entry point; see `arun`."""
        return _sync(self.arun(task, **kwargs))

    async def arun(
        self,
        task: str,
        *,
        run_id: str | None = None,
        state: dict[str, Any] | None = None,
        cancel: Any = None,
    ) -> RunResult:
        """Carry `task` through the loop until it ends or suspends.

        `cancel` is any object with `is_set()` (an `asyncio.Event` or a
        `threading.Event`); it is checked before every turn.
        """
        if not isinstance(task, str) or not task.strip():
            raise ConfigError("task must be a non-empty string")
        ctx = RunContext(run_id or uuid.uuid4().hex, self.name, task, self.task_type, state=dict(state or {}))
        ctx.messages.append({"role": "user", "content": task})
        run = RunState(ctx=ctx, usage=Usage(), progress=self.progress())
        return await self._segment(run, cancel)

    def resume(self, snapshot: Snapshot, answer: str | None = None, **kwargs: Any) -> RunResult:
        """Sync entry point; see `aresume`."""
        return _sync(self.aresume(snapshot, answer, **kwargs))

    async def aresume(
        self,
        snapshot: Snapshot,
        answer: str | None = None,
        *,
        approved: bool | None = None,
        cancel: Any = None,
        now: float | None = None,
    ) -> RunResult:
        """Continue a suspended or cancelled run in this process.

        A question needs `answer`; a pending tool call needs `approved`
        (with `answer` as the reason for a denial). An answer that comes
        after the deadline is too late: the help policy applies instead.
        """
        self._check_snapshot(snapshot)
        now = time.time() if now is None else now
        s = snapshot.suspension
        if s is not None and now >= s.deadline:
            return await self.aexpire(snapshot, now=now, cancel=cancel)
        if s is not None:
            _check_answer(s, answer, approved)
            if s.pending is not None and approved and self.tool_named(s.pending.name) is None:
                raise SnapshotError(
                    f"agent {self.name!r} has no tool {s.pending.name!r} to run after approval"
                )
        return await self._continue(snapshot, answer, approved, "answered", now, cancel)

    def expire(self, snapshot: Snapshot, **kwargs: Any) -> RunResult:
        """Sync entry point; see `aexpire`."""
        return _sync(self.aexpire(snapshot, **kwargs))

    async def aexpire(self, snapshot: Snapshot, *, now: float | None = None, cancel: Any = None) -> RunResult:
        """A suspended run whose deadline passed: end it, or go on with the default answer."""
        self._check_snapshot(snapshot)
        now = time.time() if now is None else now
        s = snapshot.suspension
        if s is None or now < s.deadline:
            raise SnapshotError(f"run {snapshot.run_id} is not waiting past a deadline")
        if self.help.on_timeout == "resume":
            return await self._continue(snapshot, self.help.default_answer, False, "expired", now, cancel)
        run = RunState.from_snapshot(snapshot, self.progress())
        obs = self._observe(run, snapshot)
        self._record_wait(run, obs, s, now, "expired")
        note = f"Nobody answered {s.question!r} before the deadline."
        result = conclude(self, run, Stop(StopReason.HELP_TIMEOUT, note=note))
        obs.run_ended(result)
        return result

    # -- segments --------------------------------------------------------

    async def _continue(
        self, snap: Snapshot, answer: str | None, approved: bool | None, outcome: str, now: float, cancel: Any
    ) -> RunResult:
        run = RunState.from_snapshot(snap, self.progress())
        obs = self._observe(run, snap)
        s = snap.suspension
        if s is None:
            return await self._segment(run, cancel, obs)
        self._record_wait(run, obs, s, now, outcome)
        try:
            await self._answer(run, obs, s, answer, approved, outcome)
        except asyncio.CancelledError:  # the answer never landed: the run still waits for it
            stop = Stop(StopReason.CANCELLED, note="The run was cancelled while the answer was applied.")
            result = dataclasses.replace(conclude(self, run, stop), snapshot=snap)
        except Exception as exc:
            note = f"{type(exc).__name__}: {exc}"
            result = conclude(self, run, Stop(StopReason.ERROR, note=note, error_type=type(exc).__name__))
        else:
            return await self._segment(run, cancel, obs)
        obs.run_ended(result)
        return result

    async def _segment(self, run: RunState, cancel: Any, obs: RunObserver | None = None) -> RunResult:
        """Drive one segment; whatever happens, it ends with a result and `run_ended`."""
        obs = obs or self._observe(run, None)
        try:
            result = await drive(self, run, obs, cancel)
        except asyncio.CancelledError:
            run.rewind_open_turn()
            result = conclude(self, run, Stop(StopReason.CANCELLED, note="The run was cancelled."))
        except Exception as exc:  # a bug or a failing store: still a result, never a raise
            note = f"{type(exc).__name__}: {exc}"
            result = conclude(self, run, Stop(StopReason.ERROR, note=note, error_type=type(exc).__name__))
        obs.run_ended(result)
        return result

    def _observe(self, run: RunState, snap: Snapshot | None) -> RunObserver:
        link = SegmentLink(snap.trace_id, snap.span_id) if snap and snap.trace_id and snap.span_id else None
        info = RunInfo(
            run_id=run.ctx.run_id,
            agent=self.name,
            task_type=run.ctx.task_type,
            model=self.model.name,
            provider=self.model.provider,
            task=run.ctx.task,
            segment=run.segment,
            continues=link,
            started_at=time.time(),
            limits=self.budget.ceilings(),
            tools=tuple(t.name for t in self.tools),
            spent=run.usage.copy(),
        )
        obs = guard(self.hooks, info)
        run.trace_id, run.span_id = obs.trace_id, obs.span_id
        return obs

    def _record_wait(self, run: RunState, obs: RunObserver, s: Suspension, now: float, outcome: str) -> None:
        pending = s.pending.name if s.pending else None
        wait = HumanWait(s.suspended_at, now, outcome, s.question, pending, s.deadline)
        run.usage.waiting_seconds += wait.seconds
        obs.human_waited(wait)

    async def _answer(
        self,
        run: RunState,
        obs: RunObserver,
        s: Suspension,
        answer: str | None,
        approved: bool | None,
        outcome: str,
    ) -> None:
        """Put the person's answer (or the policy's default) in the suspended turn's open slot."""
        who = "a person" if outcome == "answered" else "the help policy, as nobody answered in time"
        assert run.open_results is not None
        slot = run.open_results.index(None)
        tool_use_id = _tool_use_ids(run.ctx.messages[-1])[slot]
        if s.pending is None:
            text = f"Answer from {who}: {answer}"
        elif approved:
            call = ToolCall(tool_use_id, s.pending.name, s.pending.arguments)
            tool = self.tool_named(call.name)
            if tool is None:
                raise SnapshotError(f"agent {self.name!r} has no tool {call.name!r} to run after approval")
            text = (await run_tool(self, run, tool, call, obs)).text
        else:
            reason = (answer or "no reason given").rstrip(". ")
            text = f"Denied by {who}: {reason}. Do not retry this call."
        run.open_results[slot] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}

    def _check_snapshot(self, snap: Snapshot) -> None:
        if snap.agent != self.name:
            raise SnapshotError(
                f"snapshot of run {snap.run_id} belongs to agent {snap.agent!r}, not {self.name!r}"
            )
        if not snap.reason.resumable:
            raise SnapshotError(
                f"run {snap.run_id} ended as {snap.reason}; only need_help and cancelled resume"
            )


def _check_answer(s: Suspension, answer: str | None, approved: bool | None) -> None:
    if s.pending is not None and approved is None:
        raise SnapshotError(f"the run waits for approval of {s.pending.name!r}: pass approved=True or False")
    if s.pending is None and not (answer and answer.strip()):
        raise SnapshotError(f"the run waits for an answer to {s.question!r}: pass answer='...'")


def _tool_use_ids(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    return [b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]


def _sync(coro: Any) -> RunResult:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise ConfigError("run/resume were called inside a running event loop: await arun/aresume instead")
