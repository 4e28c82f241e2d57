"""OpenAI Agents SDK runs with Endstate's stop reasons, spans and metrics.

    from agent.integrations import openai_agents as endstate_oa
    result = endstate_oa.run(agent, "Triage this ticket", hooks=hooks, task_type="ticket", max_turns=8)

    stream = endstate_oa.run_streamed(agent, "Triage this ticket", hooks=hooks, task_type="ticket")
    async for event in stream.stream_events():  # the SDK's events, as Runner.run_streamed gives them
        ...
    stream.result  # the RunResult, once the stream has ended

Turns come from the SDK's own run lifecycle hooks (`RunHooks`: one turn per
model call, holding the tool calls that follow it), composed with any
`run_hooks` of yours. Not from its trace processors: those are global to the
process, get nothing when tracing is disabled (as many teams run it), and see
a model call only when the model implementation makes a span for it. The
SDK's own traces are left as they are: Endstate adds its spans beside them,
never a second copy of the same call. A tool that raised, its error handed to
the model as the SDK's default error text, is a failed call (`tool_error`, as
LangGraph's), and one that ran past its `timeout` (the SDK's timeout text, or its
`ToolTimeoutError`) a timed-out call (`timeout`, as Endstate's own), one raising out of the
run (no `failure_error_function`) a failed call of its exception's type, and the run's `error` stop
of that type too (not the SDK's `UserError` around it); a custom
`failure_error_function`'s or `timeout_error_function`'s text cannot be told apart from a result.
A call to a tool the agent lacks is a failed call (`unknown_tool`), whether the SDK answers it with
its "not found" text or stops the run on it (`ModelBehaviorError`, the run's `error`).
A handoff is a tool call (`transfer_to_<agent>`, labelled by name), recorded at
the SDK's `on_handoff`; a call a tool input guardrail answered with `reject_content` is a failed
call (`guardrail_rejected`), recorded once the SDK sends its answer to the model (the SDK runs no
tool hooks for either, so neither is timed: their spans last no time). So is a call whose output a
tool output guardrail rejected (`reject_content`, or a tripwire): the SDK tells its hooks nothing of
it, so the integration wraps `ToolOutputGuardrail.run` (once per process) to note the verdicts given
in the runs it observes (others see no change). An agent run as a tool
(`Agent.as_tool`) runs without these hooks: its calls' tokens, which the SDK adds to the run's
usage, count in the run's totals (no spans of their own). Its tool asking for approval suspends
the run; resumed, the SDK calls `on_tool_end` alone for the outer call (its `on_tool_start` was
in the suspended segment), so that call's span in the resumed segment begins as it ends. How runs end:

| OpenAI Agents SDK                                   | Endstate                              |
| --------------------------------------------------- | ------------------------------------- |
| a final output                                      | `success` (checked by the verifiers)  |
| interruptions (tools waiting for approval)          | `need_help`, resumable with `resume`  |
| `MaxTurnsExceeded` (or its `error_handlers` output) | `limit`/`turns` (the output partial)  |
| the API's `context_length_exceeded` (a 400)         | `limit`/`context`                     |
| an input, output or tool guardrail tripwire         | `gave_up`, cause `guardrail`          |
| `ModelRefusalError` (or its handler's output)       | `gave_up`, cause `refusal`            |
| the task cancelled, a stream's `raw.cancel()`       | `cancelled`                           |
| any other exception                                 | `error`, with its type                |
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from agent._extras import needs_extra

with needs_extra("openai-agents", "agent.integrations.openai_agents"):
    import openai
    from agents import Agent as OAAgent
    from agents import RunHooks as OARunHooks
    from agents import Runner, default_tool_error_function
    from agents.exceptions import (
        InputGuardrailTripwireTriggered,
        MaxTurnsExceeded,
        ModelBehaviorError,
        ModelRefusalError,
        OutputGuardrailTripwireTriggered,
        ToolInputGuardrailTripwireTriggered,
        ToolOutputGuardrailTripwireTriggered,
        ToolTimeoutError,
        UserError,
    )
    from agents.handoffs import Handoff
    from agents.lifecycle import RunHooksBase
    from agents.models import get_default_model
    from agents.models.multi_provider import MultiProvider
    from agents.result import RunResultStreaming
    from agents.run_state import RunState
    from agents.tool import default_tool_timeout_error_message
    from agents.tool_context import ToolContext
    from agents.tool_guardrails import ToolOutputGuardrail

from agent.errors import ConfigError
from agent.hooks import RunHooks
from agent.integrations._framework import require
from agent.integrations._observe import (
    OPTIONS,
    Reading,
    Recorder,
    Usage,
    _check_options,
    _text_of,
    answered_late,
    check_keywords,
    in_turns,
    need,
    reading_state,
    run_of_saved,
    saved_with_run,
)
from agent.integrations._sync import run_sync
from agent.result import LimitKind, PendingAction, RunResult, StopCause, StopReason
from agent.text import json_text
from agent.tools import TOOL_ERROR, UNKNOWN_TOOL, own_cancels, run_cancelled, said
from agent.verify import Verifier

PROVIDER = "openai"
TOOL_TIMEOUT = "timeout"  # the tool ran past its `timeout` (outcome `timeout`, as Endstate's own tools)
_RAISED = "Error running tool "  # how the SDK's UserError names a tool that raised out of the run
GUARDRAIL_REJECTED = "guardrail_rejected"  # error.type of a call a tool guardrail answered in its place
_NOT_FOUND = re.compile(r"Tool (.+) not found in agent ")  # the SDK's ModelBehaviorError for such a call
CONTEXT_FULL = "context_length_exceeded"  # the OpenAI API's error code for an input past the context window
GUARDRAIL_TRIPS = (
    InputGuardrailTripwireTriggered,
    OutputGuardrailTripwireTriggered,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailTripwireTriggered,
)


class EndstateRunHooks(OARunHooks[Any]):
    """The SDK's lifecycle hooks reporting to a `Recorder`, then to the caller's own hooks."""

    def __init__(
        self,
        recorder: Recorder,
        inner: OARunHooks[Any] | None = None,
        before: Any = None,
        run_config: Any = None,
    ) -> None:
        self.recorder, self.inner, self.run_config = recorder, inner, run_config
        self.before = _usage_of(before) if before is not None else Usage()  # a resumed RunState's totals
        self.totals: Any = before  # the SDK's running totals (live: the SDK adds to them as it goes)
        self.asked: dict[str, tuple[str, dict[str, Any]]] = {}  # the last reply's calls no hook reported yet
        self.asker: Any = None  # the agent whose reply asked for them
        self.rejected: dict[str, str] = {}  # the calls whose output a tool output guardrail rejected: names
        self.running: dict[str, str] = {}  # the calls whose tool runs now: names

    def count_unseen(self) -> None:
        """The calls the SDK counted in the run and no hook of it saw: an agent run as a tool
        (`Agent.as_tool`) runs without these hooks, and the SDK adds its calls to the run's usage."""
        if self.totals is not None:
            self.recorder.count_unseen(_usage_of(self.totals), self.before)

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        self.totals = getattr(context, "usage", None) or self.totals
        if self.asked:  # the calls of the last reply the SDK answered without running a tool hook
            self.answered_unseen(context, input_items)
        recorder = self.recorder  # each call as the model its agent calls (a handoff's may be another)
        if recorder.watched:
            sent = list(input_items or ())  # the items as they stand now: read when content is shown
            model, messages = _model_name(agent, self.run_config), lambda: api_messages(sent)
            recorder.model_started(model=model, messages=messages)
        else:
            recorder.model_started()
        if self.inner is not None:
            await self.inner.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        asked = _asked(response.output) if self.recorder.watched else {}
        self.recorder.model_ended(
            _usage_of(response.usage),
            text=_text(response.output),
            stop_reason="tool_use" if _calls(response.output) else "end_turn",
            response_id=response.response_id or "",
            calls=((i, name, args) for i, (name, args) in asked.items()),
        )
        if self.recorder.watched:
            self.asked, self.asker = asked, agent
        if self.inner is not None:
            await self.inner.on_llm_end(context, agent, response)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if self.recorder.watched:  # nobody to tell: the call's arguments are not even parsed
            call = _tool_call(context, tool)
            self.asked.pop(call[0], None)
            self.running[call[0]] = call[1]
            self.recorder.tool_started(*call)
        if self.inner is not None:
            await self.inner.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        if self.recorder.watched:
            call_id, name, args = _tool_call(context, tool)
            if self.running.pop(call_id, None) is None:
                # An agent run as a tool, resumed after an approval inside it: the SDK ends the call
                # with no `on_tool_start` in this segment (it began in the last), so it starts here.
                self.recorder.tool_started(call_id, name, args)
            text = str(result)
            error = _tool_error(context, tool, text)
            if self.rejected.pop(call_id, None) is not None:
                error = GUARDRAIL_REJECTED
            self.recorder.tool_ended(call_id, name, text, error, args)
        if self.inner is not None:
            await self.inner.on_tool_end(context, agent, tool, result)

    def tripped(self, exc: Exception) -> None:
        """A tool output guardrail's tripwire stopped the run: the call whose output it stopped (the
        SDK ends it with no hook) failed, as one whose output a guardrail rejected."""
        rejected, self.rejected = self.rejected, {}
        for call_id, name in rejected.items():
            self.recorder.tool_ended(call_id, name, _guardrail_note(exc), GUARDRAIL_REJECTED)

    def raised(self, exc: BaseException) -> None:
        """A running tool's failure ended the run, and no hook ends its call: one past its timeout
        (`timeout_behavior="raise_exception"`: `ToolTimeoutError`) timed out; one that raised with no
        `failure_error_function` (the SDK's `UserError` "Error running tool NAME: ...", the tool's
        exception its cause) failed with that exception's type. Of several calls of that tool running
        at once, which one is unknown: none is ended here."""
        if isinstance(exc, ToolTimeoutError):
            name, error, text = exc.tool_name, TOOL_TIMEOUT, str(exc)
        else:
            name = next((n for n in self.running.values() if said(exc).startswith(f"{_RAISED}{n}: ")), "")
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            error, text = type(cause).__name__, said(cause)
        calls = [call_id for call_id, running in self.running.items() if running == name]
        if len(calls) == 1:
            self.recorder.tool_ended(calls[0], name, text, error)

    def answered_unseen(self, context: Any, items: Any) -> None:
        """The asked calls the SDK answered (an output in `items`) with no tool hook: one a tool input
        guardrail rejected (`reject_content`) is a failed call, in the turn that asked for it. One a
        person denied is no tool call, as in Endstate's own runs; anything else is left unknown."""
        answered, asked = _answered(items), self.asked
        self.asked = {}
        tools = {t.name: t for t in getattr(self.asker, "tools", ())}
        approved = getattr(context, "is_tool_approved", None)
        for call_id, (name, arguments) in asked.items():
            guarded = getattr(tools.get(name), "tool_input_guardrails", None)
            denied = callable(approved) and approved(name, call_id) is False
            error = GUARDRAIL_REJECTED if guarded else UNKNOWN_TOOL if self.unknown(name) else None
            if call_id in answered and error and not denied:
                self.recorder.tool_started(call_id, name, arguments)
                self.recorder.tool_ended(call_id, name, answered[call_id], error, arguments)

    def unknown(self, name: str) -> bool:
        """Whether the asking agent has no tool (or handoff) `name`: its MCP servers' tools (listed
        only when the SDK runs) count as known, so an agent with MCP servers has none unknown here."""
        asker = self.asker
        known = {t.name for t in getattr(asker, "tools", ())} | set(_handoff_names(asker))
        return name not in known and not getattr(asker, "mcp_servers", None)

    def called_unknown(self, exc: ModelBehaviorError) -> None:
        """The SDK stopped the run on a call to a tool its agent lacks (its default
        `tool_not_found_behavior`: "Tool NAME not found in agent ..."): that call failed
        (`unknown_tool`), as such a call does in Endstate's own runs; it has no tool hooks."""
        found = _NOT_FOUND.match(said(exc))
        for call_id, (name, arguments) in list(self.asked.items()):
            if found is not None and name == found.group(1):
                del self.asked[call_id]
                self.recorder.tool_started(call_id, name, arguments)
                self.recorder.tool_ended(call_id, name, said(exc), UNKNOWN_TOOL, arguments)

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        if self.inner is not None:
            await self.inner.on_agent_start(context, agent)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.inner is not None:
            await self.inner.on_agent_end(context, agent, output)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        """A handoff is a tool call in the SDK's terms (`transfer_to_<agent>`), with no tool hooks:
        recorded here, after the SDK has switched agents (its own `on_handoff` callback ran before)."""
        if self.recorder.watched:
            handoffs = _handoff_names(from_agent)
            call_id = next((i for i, (name, _) in self.asked.items() if name in handoffs), None)
            if call_id is not None:
                name, arguments = self.asked.pop(call_id)
                self.recorder.tool_started(call_id, name, arguments)
                self.recorder.tool_ended(call_id, name, f"handed off to {to_agent.name}", None, arguments)
        if self.inner is not None:
            await self.inner.on_handoff(context, from_agent, to_agent)


def run(agent: OAAgent[Any], input: Any, **kwargs: Any) -> RunResult:
    """Sync entry point; see `arun`."""
    return run_sync(arun(agent, input, **kwargs))


async def arun(
    agent: OAAgent[Any],
    input: Any,
    *,
    hooks: RunHooks | None = None,
    task_type: str = "default",
    verifiers: Sequence[Verifier] | Verifier | None = None,
    run_id: str | None = None,
    run_hooks: OARunHooks[Any] | None = None,
    resumed: RunResult | None = None,
    agent_name: str | None = None,
    help_seconds: float | None = None,
    **runner_kwargs: Any,
) -> RunResult:
    """`Runner.run(agent, input, **runner_kwargs)`, ended in a stop reason.

    The SDK's `RunResult` (or the exception) is at `result.raw`; pass your own
    SDK `RunHooks` as `run_hooks`. `agent_name` labels the run (default: the
    agent's name); a pending approval waits `help_seconds` (default a day).
    Never raises for an expected stop.
    """
    options = {
        "hooks": hooks,
        "task_type": task_type,
        "verifiers": verifiers,
        "run_id": run_id,
        "run_hooks": run_hooks,
        "resumed": resumed,
        "agent_name": agent_name,
        "help_seconds": help_seconds,
    }
    check_keywords("openai_agents.run()", Runner.run, runner_kwargs, _OPTIONS, _FILLED)
    _not_sdk_hooks(hooks)
    run = _Observed.start(agent, input, "openai_agents.run", {**options, **runner_kwargs})
    with own_cancels():  # a cancel left on the task by an earlier run is not this run's
        try:
            with run.running():
                result = await Runner.run(agent, input, hooks=run.hooks, **run.runner_kwargs)
        except (Exception, asyncio.CancelledError) as exc:
            return run.stopped(exc)
        except BaseException as exc:  # a SystemExit, Ctrl-C, a library's own: the run ends, it goes on up
            run.stopped(exc)
            raise
    return run.ended(result)


def run_streamed(agent: OAAgent[Any], input: Any, **kwargs: Any) -> StreamedRun:
    """`Runner.run_streamed(agent, input, ...)`, observed as `arun` observes `Runner.run` (`arun`'s
    options). The SDK's run starts when `stream_events()` is first read (a stream never read
    starts nothing), which gives its events; once the stream ends, `.result` is the run's
    `RunResult` and `.raw` the SDK's `RunResultStreaming` (the stream never raises for a stop: a
    limit, a guardrail or an error end it, and `.result` says which). A caller that stops
    reading (breaks out, or closes the stream) cancels the SDK's run: it ends `cancelled`.
    """
    need(agent, isinstance(agent, OAAgent), "openai_agents.run_streamed", "an agents.Agent")
    _not_sdk_hooks(kwargs.get("hooks"))
    _check_options(
        kwargs.get("hooks"),
        kwargs.get("task_type", "default"),
        kwargs.get("run_id"),
        kwargs.get("help_seconds"),
        kwargs.get("agent_name"),
    )
    check_keywords("openai_agents.run_streamed()", Runner.run_streamed, _theirs(kwargs), _OPTIONS, _FILLED)
    return StreamedRun(agent, input, kwargs)


class StreamedRun:
    """A streamed SDK run: its events, then Endstate's `result`."""

    def __init__(self, agent: OAAgent[Any], input: Any, kwargs: dict[str, Any]) -> None:
        self._agent, self._input, self._kwargs = agent, input, kwargs
        self.raw: Any = None  # the SDK's RunResultStreaming, once the run has started
        self.result: RunResult | None = None
        self._run: _Observed | None = None

    def stream_events(self) -> AsyncIterator[Any]:
        """The SDK's stream events, as `RunResultStreaming.stream_events()` gives them (a caller that
        breaks out has `result`, `cancelled`, at once)."""
        return Reading(self._events(), self._abandoned)

    def _abandoned(self) -> None:
        """The caller dropped the stream half read: the SDK's run goes no further, and ends `cancelled`."""
        if self.result is None and self._run is not None:
            self.result = self._run.stopped(GeneratorExit("the caller stopped reading the stream"))
            if self.raw is not None:
                with contextlib.suppress(RuntimeError):  # dropped after its event loop closed: nothing runs
                    self.raw.cancel()

    async def _events(self) -> AsyncGenerator[Any]:
        if self.raw is not None or self._run is not None:
            raise ConfigError("this stream was read already: start another with openai_agents.run_streamed")
        with own_cancels():  # a cancel left on the task by an earlier run is not this run's
            run = self._run = _Observed.start(
                self._agent, self._input, "openai_agents.run_streamed", dict(self._kwargs)
            )
            try:
                with run.running():  # the SDK's run task takes the context as it is now
                    self.raw = Runner.run_streamed(
                        self._agent, self._input, hooks=run.hooks, **run.runner_kwargs
                    )
                async for event in self.raw.stream_events():
                    yield event
            except BaseException as exc:
                if self._ended_by(run, exc):
                    raise
            else:
                self.result = run.ended(self.raw)
            finally:
                if self.result is None:  # the caller stopped reading: the run goes no further
                    if self.raw is not None:
                        self.raw.cancel()
                    self.result = run.stopped(GeneratorExit("the caller stopped reading the stream"))

    def _ended_by(self, run: _Observed, exc: BaseException) -> bool:
        """The run ended by `exc` out of the SDK's stream; whether `exc` goes on up. The run's own
        failure ends the stream; anything else stops the SDK's run too and goes on up: the caller's
        cancel (a tool's own `CancelledError` is the run's error stop), its close (`GeneratorExit`), a
        `SystemExit`, a library's own."""
        if isinstance(exc, Exception):
            self.result = run.stopped(exc)
            return False
        if self.result is None:
            self.result = run.stopped(exc)
        if self.raw is not None:
            self.raw.cancel()
        return not isinstance(exc, asyncio.CancelledError) or run_cancelled()


class _Observed:
    """One SDK run segment being observed: its recorder, the SDK hooks feeding it, its end."""

    def __init__(self, recorder: Recorder, hooks: EndstateRunHooks, runner_kwargs: dict[str, Any]) -> None:
        self.recorder, self.hooks, self.runner_kwargs = recorder, hooks, runner_kwargs
        self.handled: list[str] = []  # the error handlers that gave an output in place of the error
        handlers = runner_kwargs.get("error_handlers")
        if isinstance(handlers, Mapping):  # anything else: the SDK says what is wrong
            runner_kwargs["error_handlers"] = _noting(handlers, self.handled)

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Around the SDK's run: the recorder's (see `Recorder.running`), and the tool output
        guardrails' verdicts noted for these hooks."""
        token = _REJECTED.set(self.hooks.rejected if self.recorder.watched else None)
        try:
            with self.recorder.running():
                yield
        finally:
            _REJECTED.reset(token)

    @classmethod
    def start(cls, agent: OAAgent[Any], input: Any, entry: str, kwargs: dict[str, Any]) -> _Observed:
        need(agent, isinstance(agent, OAAgent), entry, "an agents.Agent")
        _note_output_guardrails()
        options = {k: kwargs.pop(k) for k in _OPTIONS if k in kwargs}
        recorder = Recorder.start(
            options.get("hooks"),
            agent=options.get("agent_name") or agent.name,
            task_type=options.get("task_type", "default"),
            model=_model_name(agent, kwargs.get("run_config")),
            provider=PROVIDER,
            task=input if isinstance(input, str) else "",
            tools=_tool_names(agent),
            limits=_limits(kwargs["max_turns"] if "max_turns" in kwargs else _max_turns_of(input)),
            verifiers=options.get("verifiers"),
            run_id=options.get("run_id"),
            resumed=options.get("resumed"),
            help_seconds=options.get("help_seconds"),
        )
        before, run_config = _usage_before(input), kwargs.get("run_config")
        hooks = EndstateRunHooks(recorder, options.get("run_hooks"), before, run_config)
        return cls(recorder, hooks, kwargs)

    def stopped(self, exc: BaseException) -> RunResult:
        self.hooks.count_unseen()
        if isinstance(exc, ToolOutputGuardrailTripwireTriggered):
            self.hooks.tripped(exc)
        if self.hooks.running and isinstance(exc, ToolTimeoutError | UserError):
            self.hooks.raised(exc)
        if self.hooks.asked and isinstance(exc, ModelBehaviorError):
            self.hooks.called_unknown(exc)
        details = getattr(exc, "run_data", None)  # a limit after the tools ran: no model call came next
        if self.hooks.asked and details is not None:
            self.hooks.answered_unseen(details.context_wrapper, details.new_items)
        return _stopped(self.recorder, exc)

    def ended(self, result: Any) -> RunResult:
        """The SDK's run finished: waiting for approvals, a handler's output for a stop, or an output."""
        self.hooks.count_unseen()
        if self.hooks.asked:  # the run stopped after the tools ran (approvals waiting, say)
            self.hooks.answered_unseen(result.context_wrapper, result.new_items)
        recorder = self.recorder
        if _cancelled(result):
            return recorder.finish(StopReason.CANCELLED, note="The caller cancelled the run.", raw=result)
        if (own := _own_cancelled_error(result)) is not None:
            return recorder.fail(own, raw=result)
        if result.interruptions:
            return _suspend(recorder, result)
        if "max_turns" in self.handled:  # the limit tripped; the handler's output is the partial result
            output = _text_of(result.final_output)
            return recorder.finish(StopReason.LIMIT, limit=LimitKind.TURNS, output=output, raw=result)
        if "model_refusal" in self.handled:
            output = _text_of(result.final_output)
            return recorder.finish(StopReason.GAVE_UP, cause=StopCause.REFUSAL, output=output, raw=result)
        return recorder.succeed(result.final_output, raw=result)


_OPTIONS = (*OPTIONS, "run_hooks")  # Endstate's options of `arun` and `run_streamed`; the rest go to the SDK
_FILLED = ("starting_agent", "input", "hooks")  # of the SDK's `Runner.run`: what the integration gives it


def check_options(entry: str, options: Iterable[str]) -> None:
    """A clear `ConfigError` for an option of a catalog entry (`entry`) that `Runner.run` does not take."""
    check_keywords(entry, Runner.run, options, (), _FILLED)


def _not_sdk_hooks(hooks: Any) -> None:
    """A clear `ConfigError` for the SDK's own `RunHooks` given as `hooks=` (as `Runner.run` takes them)."""
    if isinstance(hooks, RunHooksBase):
        raise ConfigError(
            "hooks= is Endstate's telemetry (say Telemetry.from_env().hooks), not the SDK's: "
            "pass the SDK's RunHooks as run_hooks="
        )


def _theirs(kwargs: Mapping[str, Any]) -> list[str]:
    """The keywords given for the SDK: all but Endstate's own options."""
    return [k for k in kwargs if k not in _OPTIONS]


def _stopped(recorder: Recorder, exc: BaseException) -> RunResult:
    """The stop an exception out of `Runner.run` stands for (see the table above)."""
    if isinstance(exc, MaxTurnsExceeded):
        return recorder.finish(StopReason.LIMIT, limit=LimitKind.TURNS, note=exc.message, raw=exc)
    if isinstance(exc, openai.BadRequestError) and exc.code == CONTEXT_FULL:  # nothing shrank the input
        recorder.call_failed(exc)
        note = f"{type(exc).__name__}: {exc.message}"
        return recorder.finish(StopReason.LIMIT, limit=LimitKind.CONTEXT, note=note, raw=exc)
    if isinstance(exc, GUARDRAIL_TRIPS):
        return recorder.finish(
            StopReason.GAVE_UP, cause=StopCause.GUARDRAIL, note=_guardrail_note(exc), raw=exc
        )
    if isinstance(exc, ModelRefusalError):
        return recorder.finish(StopReason.GAVE_UP, cause=StopCause.REFUSAL, note=str(exc), raw=exc)
    return recorder.fail(_unwrapped(exc), raw=exc)


def _unwrapped(exc: BaseException) -> BaseException:
    """The failure a run's `error` stop is typed by: for a tool that raised out of the run (no
    `failure_error_function`), the tool's own exception, which the SDK's `UserError` ("Error running
    tool NAME: ...") keeps as its cause, as Pydantic AI and LangGraph report a tool's; else `exc`."""
    cause = exc.__cause__
    if isinstance(exc, UserError) and isinstance(cause, Exception) and said(exc).startswith(_RAISED):
        return cause
    return exc


def _cancelled(result: Any) -> bool:
    """A streamed run the caller stopped with the SDK's `RunResultStreaming.cancel()` (either mode)
    before its final output: its stream ends as a finished run's does. The SDK keeps the mode in
    `_cancel_mode` alone; without it (another SDK version) the run reads as finished, as before."""
    return getattr(result, "_cancel_mode", "none") != "none" and result.final_output is None


def _own_cancelled_error(result: Any) -> BaseException | None:
    """The `CancelledError` a streamed run's own call raised (a library's cancelled future), which
    ended the SDK's run task as a cancel nobody asked for: its stream ended quietly, with no output,
    and read as finished. None when the run task ended otherwise, or was cancelled (`task.cancel()`)."""
    task = getattr(result, "run_loop_task", None)
    if not isinstance(task, asyncio.Task) or not task.done() or not task.cancelled() or task.cancelling():
        return None
    try:
        task.result()
    except asyncio.CancelledError as exc:
        return exc
    return None


def _noting(handlers: Mapping[str, Any], handled: list[str]) -> dict[str, Any]:
    """The SDK's `error_handlers`, each noting in `handled` when it gives an output (None: the SDK raises)."""

    def noted(kind: str, handler: Any) -> Any:
        async def handle(data: Any) -> Any:
            output = handler(data)
            if inspect.isawaitable(output):
                output = await output
            if output is not None:
                handled.append(kind)
            return output

        return handle

    return {kind: noted(kind, handler) for kind, handler in handlers.items()}


def state_of(result: RunResult, **to_string: Any) -> str:
    """A `need_help` result's saved state, as JSON (the SDK's `RunState.to_string()`): what a store keeps.

    `to_string` goes to the SDK (`strict_context=True` refuses a context it would otherwise drop,
    `context_serializer=` saves a custom one).
    """
    raw = result.raw
    if raw is None or not getattr(raw, "interruptions", None):
        raise ConfigError("only a need_help result of this integration has a state to save")
    return saved_with_run(result, json.loads(raw.to_state().to_string(**to_string)))


def resume(
    agent: OAAgent[Any], state: Any, approved: bool, answer: str | None = None, **kwargs: Any
) -> RunResult:
    """Sync entry point; see `aresume`."""
    return run_sync(aresume(agent, state, approved, answer, **kwargs))


async def aresume(
    agent: OAAgent[Any], state: Any, approved: bool, answer: str | None = None, **kwargs: Any
) -> RunResult:
    """Continue a `need_help` run: approve the pending tool call it asked about, or reject it with
    `answer`. Other calls that waited with it stay pending: the run stops `need_help` again, asking
    about the next one (a person's answer is for the call they were shown).

    `state` is the suspended `RunResult` itself (same run id, its wait
    recorded), its `raw`, or the JSON from `state_of` (with `agent` the
    starting agent, as the SDK's `RunState.from_string` needs).
    """
    if isinstance(state, RunResult):
        kwargs.setdefault("resumed", state)
        state = state.raw
    with reading_state("openai_agents.resume", _STATE):
        run_state = await _run_state(agent, run_of_saved(state, kwargs))
        pending = run_state.get_interruptions()
    if (late := answered_late(kwargs, PROVIDER)) is not None:
        return late
    if not pending:
        raise ConfigError("this state has no pending approval: pass a need_help result or its state_of()")
    asked = pending[0]  # as `_suspend` asked it
    if approved:
        run_state.approve(asked)
    else:
        run_state.reject(asked, rejection_message=answer or "Denied by a person.")
    return await arun(agent, run_state, **kwargs)


async def _run_state(agent: OAAgent[Any], state: Any) -> RunState[Any]:
    if isinstance(state, str):
        return await RunState.from_string(agent, state)
    if isinstance(state, RunState):
        return state
    if hasattr(state, "to_state"):
        return state.to_state()
    raise ConfigError(f"state must be {_STATE}")


_STATE = "a need_help RunResult, its raw, or the JSON from state_of() (with the agent it suspended in)"


def _suspend(recorder: Recorder, result: Any) -> RunResult:
    item = result.interruptions[0]
    raw_item = item.raw_item
    call_id = str(getattr(raw_item, "call_id", None) or getattr(raw_item, "id", "") or "")
    arguments = _arguments(getattr(raw_item, "arguments", None))
    name = item.tool_name or str(getattr(raw_item, "name", "tool"))
    question = f"Approve {name}({json_text(arguments, default=str)})?"
    return recorder.suspend(question, PendingAction(call_id, name, arguments), raw=result)


def _tool_error(context: Any, tool: Any, text: str) -> str | None:
    """How a call the SDK answered with `text` failed, told by the SDK's own default texts: the tool
    raised (`tool_error`), or ran past its `timeout` (`timeout`); None: it returned `text`."""
    if text == default_tool_error_function(context, Exception()):
        return TOOL_ERROR
    seconds = getattr(tool, "timeout_seconds", None)
    if seconds is not None and text == default_tool_timeout_error_message(
        tool_name=str(getattr(tool, "name", "")), timeout_seconds=seconds
    ):
        return TOOL_TIMEOUT
    return None


def _tool_call(context: Any, tool: Any) -> tuple[str, str, dict[str, Any]]:
    name = str(getattr(context, "tool_name", None) or getattr(tool, "name", "tool"))
    return _call_id(context), name, _arguments(getattr(context, "tool_arguments", None))


def _call_id(context: Any) -> str:
    """The id of the tool call a `ToolContext` is for."""
    return str(getattr(context, "tool_call_id", "") or id(context))


# The observed run's `EndstateRunHooks.rejected`, where the tool output guardrails it runs note their
# verdicts (None: the run is not observed, or no run is).
_REJECTED: ContextVar[dict[str, str] | None] = ContextVar("endstate_openai_rejected", default=None)
_FAILING = ("reject_content", "raise_exception")  # the verdicts of a tool output guardrail that fail a call


def _note_output_guardrails() -> None:
    """Wrap `ToolOutputGuardrail.run` (once) to note, for the observed run it runs in, each call whose
    output it rejected or tripped on: the SDK then gives `on_tool_end` the guardrail's message in
    the output's place (or ends the call with no hook), with nothing to tell it from an output. The
    wrapper changes nothing the guardrail returns or raises, and notes nothing outside observed runs."""
    run = ToolOutputGuardrail.run
    if getattr(run, "endstate_notes", False):
        return

    @functools.wraps(run)
    async def noted(self: ToolOutputGuardrail[Any], data: Any) -> Any:
        verdict = await run(self, data)
        notes = _REJECTED.get()
        if notes is not None and _verdict(verdict) in _FAILING:
            context = getattr(data, "context", None)
            notes[_call_id(context)] = str(getattr(context, "tool_name", "") or "tool")
        return verdict

    noted.endstate_notes = True  # type: ignore[attr-defined]
    ToolOutputGuardrail.run = noted  # type: ignore[method-assign]


def _verdict(output: Any) -> str:
    """A tool guardrail's verdict: its behavior's type (allow, reject_content, raise_exception)."""
    behavior = getattr(output, "behavior", None)
    return str(behavior.get("type")) if isinstance(behavior, Mapping) else ""


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return {"arguments": raw}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def _usage_of(usage: Any) -> Usage:
    """A response's tokens: the SDK's input counts its cached tokens, as Endstate's does; unpriced."""
    details = getattr(usage, "input_tokens_details", None)
    read = getattr(details, "cached_tokens", 0) or 0
    written = getattr(details, "cache_write_tokens", 0) or 0
    return Usage(usage.input_tokens, usage.output_tokens, read, written, cost_usd=None)


def _tool_names(agent: OAAgent[Any]) -> list[str]:
    """The tools of the agent and of the agents it can hand off to (given as agents): each labels
    its calls by name in the metrics, whichever agent of the run calls it."""
    names: list[str] = []
    seen: set[int] = set()
    waiting: list[Any] = [agent]
    while waiting:
        current = waiting.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        names += [t for t in (*(t.name for t in current.tools), *_handoff_names(current)) if t not in names]
        waiting += [a for a in map(_handoff_target, current.handoffs) if isinstance(a, OAAgent)]
    return names


def _handoff_target(handoff: Any) -> Any:
    """The agent a handoff goes to: given as an agent, or in a `Handoff` (`handoff(agent, ...)`),
    which keeps it by weak reference (None: the SDK keeps it no longer, or elsewhere)."""
    if isinstance(handoff, OAAgent):
        return handoff
    ref = getattr(handoff, "_agent_ref", None)
    return ref() if callable(ref) else None


def _handoff_names(agent: Any) -> list[str]:
    """The tool names the model calls to hand off from `agent` (`transfer_to_<agent>` unless set)."""
    found = getattr(agent, "handoffs", None) or ()
    return [h.tool_name if isinstance(h, Handoff) else Handoff.default_tool_name(h) for h in found]


def _asked(output: Sequence[Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """A reply's function calls by call id: their names and arguments."""
    calls = (item for item in output if getattr(item, "type", None) == "function_call")
    return {str(c.call_id): (str(c.name), _arguments(c.arguments)) for c in calls}


def _answered(items: Any) -> dict[str, str]:
    """The tool outputs among the SDK's items (input items, or run items around them) by call id."""
    found: dict[str, str] = {}
    for item in items if isinstance(items, list) else ():
        raw = getattr(item, "raw_item", item)
        if isinstance(raw, Mapping) and raw.get("type") == "function_call_output":
            output = raw.get("output")
            found[str(raw.get("call_id"))] = (
                output if isinstance(output, str) else json.dumps(output, default=str)
            )
    return found


def _usage_before(input: Any) -> Any:
    """The SDK's running totals a resumed `RunState` brings (its earlier segments'), else None."""
    context = getattr(input, "_context", None) if isinstance(input, RunState) else None
    return getattr(context, "usage", None)


def _text(output: Sequence[Any]) -> str:
    parts = [
        getattr(content, "text", "")
        for item in output
        if getattr(item, "type", None) == "message"
        for content in getattr(item, "content", ())
    ]
    return "".join(p for p in parts if isinstance(p, str))


def _calls(output: Sequence[Any]) -> bool:
    return any(getattr(item, "type", None) == "function_call" for item in output)


def _guardrail_note(exc: Exception) -> str:
    """Which guardrail tripped: an agent's (on its result) or a tool's (on the exception itself)."""
    found = getattr(exc, "guardrail_result", None)
    guardrail = getattr(found, "guardrail", None) or getattr(exc, "guardrail", None)
    name = guardrail.get_name() if guardrail is not None and hasattr(guardrail, "get_name") else ""
    return f"Guardrail {name} tripped: {type(exc).__name__}".replace("  ", " ")


def _model_name(agent: OAAgent[Any], run_config: Any) -> str:
    """The model `agent` calls in a run of `run_config`: the run's, else the agent's, else the SDK's
    default (`get_default_model()`, as its own provider resolves an agent given none; "default"
    under a provider of the caller's, which resolves it as it likes)."""
    model = _configured(run_config, "model") or agent.model
    if model is None or isinstance(model, str):
        return model or _default_model(run_config)
    return str(getattr(model, "model", None) or type(model).__name__)


def _default_model(run_config: Any) -> str:
    provider = _configured(run_config, "model_provider")
    return get_default_model() if provider is None or isinstance(provider, MultiProvider) else "default"


def _configured(run_config: Any, name: str) -> Any:
    """A setting of the run's `RunConfig`, or of the dict the SDK takes in its place."""
    return run_config.get(name) if isinstance(run_config, Mapping) else getattr(run_config, name, None)


def _max_turns_of(input: Any) -> Any:
    """The SDK's turn limit for a run given none: a resumed `RunState`'s own, else the SDK's default."""
    if isinstance(input, RunState):
        return getattr(input, "_max_turns", None)
    return _DEFAULT_MAX_TURNS


_DEFAULT_MAX_TURNS = inspect.signature(Runner.run).parameters["max_turns"].default  # the SDK's (10)


def _limits(max_turns: Any) -> dict[str, float]:
    return {str(LimitKind.TURNS): float(max_turns)} if isinstance(max_turns, int) else {}


def api_messages(items: Iterable[Any]) -> list[dict[str, Any]]:
    """The SDK's input items in the Messages API's layout (a model call's captured input): user and
    assistant messages' text, function calls as tool calls, their outputs as tool results (system and
    developer messages, reasoning and other items left out), one message per run of a role's blocks."""
    return in_turns(_blocks(i if isinstance(i, Mapping) else getattr(i, "model_dump", dict)()) for i in items)


def _blocks(item: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    kind = item.get("type")
    if kind == "function_call":
        call = {"type": "tool_use", "id": item.get("call_id"), "name": item.get("name")}
        return "assistant", [call | {"input": _arguments(item.get("arguments"))}]
    if kind == "function_call_output":
        output = item.get("output")
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        return "user", [{"type": "tool_result", "tool_use_id": item.get("call_id"), "content": text}]
    role, content = item.get("role"), item.get("content")
    if role not in ("user", "assistant") or kind not in (None, "message"):
        return "", []
    if isinstance(content, str):
        return str(role), [{"type": "text", "text": content}]
    parts = content if isinstance(content, list) else []
    texts = [p.get("text") for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
    return str(role), [{"type": "text", "text": t} for t in texts]


require(  # what this module reads of the SDK: its hooks, fields and private state
    "openai-agents",
    "openai-agents",
    {
        RunHooksBase: (
            "on_llm_start",
            "on_llm_end",
            "on_tool_start",
            "on_tool_end",
            "on_handoff",
            "on_agent_start",
            "on_agent_end",
        ),
        ToolOutputGuardrail: ("run",),
        ToolContext: ("tool_call_id", "tool_name", "tool_arguments"),
        RunResultStreaming: ("_cancel_mode", "cancel", "stream_events", "interruptions", "final_output"),
        RunState: ("_context", "_max_turns", "from_string", "approve", "reject", "get_interruptions"),
        Handoff: ("_agent_ref", "tool_name", "default_tool_name"),
    },
)
