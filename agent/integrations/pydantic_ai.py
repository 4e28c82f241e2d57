"""Pydantic AI runs with Endstate's stop reasons, spans and metrics.

    from agent.integrations import pydantic_ai as endstate_pai
    result = endstate_pai.run(agent, "Summarise the ticket", hooks=hooks, task_type="ticket")

The run is driven through `agent.iter` exactly as `agent.run` drives itself,
and read node by node: one turn per model request node (its response gives
the usage, text and finish reason), holding the tool calls that follow it,
each read from its call-tools node's event stream as it starts and ends. A run
that streams its events to an `event_stream_handler`, or has a capability
hooking node runs, is read by an `EndstateCapability` added to it instead (the
mechanism of Pydantic AI's own instrumentation; Pydantic AI dispatches every
hook of every capability, about 5% of a scripted turn). Endstate makes no span
of its own when Pydantic AI also instruments the run: its spans are Pydantic
AI's, Endstate's are Endstate's, and each call is recorded once by each. A
delegate agent run in a tool with `usage=ctx.usage` counts in the run's tokens,
as Pydantic AI counts it (unpriced; no spans), unless it is observed as a run
of its own through this integration: then it counts there, not twice. A run
the caller streams (`run_stream`) or drives node by node (`iter`) is read by an
`EndstateCapability`. A tool call past its timeout (`tool_timeout=`, Pydantic AI's retry
"Timed out after N seconds.") is a timed-out call (outcome `timeout`), as Endstate's own. How runs end:

| Pydantic AI                                   | Endstate                              |
| --------------------------------------------- | ------------------------------------- |
| an output                                     | `success` (checked by the verifiers)  |
| `DeferredToolRequests` output                 | `need_help`, resumable with `resume`  |
| `UsageLimitExceeded`: request or tool calls   | `limit`/`turns`                       |
| `UsageLimitExceeded`: tokens                  | `limit`/`tokens`                      |
| `UsageLimitExceeded`: cost                    | `limit`/`cost`                        |
| `RunTimedOut` (the run's own `timeout=`)      | `limit`/`seconds`                     |
| `ModelContextWindowExceededError`             | `limit`/`context`                     |
| `ContentFilterError` (the provider refused),  | `gave_up`, cause `refusal`            |
| or an output from a refused response          |                                       |
| `RunCancelled`, the task cancelled            | `cancelled`                           |
| any other exception                           | `error`, with its type                |
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import re
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent._extras import needs_extra

with needs_extra("pydantic-ai", "agent.integrations.pydantic_ai"):
    from pydantic_ai import Agent as PAIAgent
    from pydantic_ai.agent import AbstractAgent
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import (
        ApprovalRequired,
        CallDeferred,
        ContentFilterError,
        ModelContextWindowExceededError,
        RunCancelled,
        RunTimedOut,
        ToolRetryError,
        UsageLimitExceeded,
    )
    from pydantic_ai.messages import (
        FunctionToolCallEvent,
        FunctionToolResultEvent,
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import parse_model_id
    from pydantic_ai.models.fallback import FallbackModel
    from pydantic_ai.models.wrapper import WrapperModel
    from pydantic_ai.run import AgentRun, AgentRunResult
    from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied
    from pydantic_ai.usage import RunUsage, UsageLimits

from agent.errors import ConfigError
from agent.hooks import RunHooks
from agent.integrations._framework import require
from agent.integrations._observe import (
    OPTIONS,
    Recorder,
    Usage,
    answered_late,
    check_keywords,
    need,
    reading_state,
    run_of_saved,
    same_model,
    saved_with_run,
)
from agent.integrations._sync import run_sync
from agent.models.base import StopKind
from agent.result import LimitKind, PendingAction, RunResult, StopCause, StopReason
from agent.text import json_text
from agent.tools import UNKNOWN_TOOL, own_cancels, said
from agent.verify import Verifier

PROVIDER = "pydantic_ai"


class EndstateCapability(AbstractCapability[Any]):
    """Reports each model request and tool call of one run to a `Recorder`.

    Used only when the run streams its events to an `event_stream_handler` or has a capability
    hooking node runs (see `arun`); otherwise the run's nodes are read as `Agent.iter` gives them.
    """

    def __init__(self, recorder: Recorder, totals: _Totals | None = None) -> None:
        self.recorder, self.totals = recorder, totals or _Totals()
        self.owner = _current_task()  # the run's own task (made in it; None: made outside any)

    async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
        self.totals.usage = ctx.usage
        sent = request_context.messages[:] if self.recorder.watched else []  # as it stands now
        self.recorder.model_started(messages=lambda: api_messages(sent))
        try:
            response: ModelResponse = await handler(request_context)
        except asyncio.CancelledError as exc:
            if not _cancelling(self.owner):  # Pydantic AI cancelled a streamed request's own task as its
                raise  # stream failed or closed: the run's end says how the call ended (`call_failed`)
            self.recorder.model_ended(Usage(), error=exc)
            raise
        except BaseException as exc:
            self.recorder.model_ended(Usage(), error=exc)
            raise
        _replied(self.recorder, response, ctx.model, ctx.usage)
        return response

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any) -> Any:
        if not self.recorder.watched:  # nobody to tell: the call's shape is not even built
            return await handler(args)
        call_id, name = call.tool_call_id, call.tool_name
        self.recorder.tool_started(call_id, name, call.args_as_dict())
        try:
            result = await handler(args)
        except (ApprovalRequired, CallDeferred):
            raise  # not run: the call waits for a person (its span ends as interrupted)
        except Exception as exc:
            self.recorder.tool_ended(call_id, name, said(exc), _failure(exc))
            raise
        self.recorder.tool_ended(call_id, name, str(result))
        return result


def run(agent: PAIAgent[Any, Any], user_prompt: Any = None, **kwargs: Any) -> RunResult:
    """Sync entry point; see `arun`."""
    _name_by_caller(agent, kwargs)  # here: the caller's frame is out of reach inside the event loop
    return run_sync(arun(agent, user_prompt, **kwargs))


async def arun(
    agent: PAIAgent[Any, Any],
    user_prompt: Any = None,
    *,
    hooks: RunHooks | None = None,
    task_type: str = "default",
    verifiers: Sequence[Verifier] | Verifier | None = None,
    run_id: str | None = None,
    resumed: RunResult | None = None,
    agent_name: str | None = None,
    help_seconds: float | None = None,
    **run_kwargs: Any,
) -> RunResult:
    """`agent.run(user_prompt, **run_kwargs)`, ended in a stop reason; the `AgentRunResult` (or the
    exception) is at `result.raw`. `agent_name` labels the run (default: the agent's name); a
    deferred call waits `help_seconds` (default a day). Never raises for an expected stop."""
    recorder = _recorder(
        agent,
        "run",
        user_prompt,
        run_kwargs,
        hooks=hooks,
        task_type=task_type,
        verifiers=verifiers,
        run_id=run_id,
        resumed=resumed,
        agent_name=agent_name,
        help_seconds=help_seconds,
    )
    totals = _Totals.of(run_kwargs.get("usage"))
    with own_cancels():  # a cancel left on the task by an earlier run is not this run's
        try:
            with recorder.running():
                result = await _run(agent, user_prompt, recorder, run_kwargs, totals)
        except (Exception, asyncio.CancelledError) as exc:
            totals.count(recorder)
            return _stopped(recorder, exc)
        except BaseException as exc:  # a SystemExit, Ctrl-C, a library's own: the run ends, it goes on up
            totals.count(recorder)
            _stopped(recorder, exc)
            raise
    totals.count(recorder)
    return _ended(recorder, result)


@contextlib.asynccontextmanager
async def run_stream(
    agent: PAIAgent[Any, Any],
    user_prompt: Any = None,
    *,
    hooks: RunHooks | None = None,
    task_type: str = "default",
    verifiers: Sequence[Verifier] | Verifier | None = None,
    run_id: str | None = None,
    resumed: RunResult | None = None,
    agent_name: str | None = None,
    help_seconds: float | None = None,
    **run_kwargs: Any,
) -> AsyncIterator[StreamedRun]:
    """`agent.run_stream(user_prompt, **run_kwargs)` observed as `arun` observes `agent.run`:

        async with endstate_pai.run_stream(agent, prompt, hooks=hooks, task_type="ticket") as run:
            async for text in run.stream_text():  # as Pydantic AI's StreamedRunResult streams it
                ...
        run.result  # the RunResult (set already if the run stopped before its output streamed)

    A stop Pydantic AI raises while the caller reads (a usage limit, a refusal), and the run's own
    failure (the provider's error, say) raised from `stream_text`/`stream_output`/`stream_response`,
    end the block and are the result, as `arun` never raises for them; one before the output began
    to stream is the result of a block that streams nothing. The caller's own exception is recorded
    (`error`) and goes on up; once the output has streamed to its end the run has ended (as `arun`
    returns), and one raised after that goes on up with the run's own stop recorded. A block left
    before the output has streamed to its end is the caller stopping, as one whose output the
    caller cancelled (`run.response.cancel()`): the run is cancelled.
    """
    recorder = _recorder(
        agent,
        "run_stream",
        user_prompt,
        run_kwargs,
        hooks=hooks,
        task_type=task_type,
        verifiers=verifiers,
        run_id=run_id,
        resumed=resumed,
        agent_name=agent_name,
        help_seconds=help_seconds,
    )
    run = StreamedRun()

    def opened(response: Any) -> None:
        run.response = response

    def stream(capabilities: list[Any]) -> Any:
        return agent.run_stream(user_prompt, capabilities=capabilities, **run_kwargs)

    def finished(response: Any) -> AgentRunResult[Any] | None:  # None: the caller stopped it first
        return response.result if response.is_complete and not response.cancelled else None

    async with _observed_block(recorder, run_kwargs, run, stream, opened, finished):
        yield run


@contextlib.asynccontextmanager
async def iter(  # Pydantic AI's name; this module calls no builtin iter
    agent: PAIAgent[Any, Any],
    user_prompt: Any = None,
    *,
    hooks: RunHooks | None = None,
    task_type: str = "default",
    verifiers: Sequence[Verifier] | Verifier | None = None,
    run_id: str | None = None,
    resumed: RunResult | None = None,
    agent_name: str | None = None,
    help_seconds: float | None = None,
    **run_kwargs: Any,
) -> AsyncIterator[IteratedRun]:
    """`agent.iter(user_prompt, **run_kwargs)` observed as `arun` observes `agent.run`:

        async with endstate_pai.iter(agent, prompt, hooks=hooks, task_type="ticket") as run:
            async for node in run.agent_run:  # Pydantic AI's AgentRun: its nodes, or `next(node)`
                ...
        run.result  # the RunResult

    As `run_stream`: a stop Pydantic AI raises while the caller drives the run ends the block and
    is the result (a failure before the run began too: `agent_run` is None); any other exception
    in the block, the run's failure raised from `agent_run` as the caller's own, is recorded
    (`error`) and goes on up (raised after the run reached its end: the run's own stop is
    recorded); a block left before the run reached its end is the caller stopping: the run is
    cancelled.
    """
    recorder = _recorder(
        agent,
        "iter",
        user_prompt,
        run_kwargs,
        hooks=hooks,
        task_type=task_type,
        verifiers=verifiers,
        run_id=run_id,
        resumed=resumed,
        agent_name=agent_name,
        help_seconds=help_seconds,
    )
    run = IteratedRun()

    def opened(agent_run: Any) -> None:
        run.agent_run = agent_run

    def driven(capabilities: list[Any]) -> Any:
        return agent.iter(user_prompt, capabilities=capabilities, **run_kwargs)

    async with _observed_block(recorder, run_kwargs, run, driven, opened, lambda r: r.result):
        yield run


@contextlib.asynccontextmanager
async def _observed_block(
    recorder: Recorder,
    run_kwargs: dict[str, Any],
    run: StreamedRun | IteratedRun,
    open_run: Callable[[list[Any]], Any],
    opened: Callable[[Any], None],
    finished: Callable[[Any], AgentRunResult[Any] | None],
) -> AsyncIterator[None]:
    """The caller's block around a run Pydantic AI opens (`open_run(capabilities)`, an async context
    manager), reported by an `EndstateCapability`; `run.result` set when the block ends (`finished`:
    the run's result, None if it never reached its end)."""
    totals = _Totals.of(run_kwargs.get("usage"))
    capabilities = [*(run_kwargs.pop("capabilities", None) or ()), EndstateCapability(recorder, totals)]
    yielded, response = False, None
    with own_cancels():  # a cancel left on the task by an earlier run is not this run's
        try:
            with recorder.running():
                async with open_run(capabilities) as response:
                    opened(response)
                    yielded = True
                    yield
                    done = finished(response)
        except BaseException as exc:
            totals.count(recorder)
            if yielded and not _ends_block(exc, yielded, run) and (done := finished(response)) is not None:
                run.result = _ended(recorder, done)  # the caller's own failure, after the run ended
                raise
            run.result = _stopped(recorder, exc)
            if not _ends_block(exc, yielded, run):
                raise
            if not yielded:  # the run stopped before the block began: the block sees the stop
                yield
            return
        totals.count(recorder)
        run.result = _ended(recorder, done)


def _ends_block(exc: BaseException, yielded: bool, run: StreamedRun | IteratedRun) -> bool:
    """Whether `exc` is the run's own stop, which ends the block as its result and is never raised
    (as `arun` never raises it): a stop Pydantic AI raises, or any failure of the run before the
    block began or in the stream the block reads. The caller's own exception and a cancellation go on."""
    if isinstance(exc, _STOPS):
        return True
    return isinstance(exc, Exception) and (not yielded or exc is getattr(run, "failed", None))


class IteratedRun:
    """A Pydantic AI run driven node by node: Pydantic AI's `AgentRun` at `agent_run` (None when
    the run stopped before it began), then `result`."""

    agent_run: Any = None
    result: RunResult | None = None


class StreamedRun:
    """A streamed Pydantic AI run: Pydantic AI's `StreamedRunResult` at `response` (None when the
    run stopped before its output began to stream), then `result`. Its `stream_text`,
    `stream_output` and `stream_response` are the response's, or give nothing after such a stop."""

    response: Any = None
    result: RunResult | None = None
    failed: BaseException | None = None  # the run's failure while its output streamed

    def stream_text(self, **kwargs: Any) -> AsyncIterator[str]:
        return self._stream("stream_text", kwargs)

    def stream_output(self, **kwargs: Any) -> AsyncIterator[Any]:
        return self._stream("stream_output", kwargs)

    def stream_response(self, **kwargs: Any) -> AsyncIterator[Any]:
        return self._stream("stream_response", kwargs)

    async def _stream(self, name: str, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        if self.response is None:
            return
        try:
            async for item in getattr(self.response, name)(**kwargs):
                yield item
        except Exception as exc:  # the run's, not the caller's: it ends the block as the run's stop
            self.failed = exc
            raise


# the stops Pydantic AI raises
_STOPS = (UsageLimitExceeded, ModelContextWindowExceededError, ContentFilterError, RunCancelled)
_FILLED = (
    "user_prompt",
    "run_id",
)  # of Pydantic AI's `Agent.run`: the prompt is given, its run id is Endstate's


def check_options(entry: str, options: Iterable[str]) -> None:
    """A clear `ConfigError` for an option of a catalog entry (`entry`) that `Agent.run` does not take."""
    check_keywords(entry, PAIAgent.run, options, (), _FILLED)


def _ended(recorder: Recorder, result: AgentRunResult[Any] | None) -> RunResult:
    """The run's output, a deferred call, or (None) a stream the caller stopped reading."""
    if result is None:
        return recorder.fail(GeneratorExit("the caller stopped reading the stream"))
    if isinstance(result.output, DeferredToolRequests):
        return _suspend(recorder, result.output, result)
    if recorder.last_stop == StopKind.REFUSED:  # its output is the refusal's text, as Pydantic AI keeps it
        note = "The model API refused: the run ended on its refusal (finish_reason content_filter)."
        return recorder.finish(StopReason.GAVE_UP, cause=StopCause.REFUSAL, note=note, raw=result)
    return recorder.succeed(result.output, raw=result)


@dataclass
class _Totals:
    """Pydantic AI's own usage of the run (`RunUsage`, shared with a delegate agent given
    `usage=ctx.usage`), what it was when this segment began, and what the observed runs sharing it
    had seen of it then (`_SEEN`)."""

    before: Usage = field(default_factory=Usage)
    usage: Any = None  # the run's live `RunUsage`, once the run has shown it
    seen_before: Usage = field(default_factory=Usage)

    @classmethod
    def of(cls, given: Any) -> _Totals:
        """A segment's, as it begins with the `usage=` it was given (None: Pydantic AI makes one)."""
        return cls(_usage(given), given, _SEEN.get(id(given), Usage()) if given is not None else Usage())

    def count(self, recorder: Recorder) -> None:
        """The calls Pydantic AI counted in the run that its nested runs made unobserved: what it grew
        by beyond the calls observed runs sharing it saw meanwhile (a delegate run at once beside
        this one, given the same `usage`, is observed: its calls are its own, not this run's)."""
        if self.usage is None:
            return
        seen = _SEEN.get(id(self.usage))
        meanwhile = None if seen is None else _less(seen, self.seen_before)
        recorder.count_unseen(_usage(self.usage), self.before, meanwhile)


# What the observed runs saw of each live `RunUsage` (their model calls, which Pydantic AI adds to it),
# by its id; an entry goes with its `RunUsage`. Delegates sharing one `usage` run at once (the tools of
# one reply run concurrently): each tells its own calls from the others' by it.
_SEEN: dict[int, Usage] = {}
_SEEN_LOCK = threading.Lock()


def _saw(usage: Any, call: Usage) -> None:
    """An observed run's model call, which Pydantic AI added to `usage` (its run's `RunUsage`)."""
    if usage is None:
        return
    key = id(usage)
    with _SEEN_LOCK:
        if key in _SEEN:
            _SEEN[key] = _SEEN[key] + call
            return
        try:
            weakref.finalize(usage, _SEEN.pop, key, None)
        except TypeError:  # a usage that cannot be watched: its runs count as each saw it alone
            return
        _SEEN[key] = call


def _less(now: Usage, before: Usage) -> Usage:
    """The tokens of `now` beyond `before`."""
    a, b = now, before
    return Usage(
        a.input_tokens - b.input_tokens,
        a.output_tokens - b.output_tokens,
        a.cache_read_tokens - b.cache_read_tokens,
        a.cache_write_tokens - b.cache_write_tokens,
    )


def _usage(usage: Any) -> Usage:
    """A `RunUsage`'s tokens (None: none)."""
    if usage is None:
        return Usage()
    tokens = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    return Usage(*tokens)


async def _run(
    agent: PAIAgent[Any, Any],
    user_prompt: Any,
    recorder: Recorder,
    run_kwargs: dict[str, Any],
    totals: _Totals,
) -> AgentRunResult[Any]:
    if _read_by_nodes(agent, run_kwargs):
        return await _run_nodes(agent, user_prompt, recorder, run_kwargs, totals)
    capabilities = [*(run_kwargs.pop("capabilities", None) or ()), EndstateCapability(recorder, totals)]
    return await agent.run(user_prompt, capabilities=capabilities, **run_kwargs)


def _stopped(recorder: Recorder, exc: BaseException) -> RunResult:
    """The stop an exception out of the run stands for (see the table above)."""
    if isinstance(exc, UsageLimitExceeded):
        return recorder.finish(StopReason.LIMIT, limit=limit_kind(exc), note=str(exc), raw=exc)
    if isinstance(exc, ContentFilterError):
        return recorder.finish(StopReason.GAVE_UP, cause=StopCause.REFUSAL, note=str(exc), raw=exc)
    if isinstance(exc, ModelContextWindowExceededError):  # nothing in the run could shrink the request
        return recorder.finish(StopReason.LIMIT, limit=LimitKind.CONTEXT, note=str(exc), raw=exc)
    if isinstance(exc, RunTimedOut):  # a `RunCancelled`, but the run's budget ran out: no one cancelled it
        return recorder.finish(StopReason.LIMIT, limit=LimitKind.SECONDS, note=str(exc), raw=exc)
    if isinstance(exc, RunCancelled):
        return recorder.finish(StopReason.CANCELLED, note=str(exc), raw=exc)
    return recorder.fail(exc, raw=exc)


# -- the run, node by node ---------------------------------------------------------------

_NODE_HOOKS = ("before_node_run", "after_node_run", "wrap_node_run", "on_node_run_error")
_WAITS = ("unapproved", "external")  # tool kinds whose calls wait for a person's answer, unrun
_TOOL_ERRORS = {"retried": "ToolRetryError", "failed": "ToolFailedError"}  # as the tool's handler raises them


def _read_by_nodes(agent: PAIAgent[Any, Any], run_kwargs: Mapping[str, Any]) -> bool:
    """Whether the run can be read node by node from `Agent.iter` exactly as `Agent.run` runs it.

    Not when an `event_stream_handler` takes the run's events (`run` streams every node to it), nor
    when a capability hooks node runs (reading a node's tool calls from its stream steps outside those
    hooks): then an `EndstateCapability` reports the run, at the cost of Pydantic AI's dispatch of
    every capability hook (about 5% of a scripted turn).
    """
    if run_kwargs.get("event_stream_handler") or getattr(agent, "event_stream_handler", None):
        return False
    capabilities = [agent.root_capability, *(run_kwargs.get("capabilities") or ())]
    return not any(_hooks_node_runs(c) for c in capabilities)


def _hooks_node_runs(capability: Any) -> bool:
    if not isinstance(capability, AbstractCapability):
        return True  # a capability given as a spec or a function: it may
    found: list[AbstractCapability[Any]] = []
    capability.apply(found.append)
    return any(_overrides(type(c), hook) for c in found for hook in _NODE_HOOKS)


def _overrides(kind: type, hook: str) -> bool:
    return getattr(kind, hook) is not getattr(AbstractCapability, hook)


async def _run_nodes(
    agent: PAIAgent[Any, Any],
    user_prompt: Any,
    recorder: Recorder,
    run_kwargs: Mapping[str, Any],
    totals: _Totals,
) -> AgentRunResult[Any]:
    """`agent.run`, driven through `agent.iter` as `run` drives itself, each model request and tool
    call reported as it happens."""
    async with agent.iter(user_prompt, **run_kwargs) as run:
        totals.usage = run.usage
        node: Any = run.next_node
        while not PAIAgent.is_end_node(node) and run.result is None:
            if PAIAgent.is_model_request_node(node):
                node = await _model_request(run, node, recorder)
            elif PAIAgent.is_call_tools_node(node) and recorder.watched:  # no hooks: nobody to tell
                node = await _tool_calls(run, node, recorder)
            else:
                node = await run.next(node)
    if run.result is None:
        raise RuntimeError("the Pydantic AI run ended without a result")
    return run.result


async def _model_request(run: AgentRun[Any, Any], node: Any, recorder: Recorder) -> Any:
    """Run a model request node, timed as the model call (a request the request limit refuses is no call)."""
    if not _may_request(run):
        return await run.next(node)  # raises UsageLimitExceeded
    recorder.model_started(messages=_sent(run, node) if recorder.watched else None)
    last = _last_message(run)
    try:
        after = await run.next(node)
    except BaseException as exc:
        response = _new_response(run, last)
        if response is None:
            recorder.model_ended(Usage(), error=exc)
        else:  # the response came, then a token or cost limit stopped the run
            _replied(recorder, response, run.ctx.deps.model, run.usage)
        raise
    response = after.model_response if PAIAgent.is_call_tools_node(after) else _new_response(run, last)
    if response is None:  # a capability skipped the request without a response
        recorder.model_ended(Usage())
    else:
        _replied(recorder, response, run.ctx.deps.model, run.usage)
    return after


def _may_request(run: AgentRun[Any, Any]) -> bool:
    try:
        run.ctx.deps.usage_limits.check_before_request(run.usage)
    except UsageLimitExceeded:
        return False
    return True


def _sent(run: AgentRun[Any, Any], node: Any) -> Callable[[], list[dict[str, Any]]]:
    """What a model request node sends, read when shown: the history so far, then its request."""
    sent = run.all_messages()
    if not sent or sent[-1] is not node.request:
        sent = [*sent, node.request]
    return lambda: api_messages(sent)


def api_messages(messages: Iterable[ModelMessage]) -> list[dict[str, Any]]:
    """Pydantic AI's messages in the Messages API's layout (a model call's captured input): user
    prompts and tool results (a retry prompt an error result) as user turns, replies' text and tool
    calls as assistant turns; system prompts, thinking and files are left out."""
    shown: list[dict[str, Any]] = []
    for message in messages:
        blocks = [b for part in message.parts if (b := _block(part)) is not None]
        role = "assistant" if isinstance(message, ModelResponse) else "user"
        if blocks:
            shown.append({"role": role, "content": blocks})
    return shown


def _block(part: Any) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.content}
    if isinstance(part, ToolCallPart):
        return {
            "type": "tool_use",
            "id": part.tool_call_id,
            "name": part.tool_name,
            "input": part.args_as_dict(),
        }
    if isinstance(part, ToolReturnPart):
        return {"type": "tool_result", "tool_use_id": part.tool_call_id, "content": part.model_response_str()}
    if isinstance(part, RetryPromptPart):
        text = part.model_response()
        if part.tool_call_id and part.tool_name:
            return {
                "type": "tool_result",
                "tool_use_id": part.tool_call_id,
                "content": text,
                "is_error": True,
            }
        return {"type": "text", "text": text}
    if isinstance(part, UserPromptPart):
        content = (
            part.content
            if isinstance(part.content, str)
            else " ".join(c for c in part.content if isinstance(c, str))
        )
        return {"type": "text", "text": content}
    return None


def _last_message(run: AgentRun[Any, Any]) -> ModelMessage | None:
    messages = run.all_messages()
    return messages[-1] if messages else None


def _new_response(run: AgentRun[Any, Any], last: ModelMessage | None) -> ModelResponse | None:
    """The response the node just added to the run's messages, if it added one."""
    message = _last_message(run)
    return message if isinstance(message, ModelResponse) and message is not last else None


async def _tool_calls(run: AgentRun[Any, Any], node: Any, recorder: Recorder) -> Any:
    """Run a call-tools node, each tool call reported as it starts and ends.

    The calls are read from the node's own event stream (`Agent.run` drains it too); a call is
    reported when its tool runs: not when its arguments fail validation, nor when it waits for a
    person, nor when an answer given on resume stands in for it.
    """
    running: dict[str, str] = {}  # call id -> tool name
    unknown: set[str] = set()  # the calls of tools the agent lacks (failed: `unknown_tool`)
    resumed = node.tool_call_results is not None
    try:
        async with node.stream(run.ctx) as events:
            async for event in events:
                if isinstance(event, FunctionToolCallEvent) and _unknown(run, event):
                    unknown.add(event.part.tool_call_id)
                if isinstance(event, FunctionToolCallEvent) and (
                    event.part.tool_call_id in unknown or _runs(run, event, resumed)
                ):
                    call = event.part
                    running[call.tool_call_id] = call.tool_name
                    recorder.tool_started(call.tool_call_id, call.tool_name, call.args_as_dict())
                elif isinstance(event, FunctionToolResultEvent) and event.tool_call_id in running:
                    name = running.pop(event.tool_call_id)
                    if event.tool_call_id in unknown:
                        recorder.tool_ended(event.tool_call_id, name, str(event.part.content), UNKNOWN_TOOL)
                    else:
                        _tool_returned(recorder, event.part, name)
    except Exception as exc:
        if (call_id := _raised_by(exc, running)) is not None:
            recorder.tool_ended(call_id, running[call_id], said(exc), type(exc).__name__)
        raise
    return await run.next(node)


def _raised_by(exc: BaseException, running: Mapping[str, str]) -> str | None:
    """Which of the running calls (by id) raised `exc`: the only one running, else the call Pydantic
    AI's tool execution held (a local `call`) where it raised; None when no frame tells."""
    if len(running) == 1:
        ((only, _),) = running.items()
        return only
    frames = exc.__traceback__
    while frames is not None:
        call = frames.tb_frame.f_locals.get("call")
        if isinstance(call, ToolCallPart) and call.tool_call_id in running:
            return call.tool_call_id
        frames = frames.tb_next
    return None


def _tool_returned(recorder: Recorder, part: Any, name: str) -> None:
    error_type = TOOL_TIMEOUT if _timed_out(part) else _TOOL_ERRORS.get(part.outcome)
    recorder.tool_ended(part.tool_call_id, name, str(part.content), error_type)


def _failure(exc: Exception) -> str:
    """The error type of a tool call's failure: `timeout` for one past its timeout, else its class."""
    return (
        TOOL_TIMEOUT if isinstance(exc, ToolRetryError) and _timed_out(exc.tool_retry) else type(exc).__name__
    )


def _timed_out(part: Any) -> bool:
    """Whether a tool's return is Pydantic AI's retry for a call past its timeout (`tool_timeout=`, or
    the tool's `timeout=`): its function toolset's own text, `Timed out after N seconds.`"""
    content = getattr(part, "content", None)
    return (
        getattr(part, "outcome", None) == "retried"
        and isinstance(content, str)
        and bool(_TIMED_OUT.fullmatch(content))
    )


TOOL_TIMEOUT = "timeout"  # error.type of a call past its timeout (outcome `timeout`, as Endstate's own tools)
_TIMED_OUT = re.compile(r"Timed out after [0-9.e+-]+ seconds\.")  # Pydantic AI's text for it


def _unknown(run: AgentRun[Any, Any], event: FunctionToolCallEvent) -> bool:
    """Whether a call event is for a tool the agent does not have (Pydantic AI answers it with a
    retry, "Unknown tool name"): a failed call, as in Endstate's own runs."""
    return run.ctx.deps.tool_manager.get_tool_def(event.part.tool_name) is None


def _runs(run: AgentRun[Any, Any], event: FunctionToolCallEvent, resumed: bool) -> bool:
    """Whether the tool of a call event runs now: valid arguments, and no person to wait for first."""
    if event.args_valid is not True:
        return False
    if resumed:  # the answers are in: approved calls run
        return True
    tool = run.ctx.deps.tool_manager.get_tool_def(event.part.tool_name)
    return tool is None or tool.kind not in _WAITS


def _replied(recorder: Recorder, response: ModelResponse, model: Any, usage: Any) -> None:
    """A response of `model` (the run's model for this step) ends its model call; Pydantic AI added
    it to `usage`, the run's `RunUsage` (`_saw`)."""
    used = _usage_of(response)
    _saw(usage, used)
    recorder.model_ended(
        used,
        text=response.text or "",
        stop_reason=response.finish_reason or "end_turn",
        model=response.model_name or "",
        response_id=response.provider_response_id or "",
        stop=_FINISHES.get(response.finish_reason, StopKind.OTHER) if response.finish_reason else None,
        call_model=_served_by(model, response) if recorder.watched else "",
        calls=((c.tool_call_id, c.tool_name, c.args_as_dict()) for c in response.tool_calls)
        if recorder.watched
        else (),
    )


def _served_by(model: Any, response: ModelResponse) -> str:
    """The model that served a request: the step's model (a model selector picks one per step), or
    of a `FallbackModel` the one that answered, as Pydantic AI's own spans name it (also inside a
    wrapper: a `ConcurrencyLimitedModel`, Pydantic AI's instrumentation)."""
    while isinstance(model, WrapperModel):
        model = model.wrapped
    if isinstance(model, FallbackModel):
        named = response.model_name or ""
        return next((m.model_name for m in model.models if same_model(named, m.model_name)), named)
    return str(getattr(model, "model_name", "") or "")


_FINISHES = {  # Pydantic AI's finish reasons (`FinishReason`) as stop kinds
    "stop": StopKind.END,
    "tool_call": StopKind.TOOL_USE,
    "length": StopKind.MAX_TOKENS,
    "content_filter": StopKind.REFUSED,
    "error": StopKind.OTHER,
}


def state_of(result: RunResult) -> str:
    """A `need_help` result's saved state as JSON (its messages and pending calls): what a store keeps."""
    messages, pending = _saved(result.raw)
    history = json.loads(ModelMessagesTypeAdapter.dump_json(messages))
    return saved_with_run(result, {"messages": history, "pending": pending})


def resume(
    agent: PAIAgent[Any, Any],
    state: Any,
    approved: bool | None = None,
    answer: Any = None,
    **kwargs: Any,
) -> RunResult:
    """Sync entry point; see `aresume`."""
    return run_sync(aresume(agent, state, approved, answer, **kwargs))


async def aresume(
    agent: PAIAgent[Any, Any],
    state: Any,
    approved: bool | None = None,
    answer: Any = None,
    **kwargs: Any,
) -> RunResult:
    """Continue a `need_help` run with the person's decision.

    `state` is the suspended `RunResult` itself (same run id, its wait
    recorded), its `raw` (an `AgentRunResult`), the JSON from `state_of`
    (what a store keeps), or the JSON of its messages alone
    (`raw.all_messages_json()`: every pending call taken as an approval).
    Pending approvals are approved when `approved` is true, else denied with
    `answer` as the reason; a pending external call gets `answer` as its result.
    """
    if isinstance(state, RunResult):
        kwargs.setdefault("resumed", state)
        state = state.raw
    with reading_state("pydantic_ai.resume", _STATE):
        messages, pending = _saved(run_of_saved(state, kwargs))
    if (late := answered_late(kwargs, PROVIDER)) is not None:
        return late
    if not pending:
        raise ConfigError("this state has no pending tool call to answer: pass the raw of a need_help result")
    results = DeferredToolResults()
    for call_id, kind in pending.items():
        if kind == "approval":
            if approved is None:
                raise ConfigError("a pending approval needs approved=True or approved=False")
            results.approvals[call_id] = (
                True if approved else ToolDenied(str(answer or "Denied by a person."))
            )
        else:
            results.calls[call_id] = answer
    return await arun(agent, None, message_history=messages, deferred_tool_results=results, **kwargs)


def _usage_of(response: ModelResponse) -> Usage:
    """A response's tokens (input counting its cache reads and writes, as Endstate's do) and price."""
    u = response.usage
    return Usage(u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, _cost(response))


def _cost(response: ModelResponse) -> float | None:
    """The response's price in US dollars; None when Pydantic AI has no price for its model (or
    the response has no usage).

    Pydantic AI prices each response it records (the gateway's reported cost, else genai-prices);
    a capability sees the response before that, so it looks the price up itself. A model found
    unpriced is remembered: looking it up again costs about as much as a scripted turn.
    """
    if response.usage.cost is not None:
        return float(response.usage.cost)
    model = (response.model_name, response.provider_url, response.provider_name)
    if not response.model_name or model in _UNPRICED:
        return None
    try:
        return float(response.cost().total_price)
    except LookupError:
        if len(_UNPRICED) < MAX_UNPRICED:
            _UNPRICED.add(model)
        return None
    except ValueError:  # this response omitted its usage
        return None


MAX_UNPRICED = 1000  # models remembered as unpriced (a bound: model names come from responses)
_UNPRICED: set[tuple[str | None, str | None, str | None]] = set()


def limit_kind(exc: UsageLimitExceeded) -> LimitKind:
    """Which budget a `UsageLimitExceeded` names: requests and tool calls are turns."""
    text = str(exc)
    if "tokens_limit" in text:
        return LimitKind.TOKENS
    if "cost_limit" in text:
        return LimitKind.COST
    return LimitKind.TURNS


def _suspend(recorder: Recorder, requests: DeferredToolRequests, result: Any) -> RunResult:
    """An approval waits with its call pending; an external call is a question: the answer is its result.

    Pydantic AI takes the answers to all the calls that wait at once, so one answer covers them all:
    the question names each.
    """
    waiting = [*requests.approvals, *requests.calls]
    first = waiting[0]
    arguments = first.args_as_dict()
    verb = "Approve" if requests.approvals else "Answer"
    shown = " and ".join(f"{c.tool_name}({json_text(c.args_as_dict(), default=str)})" for c in waiting)
    question = f"{verb} {shown}?"
    pending = PendingAction(first.tool_call_id, first.tool_name, arguments) if requests.approvals else None
    return recorder.suspend(question, pending, raw=result)


_STATE = "a need_help result, its raw, state_of() or all_messages_json()"


def _saved(state: Any) -> tuple[list[ModelMessage], dict[str, str]]:
    """The messages of a suspended run and its pending calls by id ("approval" or "external")."""
    if isinstance(state, str | bytes):
        saved = json.loads(state)
        if isinstance(saved, dict) and "messages" in saved:  # from state_of
            return ModelMessagesTypeAdapter.validate_python(saved["messages"]), dict(saved["pending"])
        messages = ModelMessagesTypeAdapter.validate_python(saved)
        return messages, {call_id: "approval" for call_id in _unanswered(messages)}
    output = getattr(state, "output", None)
    if not isinstance(output, DeferredToolRequests):
        raise ConfigError("state must be a need_help result's raw or its all_messages_json()")
    pending = {c.tool_call_id: "approval" for c in output.approvals}
    pending.update({c.tool_call_id: "external" for c in output.calls})
    return state.all_messages(), pending


def _unanswered(messages: Sequence[ModelMessage]) -> list[str]:
    """The tool calls of the last model response (a suspended run's last message)."""
    last = messages[-1] if messages else None
    if not isinstance(last, ModelResponse):
        return []
    return [part.tool_call_id for part in last.tool_calls]


def _recorder(
    agent: PAIAgent[Any, Any],
    entry: str,
    user_prompt: Any,
    run_kwargs: dict[str, Any],
    *,
    hooks: RunHooks | None,
    agent_name: str | None,
    **options: Any,
) -> Recorder:
    """The run's recorder, once `agent` and the keywords for its method `entry` are checked."""
    need(agent, isinstance(agent, AbstractAgent), f"pydantic_ai.{entry}", "a pydantic_ai.Agent")
    check_keywords(f"pydantic_ai.{entry}()", getattr(type(agent), entry), run_kwargs, OPTIONS, _FILLED)
    _name_by_caller(agent, run_kwargs)
    _check_usage(run_kwargs.get("usage"))
    run_kwargs["infer_name"] = False  # Pydantic AI would look in this module's frames: named `agent`
    model, provider = _model_of(run_kwargs.get("model") or agent.model)
    return Recorder.start(
        hooks,
        agent=agent_name or agent.name or "pydantic_ai_agent",
        model=model,
        provider=provider,
        task=user_prompt if isinstance(user_prompt, str) else "",
        tools=_tool_names(agent),
        limits=_limits(run_kwargs.get("usage_limits") or UsageLimits(), run_kwargs.get("timeout")),
        **options,
    )


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no event loop runs here
        return None


def _cancelling(task: asyncio.Task[Any] | None) -> bool:
    """Whether `task` (a run's own) is being cancelled: its caller stopping it (None: unknown, so yes)."""
    return task is None or task.cancelling() > 0


def _check_usage(usage: Any) -> None:
    """A clear `ConfigError` for a `usage=` that is no `RunUsage`, before the run begins (its tokens are
    read as the run's own before: an `AttributeError` out of a run begun, with no stop)."""
    if usage is not None and not isinstance(usage, RunUsage):
        raise ConfigError(
            f"usage= is Pydantic AI's RunUsage (a delegating tool's ctx.usage), not {type(usage).__name__}: "
            "pass the RunUsage the run's tokens add to, or leave it out"
        )


def _model_of(model: Any) -> tuple[str, str]:
    """The run's model and provider labels: a model's own (`model_name`, `system`), or of a model
    named by a string (`"anthropic:claude-sonnet-4-5"`) the parts Pydantic AI reads it as, so the
    run is labelled as its calls are (their model names the name alone)."""
    if isinstance(model, str):
        with contextlib.suppress(Exception):
            provider, name = parse_model_id(model)
            return name, provider or PROVIDER
    return str(getattr(model, "model_name", model) or ""), str(getattr(model, "system", "") or PROVIDER)


def _name_by_caller(agent: Any, run_kwargs: Mapping[str, Any]) -> None:
    """An agent given no name is named as Pydantic AI names it when called directly (`infer_name`,
    default on): after the variable holding it in the code that called the integration."""
    if (
        not isinstance(agent, AbstractAgent)
        or agent.name is not None
        or not run_kwargs.get("infer_name", True)
    ):
        return
    frame = inspect.currentframe()
    while frame is not None and frame.f_globals.get("__name__") in (__name__, "contextlib"):
        frame = frame.f_back  # this module's frames, and those of the blocks it opens
    scopes = (frame.f_locals, frame.f_globals) if frame is not None else ()
    if found := next((name for scope in scopes for name, held in scope.items() if held is agent), None):
        agent.name = found


def _tool_names(agent: PAIAgent[Any, Any]) -> list[str]:
    names: list[str] = []
    for toolset in agent.toolsets:
        names.extend(getattr(toolset, "tools", {}) or {})
    return names


def _limits(limits: Any, timeout: Any = None) -> dict[str, float]:
    """The run's configured ceilings, as `agent_budget_limit` shows them: its `UsageLimits` (Pydantic
    AI's default when none is given) and its `timeout=` in seconds."""
    found = {
        LimitKind.TURNS: getattr(limits, "request_limit", None),
        LimitKind.TOKENS: getattr(limits, "total_tokens_limit", None),
        LimitKind.COST: getattr(limits, "cost_limit", None),
        LimitKind.SECONDS: timeout,
    }
    return {str(k): float(v) for k, v in found.items() if isinstance(v, int | float)}


require(  # what this module reads of Pydantic AI: its capability hooks, its run's nodes and fields
    "pydantic-ai-slim",
    "pydantic-ai",
    {
        AbstractCapability: ("wrap_model_request", "wrap_tool_execute", "apply", *_NODE_HOOKS),
        PAIAgent: ("iter", "is_model_request_node", "is_call_tools_node", "is_end_node", "root_capability"),
        AgentRun: ("next", "next_node", "usage", "result", "all_messages", "ctx"),
        UsageLimits: ("check_before_request", "request_limit", "total_tokens_limit", "cost_limit"),
        RunUsage: ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"),
        FunctionToolCallEvent: ("part", "args_valid"),
        FunctionToolResultEvent: ("part", "tool_call_id"),
        ModelResponse: ("finish_reason", "model_name", "provider_response_id", "usage", "cost"),
    },
)
