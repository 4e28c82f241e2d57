"""Claude Agent SDK runs with Endstate's stop reasons, spans and metrics.

    from agent.integrations import claude_agent_sdk as endstate_claude
    result = endstate_claude.run("Fix the failing test", options=ClaudeAgentOptions(max_turns=10),
                                 hooks=hooks, task_type="fix_ci")

The SDK streams the CLI's messages; turns come from them: each assistant
message id is one model call (one turn), its tool uses are tool calls, ended
by the tool results that follow. The CLI sends a reply as one message per
content block (same id, Claude's text first); the call is recorded at its first
tool call (its text and that call: the tool may run at once, so its span
starts there; a parallel call after it in the same reply starts its own span
then, and joins the call's captured output), or, with none, once a message that
is none of its blocks comes.
A call the API failed (the CLI's synthetic message in the reply's place, `model="<synthetic>"`)
is a failed call of the run's model, its `error_type` the CLI's kind (`rate_limit`, ...).
Totals (tokens, cost) are the `ResultMessage`'s. How runs end:

| Claude Agent SDK `ResultMessage`                  | Endstate                              |
| ------------------------------------------------- | ------------------------------------- |
| `success`                                         | `success` (checked by the verifiers)  |
| `success` with a `deferred_tool_use`              | `need_help`, resumable with `resume`  |
| `success` with `stop_reason: "refusal"`           | `gave_up`, cause `refusal`            |
| a hook's stop: `terminal_reason` `hook_stopped`   | `gave_up`, cause `guardrail`          |
| (`"continue": false`), or a prompt a hook blocked |                                       |
| `error_max_turns`                                 | `limit`/`turns`                       |
| `error_max_budget_usd`                            | `limit`/`cost`                        |
| `terminal_reason` `prompt_too_long` or            | `limit`/`context`                     |
| `blocking_limit` (compacting could not make room) |                                       |
| `terminal_reason` `aborted_*`, the task cancelled | `cancelled`                           |
| `is_error`, other subtypes, any exception         | `error`, with its type                |
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from typing import Any

from agent._extras import needs_extra

with needs_extra("claude-agent-sdk", "agent.integrations.claude_agent_sdk"):
    from claude_agent_sdk import (
        AssistantMessage,
        ClaudeAgentOptions,
        HookMatcher,
        ResultMessage,
        SystemMessage,
        TextBlock,
        ToolResultBlock,
        ToolUseBlock,
        UserMessage,
        query,
    )

from agent._valid import is_count, is_finite_from_zero
from agent.errors import ConfigError
from agent.hooks import RunHooks
from agent.integrations._framework import require
from agent.integrations._observe import (
    OPTIONS,
    Recorder,
    Usage,
    answered_late,
    check_keywords,
    reading_state,
    run_of_saved,
    same_model,
    saved_with_run,
)
from agent.integrations._sync import run_sync
from agent.result import LimitKind, PendingAction, RunResult, StopCause, StopReason
from agent.text import json_text
from agent.tools import TOOL_ERROR, UNKNOWN_TOOL, own_cancels
from agent.verify import Verifier

PROVIDER = "anthropic"
RESUME: Any = object()  # the prompt of a resumed session: none, the deferred call goes first
LIMITS = {"error_max_turns": LimitKind.TURNS, "error_max_budget_usd": LimitKind.COST}
# The CLI's ends for a context window its compaction could not make room in (an `is_error` result).
CONTEXT_FULL = ("prompt_too_long", "blocking_limit")
NO_SUCH_TOOL = "No such tool available: "  # how the CLI answers a call of a tool it does not have
DEFAULT_MODEL = "claude"  # the run's model label with no `options.model`: its calls count under their own


def _names(given: str, model: str) -> bool:
    """Whether a model the options give (an id, or the CLI's alias: `haiku`) names `model`, an id."""
    return same_model(model, given) or ("-" not in given and f"-{given}-" in f"-{model}-")


class ModelCallFailed(Exception):
    """A model call the CLI reports as failed: the synthetic assistant message it gives in the reply's
    place (`model="<synthetic>"`, no tokens), `error` its kind (`rate_limit`, `invalid_request`, ...)."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(f"{kind}: {text}" if text else kind)
        self.error_type = kind  # the failed call's `error.type`, as telemetry names it


class MessageReader:
    """Feeds a `Recorder` from the SDK's messages, in the order the CLI sends them."""

    def __init__(self, recorder: Recorder, fallback: str | None = None) -> None:
        self.recorder, self.fallback = recorder, fallback or ""  # the options' `fallback_model`
        self.result: ResultMessage | None = None
        self.blocked = ""  # what the CLI said when a hook stopped the run before it went on
        self.ended = asyncio.Event()
        self._open: list[AssistantMessage] = []  # the fragments of the reply being read
        self._told = False  # its model call is recorded (at its first tool call): later tools start at once
        self._tools: dict[str, str] = {}  # open tool calls: id -> name

    def read(self, message: Any) -> None:
        if not self._fragment_of_open(message):
            self.flush()
        if isinstance(message, AssistantMessage):
            self._assistant(message)
        elif isinstance(message, UserMessage):
            self._tool_results(message)
        elif isinstance(message, ResultMessage):
            self.result = message
            self.ended.set()
        elif isinstance(message, SystemMessage) and message.data.get("prevent_continuation") is True:
            self.blocked = str(message.data.get("content") or "a hook stopped the run")

    def reopen(self, call: PendingAction) -> None:
        """A deferred call that the resumed session runs before anything else."""
        self._tools[call.tool_use_id] = call.name
        self.recorder.tool_started(call.tool_use_id, call.name, call.arguments)

    def _fragment_of_open(self, message: Any) -> bool:
        """Whether `message` is one more block of the reply being read (the CLI sends one assistant
        message per content block, each with the reply's id and usage)."""
        open_ = self._open[0] if self._open else None
        return (
            open_ is not None
            and isinstance(message, AssistantMessage)
            and not message.error
            and not message.parent_tool_use_id
            and message.message_id is not None
            and message.message_id == open_.message_id
        )

    def _assistant(self, message: AssistantMessage) -> None:
        if message.parent_tool_use_id:  # a subagent's message: part of the tool call that started it
            return
        if message.error:  # no reply: the call failed (its text says why), on the run's model
            text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
            self.recorder.model_started()
            self.recorder.model_ended(Usage(), error=ModelCallFailed(str(message.error), text))
            return
        self._open.append(message)
        uses = [b for b in message.content if isinstance(b, ToolUseBlock)]
        if uses and not self._told:  # the tool may run now: the call ends before its span starts
            self._tell()
        elif uses:  # a further call of a reply already recorded: in its output; its span starts now
            self.recorder.reply_went_on((b.id, b.name, b.input) for b in uses)
            self._start(uses)

    def _start(self, uses: list[ToolUseBlock]) -> None:
        for block in uses:
            self._tools[block.id] = block.name
            self.recorder.tool_started(block.id, block.name, block.input)

    def flush(self) -> None:
        """The reply read so far is over: recorded, if no tool call of it has recorded it yet."""
        if self._open and not self._told:
            self._tell()
        self._open, self._told = [], False

    def _tell(self) -> None:
        """Record the reply's fragments so far as one model call (its text and tool calls, its usage
        once: each fragment repeats it), then start their tool calls."""
        fragments, self._told = self._open, True
        first, blocks = fragments[0], [b for m in fragments for b in m.content]
        calls = [b for b in blocks if isinstance(b, ToolUseBlock)]
        stop_reason = next((m.stop_reason for m in reversed(fragments) if m.stop_reason), None)
        self.recorder.model_started()
        self.recorder.model_ended(
            Usage(**_tokens(first.usage or {}), cost_usd=None),
            text="".join(b.text for b in blocks if isinstance(b, TextBlock)),
            stop_reason=stop_reason or ("tool_use" if calls else "end_turn"),
            model=first.model,
            response_id=first.message_id or "",
            call_model=self._served_by(first.model),
            calls=((b.id, b.name, b.input) for b in calls),
        )
        self._start(calls)

    def _served_by(self, model: str) -> str:
        """The model a message's call is labelled by, when not the run's: the one it names when the
        run named none, or when it is the run's fallback model (the CLI fell back to it)."""
        if self.recorder.info.model == DEFAULT_MODEL or (self.fallback and _names(self.fallback, model)):
            return model
        return ""

    def _tool_results(self, message: UserMessage) -> None:
        if isinstance(message.content, str) or message.parent_tool_use_id:
            return
        for block in message.content:
            if isinstance(block, ToolResultBlock) and block.tool_use_id in self._tools:
                name, text = self._tools.pop(block.tool_use_id), _text(block.content)
                error = _failure(name, text) if block.is_error else None
                self.recorder.tool_ended(block.tool_use_id, name, text, error)


def _failure(name: str, text: str) -> str:
    """How a tool call the CLI answered with an error failed: `unknown_tool` for a tool the CLI does
    not have (its "No such tool available: NAME"), as in Endstate's own runs; else `tool_error`."""
    return UNKNOWN_TOOL if f"{NO_SUCH_TOOL}{name}" in text else TOOL_ERROR


def run(prompt: str | AsyncIterable[dict[str, Any]], **kwargs: Any) -> RunResult:
    """Sync entry point; see `arun`."""
    return run_sync(arun(prompt, **kwargs))


async def arun(
    prompt: str | AsyncIterable[dict[str, Any]],
    *,
    options: ClaudeAgentOptions | None = None,
    hooks: RunHooks | None = None,
    task_type: str = "default",
    verifiers: Sequence[Verifier] | Verifier | None = None,
    run_id: str | None = None,
    agent_name: str | None = "claude_agent",
    resumed: RunResult | None = None,
    help_seconds: float | None = None,
    **query_kwargs: Any,
) -> RunResult:
    """`claude_agent_sdk.query(prompt=..., options=..., **query_kwargs)`, ended in a stop reason.

    The SDK's `ResultMessage` (or the exception) is at `result.raw`; a deferred call waits
    `help_seconds` (default a day). Never raises for an expected stop.
    """
    check_keywords("claude_agent_sdk.run()", query, query_kwargs, OPTIONS, ("prompt",))
    options = options or ClaudeAgentOptions()
    recorder = Recorder.start(
        hooks,
        agent=agent_name or "claude_agent",  # None or "": the default name
        task_type=task_type,
        model=options.model or DEFAULT_MODEL,
        provider=PROVIDER,
        task=prompt if isinstance(prompt, str) else "",
        tools=list(options.allowed_tools or ()),
        limits=_limits(options),
        verifiers=verifiers,
        run_id=run_id,
        resumed=resumed,
        help_seconds=help_seconds,
    )
    reader = MessageReader(recorder, options.fallback_model)
    if prompt is RESUME:
        prompt = _no_prompt(reader.ended)
        if resumed is not None and resumed.suspension and resumed.suspension.pending:
            reader.reopen(resumed.suspension.pending)  # the deferred call runs first, in this segment
    with own_cancels():  # a cancel left on the task by an earlier run is not this run's
        try:
            async for message in query(prompt=prompt, options=options, **query_kwargs):
                reader.read(message)
            reader.flush()
        except (Exception, asyncio.CancelledError) as exc:
            reader.flush()  # the reply read before it is a call made
            if reader.result is None or isinstance(exc, asyncio.CancelledError):
                return recorder.fail(exc, raw=exc)
            # The SDK raises once the CLI exits non-zero, after its result: the result says how it ended.
        except BaseException as exc:  # a SystemExit, Ctrl-C, a library's own: the run ends, it goes on up
            reader.flush()
            recorder.fail(exc, raw=exc)
            raise
    return _conclude(recorder, reader)


def state_of(result: RunResult) -> str:
    """A `need_help` result's saved state as JSON (its session and deferred call): what a store keeps."""
    raw = result.raw
    deferred = getattr(raw, "deferred_tool_use", None)
    if deferred is None:
        raise ConfigError("only a need_help result of this integration has a state to save")
    call = {"id": deferred.id, "name": deferred.name, "input": deferred.input}
    return saved_with_run(result, {"session_id": raw.session_id, "deferred_tool_use": call})


def resume(state: Any, approved: bool, answer: str | None = None, **kwargs: Any) -> RunResult:
    """Sync entry point; see `aresume`."""
    return run_sync(aresume(state, approved, answer, **kwargs))


async def aresume(
    state: Any,
    approved: bool,
    answer: str | None = None,
    *,
    options: ClaudeAgentOptions | None = None,
    **kwargs: Any,
) -> RunResult:
    """Continue a `need_help` run in its session, with the person's decision on the deferred call.

    On resume the CLI runs the deferred tool call through the PreToolUse hooks
    again: Endstate answers for that call (allow, or deny with `answer` as the
    reason) and your own PreToolUse hooks decide every other call as before.
    `state` is the suspended `RunResult` (same run id, its wait recorded),
    its `raw` `ResultMessage`, or the JSON from `state_of` (what a store keeps).
    """
    if isinstance(state, RunResult):
        kwargs.setdefault("resumed", state)
        state = state.raw
    with reading_state("claude_agent_sdk.resume", "a need_help result, its raw ResultMessage or state_of()"):
        session_id, call_id, tool = _session(run_of_saved(state, kwargs))
    if (late := answered_late(kwargs, PROVIDER)) is not None:
        return late
    options = options or ClaudeAgentOptions()
    hooks = _deciding(options.hooks or {}, call_id, tool, approved, answer)
    options = dataclasses.replace(options, resume=session_id, hooks=hooks)
    return await arun(RESUME, options=options, **kwargs)


def _session(state: Any) -> tuple[str, str, str]:
    """The session id, the deferred call's id and its tool, from a `ResultMessage` or `state_of` JSON."""
    if isinstance(state, str | bytes):
        saved = json.loads(state)
        session_id, deferred = saved.get("session_id"), saved.get("deferred_tool_use") or {}
        call_id, tool = deferred.get("id"), deferred.get("name")
    else:
        deferred = getattr(state, "deferred_tool_use", None)
        session_id = getattr(state, "session_id", None)
        call_id, tool = getattr(deferred, "id", None), getattr(deferred, "name", None)
    if not (session_id and call_id and tool):
        raise ConfigError("resume needs a need_help result of this integration, or its state_of()")
    return str(session_id), str(call_id), str(tool)


def _deciding(
    hooks: dict[Any, list[HookMatcher]], call_id: str, tool: str, approved: bool, answer: str | None
) -> dict[Any, list[HookMatcher]]:
    """The caller's hooks, with the person's decision answering for the call `call_id` alone."""

    async def decide(input: Any, tool_use_id: str | None, context: Any) -> Any:
        if tool_use_id != call_id:
            return {}
        decision = "allow" if approved else "deny"
        reason = answer or ("Approved by a person." if approved else "Denied by a person.")
        output = {"hookEventName": "PreToolUse", "permissionDecision": decision}
        return {"hookSpecificOutput": output | {"permissionDecisionReason": reason}}

    theirs = [
        dataclasses.replace(m, hooks=[_skipping(h, call_id) for h in m.hooks])
        for m in hooks.get("PreToolUse", [])
    ]
    return {**hooks, "PreToolUse": [HookMatcher(matcher=tool, hooks=[decide]), *theirs]}


def _skipping(hook: Any, call_id: str) -> Any:
    """`hook`, silent for the call that the person decides."""

    async def call(input: Any, tool_use_id: str | None, context: Any) -> Any:
        return {} if tool_use_id == call_id else await hook(input, tool_use_id, context)

    return call


async def _no_prompt(ended: asyncio.Event) -> AsyncIterator[dict[str, Any]]:
    """No new message: the resumed session goes on from the deferred call.

    Streaming input kept open until the result comes: closing it at once
    would read as the person interrupting, and the call would not run.
    """
    await ended.wait()
    nothing: list[dict[str, Any]] = []
    for message in nothing:
        yield message


def _conclude(recorder: Recorder, reader: MessageReader) -> RunResult:
    """The stop reason the `ResultMessage` gives, with its totals."""
    result = reader.result
    if result is None:
        return recorder.finish(
            StopReason.ERROR, note="the CLI ended without a result", error_type="no_result"
        )
    _totals(recorder, result)
    errors = [str(e) for e in result.errors or () if isinstance(e, str | int | float) and str(e)]
    note = "; ".join(errors) or (result.result if isinstance(result.result, str) else "")
    if (result.terminal_reason or "").startswith("aborted"):
        return recorder.finish(StopReason.CANCELLED, note=note, raw=result)
    if result.subtype in LIMITS:
        return recorder.finish(StopReason.LIMIT, limit=LIMITS[result.subtype], note=note, raw=result)
    if result.terminal_reason in CONTEXT_FULL:
        return recorder.finish(StopReason.LIMIT, limit=LimitKind.CONTEXT, note=note, raw=result)
    if result.subtype != "success" or result.is_error:
        status = f"http_{result.api_error_status}" if result.api_error_status else result.subtype
        return recorder.finish(StopReason.ERROR, note=note, error_type=status, raw=result)
    if result.stop_reason == "refusal":
        return recorder.finish(StopReason.GAVE_UP, cause=StopCause.REFUSAL, note=note, raw=result)
    if stopped := _hook_stop(result, reader.blocked):
        return recorder.finish(StopReason.GAVE_UP, cause=StopCause.GUARDRAIL, note=stopped, raw=result)
    if result.deferred_tool_use is not None:
        d = result.deferred_tool_use
        question = f"Approve {d.name}({json_text(d.input, default=str)})?"  # what the call would do
        return recorder.suspend(question, PendingAction(d.id, d.name, dict(d.input)), raw=result)
    output = result.structured_output if result.structured_output is not None else result.result or ""
    return recorder.succeed(output, raw=result)


def _hook_stop(result: ResultMessage, blocked: str) -> str:
    """Why a hook of the team's stopped the run (empty: none did). A tool hook's `"continue": false`
    ends it `terminal_reason: "hook_stopped"` (the CLI passes on no `stopReason`); a prompt a
    UserPromptSubmit hook blocked is said in a system message (`prevent_continuation`), the run ending
    with no model call. A Stop hook's, once Claude has answered (`stop_hook_prevented`), is neither."""
    if result.terminal_reason == "hook_stopped":
        return "A hook stopped the run (terminal_reason hook_stopped)."
    if blocked and result.num_turns == 0:
        return blocked
    return ""


def _totals(recorder: Recorder, result: ResultMessage) -> None:
    """The run's tokens and cost as the CLI counted them (authoritative over the per-message sums)."""
    usage = result.usage  # none (or no mapping): the messages' sums stand
    totals: dict[str, Any] = _tokens(usage) if usage and isinstance(usage, Mapping) else {}
    spent = recorder.info.spent
    if spent is not None:  # a resumed session reports its own totals: add the earlier segments'
        totals = {k: v + getattr(spent.usage, k) for k, v in totals.items()}
    if result.total_cost_usd is not None:  # an amount that is none (NaN, negative, text): unknown
        cost = result.total_cost_usd if _billable(result.total_cost_usd, totals, recorder) else None
        earlier = spent.usage.cost_usd if spent else 0.0  # None when an earlier segment's was unknown
        totals["cost_usd"] = None if earlier is None or cost is None else float(cost) + earlier
    if totals:
        recorder.usage = dataclasses.replace(recorder.usage, **totals)


# USD per million tokens above the dearest any Claude model lists (fast mode's long-prompt output,
# $225), with room for web searches ($10 per 1,000, each bringing its results as input tokens).
_DEAREST_PER_MTOK = 1_000.0


def _billable(cost: Any, totals: Mapping[str, int], recorder: Recorder) -> bool:
    """Whether the CLI's `total_cost_usd` is an amount the API could have billed: finite, >= 0 and
    no more than the segment's tokens (the CLI's totals, else its messages' sums) cost at a price
    above any model's. Past it (a cost of $10**15 for 100 tokens) it is unknown, never the run's."""
    if not is_finite_from_zero(cost):
        return False
    seen = recorder.usage.input_tokens + recorder.usage.output_tokens
    tokens = max(totals.get("input_tokens", 0) + totals.get("output_tokens", 0), seen, 1_000)
    return cost <= tokens * _DEAREST_PER_MTOK / 1e6


def _tokens(usage: Any) -> dict[str, int]:
    """The Messages API's usage as Endstate counts it: the input includes the cache reads and writes."""
    read, write = _count(usage, "cache_read_input_tokens"), _count(usage, "cache_creation_input_tokens")
    return {
        "input_tokens": _count(usage, "input_tokens") + read + write,
        "output_tokens": _count(usage, "output_tokens"),
        "cache_read_tokens": read,
        "cache_write_tokens": write,
    }


def _count(usage: Any, field: str) -> int:
    """A count the CLI gives, or 0 when it is missing or no whole number >= 0 (as the Anthropic
    adapter reads the API's: a negative count, text or a float is never counted)."""
    value = usage.get(field) if isinstance(usage, Mapping) else None
    return value if is_count(value) else 0


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def _limits(options: ClaudeAgentOptions) -> dict[str, float]:
    found = {LimitKind.TURNS: options.max_turns, LimitKind.COST: getattr(options, "max_budget_usd", None)}
    return {str(k): float(v) for k, v in found.items() if v is not None}


require(  # what this module reads of the SDK's messages and options
    "claude-agent-sdk",
    "claude-agent-sdk",
    {
        ResultMessage: (
            "subtype",
            "is_error",
            "terminal_reason",
            "stop_reason",
            "deferred_tool_use",
            "api_error_status",
            "structured_output",
            "errors",
            "usage",
            "total_cost_usd",
            "num_turns",
        ),
        AssistantMessage: ("message_id", "error", "model", "stop_reason", "usage", "parent_tool_use_id"),
        UserMessage: ("parent_tool_use_id",),
        SystemMessage: ("data",),
        ClaudeAgentOptions: ("max_turns", "max_budget_usd", "fallback_model", "resume", "hooks"),
    },
)
