"""The loop. It reads like the pseudocode in DESIGN.md, "The loop, in order".

Each turn returns a decision (`Continue`, `Stop` or `Suspend`) and the loop
dispatches on it. Telemetry sees the loop only through its observer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent._state import RunState
from agent.context import CallRecord
from agent.errors import ModelError, TransientModelError
from agent.finish import FINISH_TOOL, Signal, parse_finish
from agent.hooks import RunObserver
from agent.models.base import ModelReply, ModelRequest, ToolCall
from agent.progress import call_signature
from agent.result import FinishKind, LimitKind, PendingAction, RunResult, StopReason, Suspension
from agent.tools import Tool, ToolOutcome, execute

if TYPE_CHECKING:
    from agent.agent import Agent

NUDGE = "Use a tool or call finish."
NOT_RUN = "Not run: the run paused for a person before this call. Call it again if you still need it."


@dataclass(frozen=True)
class Continue:
    """Go on to the next turn; `signal` names what this turn did."""

    signal: str = "tool_use"


@dataclass(frozen=True)
class Stop:
    """End the run segment with a reason."""

    reason: StopReason
    limit: LimitKind | None = None
    output: str = ""
    note: str = ""
    verified: bool = False
    error_type: str | None = None


@dataclass(frozen=True)
class Suspend:
    """Pause for a person; `open_results` are this turn's results, `None` where the answer goes."""

    suspension: Suspension
    open_results: list[dict[str, Any] | None]


Decision = Continue | Stop | Suspend


async def drive(agent: Agent, run: RunState, obs: RunObserver, cancel: Any = None) -> RunResult:
    """Run turns until one decides to stop or suspend."""
    if run.turn_in_flight():  # resumed from a snapshot taken inside a turn
        decision = await finish_turn(agent, run, obs)
        if not isinstance(decision, Continue):
            return conclude(agent, run, decision)
    while True:
        if limit := agent.budget.exceeded(run.tick()):  # 1. the budget first
            decision = Stop(StopReason.LIMIT, limit=limit)
        elif cancel is not None and cancel.is_set():
            decision = Stop(StopReason.CANCELLED, note="The caller cancelled the run.")
        else:
            decision = await turn(agent, run, obs)  # 2-5
        if not isinstance(decision, Continue):
            return conclude(agent, run, decision)


async def turn(agent: Agent, run: RunState, obs: RunObserver) -> Decision:
    """One turn: ask the model, act on its reply, check progress."""

    async def steps() -> Decision:
        reply = await ask_model(agent, run, obs)  # 2
        if isinstance(reply, Stop):
            return reply
        return end_turn(agent, run, await act(agent, run, reply, obs))  # 3, 4, then 5

    return await observed(obs, run.begin_turn(), steps())


async def finish_turn(agent: Agent, run: RunState, obs: RunObserver) -> Decision:
    """Complete a turn whose reply was recorded but whose calls were not all run."""

    async def steps() -> Decision:
        calls = _tool_calls(run.ctx.messages[-1])
        return end_turn(agent, run, await act_on_calls(agent, run, calls, obs))

    return await observed(obs, run.usage.turns, steps())


async def observed(obs: RunObserver, index: int, steps: Awaitable[Decision]) -> Decision:
    """Run a turn's steps between `turn_started` and `turn_ended`, whatever happens."""
    obs.turn_started(index)
    decision: Decision = Stop(StopReason.ERROR, note="the turn did not complete")
    try:
        decision = await steps
        return decision
    except asyncio.CancelledError:
        decision = Stop(StopReason.CANCELLED)  # so the turn's signal says what happened
        raise
    finally:
        obs.turn_ended(index, _signal_of(decision))


def end_turn(agent: Agent, run: RunState, decision: Decision) -> Decision:
    """Check progress after a completed turn and write the checkpoint."""
    if not isinstance(decision, Continue):
        return decision
    if stuck := run.progress.end_turn():
        return Stop(StopReason.NO_PROGRESS, note=stuck)
    journal(agent, run)
    return decision


def journal(agent: Agent, run: RunState) -> None:
    """Hand the checkpointer a snapshot; a checkpointer that raises ends the run as error."""
    if agent.checkpoint is not None:
        agent.checkpoint(run.snapshot(StopReason.CANCELLED))


async def ask_model(agent: Agent, run: RunState, obs: RunObserver) -> ModelReply | Stop:
    """Call the model; retry transient failures with backoff while time is left."""
    request = ModelRequest(agent.system_prompt, list(run.ctx.messages), agent.tool_specs, agent.max_tokens)
    attempt = 0
    while True:
        attempt += 1
        obs.model_started(request, attempt)
        left = agent.budget.seconds_left(run.tick())
        try:  # a model call may not run past the time budget
            async with asyncio.timeout(left) as budget_left:
                reply = await agent.model.complete(request)
        except TimeoutError as exc:
            obs.model_ended(None, exc)
            if not budget_left.expired():  # the adapter's own timeout, not the budget's
                raise
            note = "The model call was cut off when the time budget ran out."
            return Stop(StopReason.LIMIT, limit=LimitKind.SECONDS, note=note)
        except TransientModelError as exc:
            obs.model_ended(None, exc)
            delay = agent.retry.delay(attempt, exc.retry_after)
            left = agent.budget.seconds_left(run.tick())
            if delay is None or (left is not None and delay >= left):
                note = f"The model API still failed after {attempt} attempts: {exc}"
                return Stop(StopReason.ERROR, note=note, error_type=exc.error_type)
            await asyncio.sleep(delay)
            continue
        except ModelError as exc:
            obs.model_ended(None, exc)
            return Stop(StopReason.ERROR, note=f"The model call failed: {exc}", error_type=exc.error_type)
        except Exception as exc:  # an adapter bug: the run ends as error, and the call says why
            obs.model_ended(None, exc)
            raise
        obs.model_ended(reply, None)
        run.add_usage(reply, agent.prices.cost(agent.model.name, reply.input_tokens, reply.output_tokens))
        return reply


async def act(agent: Agent, run: RunState, reply: ModelReply, obs: RunObserver) -> Decision:
    """Record the reply and act on it; a reply with no tool call is nudged."""
    run.ctx.messages.append({"role": "assistant", "content": reply.content})
    run.last_text = reply.text or run.last_text
    calls = reply.tool_calls
    if not calls:
        run.ctx.messages.append({"role": "user", "content": NUDGE})
        return Continue("no_tool_call")
    run.open_results = []
    return await act_on_calls(agent, run, calls, obs)


async def act_on_calls(agent: Agent, run: RunState, calls: list[ToolCall], obs: RunObserver) -> Decision:
    """Run the calls not yet answered, in order; `finish` may stop or suspend the run.

    Each result but the last is journaled as it lands, and the last one with
    the completed turn, so a crash never runs a call again whose result was
    recorded. (A reply whose first call was still running is asked again.)
    """
    if run.open_results is None:
        run.open_results = []
    results = run.open_results
    signal = "tool_use"
    for i in range(len(results), len(calls)):
        call = calls[i]
        step = await handle_call(agent, run, call, obs)
        if isinstance(step, Suspend):
            rest = [_result(c.id, NOT_RUN, is_error=True) for c in calls[i + 1 :]]
            return Suspend(step.suspension, [*results, None, *rest])
        if isinstance(step, Stop):
            return step
        if call.name == FINISH_TOOL:
            signal = "done_rejected"
        results.append(step)
        if i < len(calls) - 1:
            journal(agent, run)
    run.ctx.messages.append({"role": "user", "content": list(results)})
    run.open_results = None
    return Continue(signal)


async def handle_call(
    agent: Agent, run: RunState, call: ToolCall, obs: RunObserver
) -> dict[str, Any] | Stop | Suspend:
    """One call: `finish`, an unknown tool, a tool needing approval, or a tool to run."""
    if call.name == FINISH_TOOL:
        return await on_finish(agent, run, call, obs)
    tool = agent.tool_named(call.name)
    if tool is None:
        known = ", ".join(sorted(t.name for t in agent.tools)) or "none"
        return _result(call.id, f"Error: there is no tool {call.name!r}. Tools: {known}, finish.", True)
    if tool.needs_approval:
        args = json.dumps(call.arguments, sort_keys=True)
        question = f"Approve the call {call.name}({args})?"
        return Suspend(agent.suspension(question, PendingAction(call.id, call.name, call.arguments)), [])
    outcome = await run_tool(agent, run, tool, call, obs)
    return _result(call.id, outcome.text, outcome.is_error)


async def run_tool(agent: Agent, run: RunState, tool: Tool, call: ToolCall, obs: RunObserver) -> ToolOutcome:
    """Execute a tool, record the call, and tell the progress detector what it saw."""
    obs.tool_started(call)
    outcome = await execute(tool, call.arguments, run.ctx)
    obs.tool_ended(call, outcome)
    run.ctx.calls.append(CallRecord(call.name, call.arguments, outcome.text, outcome.is_error))
    state = agent.fingerprint(run.ctx) if agent.fingerprint else outcome.text
    run.progress.observe(call_signature(call.name, call.arguments), state)
    return outcome


async def on_finish(
    agent: Agent, run: RunState, call: ToolCall, obs: RunObserver
) -> dict[str, Any] | Stop | Suspend:
    """The model's signal: done is verified, give_up stops, need_help suspends."""
    signal = parse_finish(call.arguments)
    if isinstance(signal, str):
        return _result(call.id, signal, is_error=True)
    run.ctx.note = signal.note
    if signal.kind is FinishKind.GIVE_UP:
        return Stop(StopReason.GAVE_UP, note=signal.note)
    if signal.kind is FinishKind.NEED_HELP:
        return Suspend(agent.suspension(signal.note or "The agent asked for help.", None), [])
    return await verify(agent, run, signal, call, obs)


async def verify(
    agent: Agent, run: RunState, signal: Signal, call: ToolCall, obs: RunObserver
) -> dict[str, Any] | Stop:
    """Run every verifier; a failure goes back to the model as the finish result."""
    try:
        failures = [f for v in agent.verifiers for f in await asyncio.to_thread(v, run.ctx)]
    except Exception as exc:
        note = f"A verifier raised {type(exc).__name__}: {exc}"
        return Stop(StopReason.ERROR, note=note, error_type="verifier_error")
    obs.verified(failures)
    if not failures:
        return Stop(StopReason.SUCCESS, output=signal.note, verified=bool(agent.verifiers))
    run.failures.extend(failures)
    return _result(call.id, "Criterion not met: " + "; ".join(failures), is_error=True)


def conclude(agent: Agent, run: RunState, decision: Stop | Suspend) -> RunResult:
    """Turn a stop or a suspend into the run's structured result."""
    if isinstance(decision, Suspend):
        s = decision.suspension
        run.open_results = list(decision.open_results)
        snap = run.snapshot(StopReason.NEED_HELP, s)
        summary = agent.summarize(run.ctx, run.tick(), StopReason.NEED_HELP, None)
        return run.result(StopReason.NEED_HELP, note=s.question, summary=summary, suspension=s, snapshot=snap)
    resumable = decision.reason is StopReason.CANCELLED
    return run.result(
        decision.reason,
        limit=decision.limit,
        output=decision.output,
        note=decision.note,
        summary=agent.summarize(run.ctx, run.tick(), decision.reason, decision.limit),
        verified=decision.verified,
        error_type=decision.error_type,
        snapshot=run.snapshot(StopReason.CANCELLED) if resumable else None,
    )


def _result(tool_use_id: str, text: str, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
    return block | {"is_error": True} if is_error else block


def _tool_calls(message: dict[str, Any]) -> list[ToolCall]:
    return ModelReply(content=message["content"]).tool_calls


def _signal_of(decision: Decision) -> str:
    if isinstance(decision, Continue):
        return decision.signal
    if isinstance(decision, Suspend):
        return "need_help"
    return str(decision.reason)
