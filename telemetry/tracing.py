"""Spans for every run segment, turn, model call, tool call and human wait.

Every span is parented explicitly from the segment's own span, never from the
ambient context: the loop is async and its awaits may hop tasks. Only the run
span takes the caller's current context as parent, at `run_started`, which
the loop calls synchronously from `arun`/`aresume`. The run span is then the
current span until `run_ended` (as `start_as_current_span` would make it), so
what the run's tools do (a nested agent run, an instrumented client's spans)
lands in the run's trace, under its span. Once the run has ended, the span its
context holds stands for the caller's (`_CurrentSpan`): a run that ends in another
thread or task leaves nothing begun in the starting one parented under it. The observer's
`trace_id`/`span_id` are set only for a sampled run span, so a result never
points at a trace that was not recorded.

A Temporal workflow plans its segments' span ids (`RunInfo.planned`, honoured
when the provider's id generator is `PlannedIds`): the run span is then made
when the segment ends, a root with those ids and its real start, and a
stand-in with the same ids parents the segment's other spans meanwhile. A
workflow that leaves a worker mid-segment so leaves no span begun and never
ended, and its replays know the trace without making a span.

A turn's spans are made when the turn ends, each with its real start time and
every attribute at once (one pass of the SDK's attribute checks, none set
late): the turn, then its model and tool calls under it, then the turn's end.
A call's content event (`EVENT_ONLY`) is emitted as its span is made, with the
time the call ended. So a backend sees a turn whole, when it ends, as it does
with any batch export.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from random import getrandbits
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import Logger, LoggerProvider
from opentelemetry.context import Context
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from agent.hooks import HumanWait, RunInfo, RunObserver, SegmentLink, hook_failed
from agent.models.base import BILLED_APART, BILLED_BY_MODEL, CALL_MODEL, THINKING_TOKENS, shown_id
from agent.result import StopCause, StopReason
from telemetry import _content
from telemetry import names as n
from telemetry.capture import Capture
from telemetry.finished import Parent, Spans
from telemetry.redact import Redactor

if TYPE_CHECKING:
    from opentelemetry.util.types import Attributes, AttributeValue

    from agent.models.base import ModelReply, ModelRequest, ToolCall
    from agent.result import RunResult
    from agent.stops import StopReason, TurnSignal
    from agent.tools import ToolOutcome

Redact = Callable[[str], str]


@dataclass(slots=True)
class _Call:
    """A model or tool call: its span is made when its turn ends."""

    name: str
    start_ns: int
    attributes: dict[str, Any]
    kind: SpanKind = SpanKind.INTERNAL
    content: dict[str, Any] | None = None  # message content, for the event path
    ended_ns: int = 0  # when the call ended: its span's end, made later
    event: bool = False  # a content event goes out with its span
    reply: ModelReply | None = None  # a model call's reply, its output content read when its span is made


class _Turn:
    """A turn under way: what its span will hold when it ends."""

    __slots__ = ("calls", "continued", "events", "index", "start_ns")

    def __init__(self, index: int, start_ns: int, continued: bool) -> None:
        self.index, self.start_ns, self.continued = index, start_ns, continued
        self.calls: list[_Call] = []  # ended, in the order they ended
        self.events: list[tuple[str, dict[str, Any], int]] = []  # name, attributes, time


_EVENT_KEYS = frozenset(
    {
        n.GEN_AI_OPERATION_NAME,
        n.GEN_AI_PROVIDER_NAME,
        n.GEN_AI_REQUEST_MODEL,
        n.GEN_AI_RESPONSE_MODEL,
        n.GEN_AI_RESPONSE_ID,
        n.GEN_AI_RESPONSE_FINISH_REASONS,
        n.GEN_AI_USAGE_INPUT_TOKENS,
        n.GEN_AI_USAGE_OUTPUT_TOKENS,
    }
)


MAX_FAILURE_CHARS = 500  # per verifier failure on the verify event
MAX_SHAPES = 1024  # (agent, task type, provider, model) whose span names and attributes are kept
MAX_TOOL_NAME_CHARS = 64  # a made-up tool name longer than this is "other"
_NAME = re.compile(r"[A-Za-z0-9_.:\-]{1,64}")  # what an error type may look like


_PLANNED: ContextVar[SegmentLink | None] = ContextVar("endstate_planned_span", default=None)
_RUN_OF = otel_context.create_key("endstate_run_trace")  # the segment whose span a context made current


class PlannedIds(RandomIdGenerator):
    """Random ids, but for a run span whose ids a Temporal workflow planned (`RunInfo.planned`):
    those, so each replay of the workflow knows its segment's trace without a span of its own."""

    def generate_span_id(self) -> int:
        planned = _PLANNED.get()
        if planned:
            return int(planned.span_id, 16)
        span_id = getrandbits(64)  # `RandomIdGenerator`'s, inline: every span takes one
        while span_id == trace.INVALID_SPAN_ID:
            span_id = getrandbits(64)
        return span_id

    def generate_trace_id(self) -> int:
        planned = _PLANNED.get()
        return int(planned.trace_id, 16) if planned else super().generate_trace_id()


class TracingHooks:
    """`RunHooks` that record each run segment as a tree of spans.

    `capture_content` (True, or a `Capture` mode) records messages, tool
    arguments and results, the question asked and the stop note, each through
    `redact` (secrets out, long text cut), on spans (SPAN_ONLY), as one
    `gen_ai.client.inference.operation.details` event per model call through
    `logger_provider` (EVENT_ONLY), or both. Off by default: then no message
    text reaches a span or an event, and a verifier failure keeps only its
    first line.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider,
        capture_content: bool | Capture = False,
        redact: Redact | None = None,
        logger_provider: LoggerProvider | None = None,
    ) -> None:
        self._tracer = tracer_provider.get_tracer(n.INSTRUMENTATION_SCOPE)
        self._spans = Spans(self._tracer)  # the spans made whole: a turn's, a person's wait
        capture = (
            capture_content
            if isinstance(capture_content, Capture)
            else Capture(n.CAPTURE_SPAN_ONLY if capture_content else n.CAPTURE_NO_CONTENT)
        )
        self.capture = capture
        self.capture_content = capture.spans
        self._events = (
            logger_provider.get_logger(n.INSTRUMENTATION_SCOPE)
            if capture.events and logger_provider is not None
            else None
        )
        self._redact = redact or Redactor.from_env(os.environ)
        self._shapes: dict[tuple[str, str, str, str], _Shape] = {}

    def run_started(self, info: RunInfo) -> RunObserver:
        key = (info.agent, info.task_type, info.provider, info.model)
        shape = self._shapes.get(key)
        if shape is None:
            shape = _Shape.of(info)
            if len(self._shapes) < MAX_SHAPES:
                self._shapes[key] = shape
        planned = (
            (info.planned, self.planned_ids(info) is not None) if info.planned and self.plans_spans else None
        )
        return _RunTrace(self._spans, info, shape, self._redact, self.capture_content, self._events, planned)

    @property
    def plans_spans(self) -> bool:
        """Whether a segment's span takes the ids its `RunInfo.planned` gives (`PlannedIds`)."""
        return isinstance(getattr(self._tracer, "id_generator", None), PlannedIds)

    def planned_ids(self, info: RunInfo) -> SegmentLink | None:
        """The ids `info.planned` when this tracer records that span (sampled), else None: what the
        segment's observer will report, known before it is made (see `plans_spans`)."""
        sampler = getattr(self._tracer, "sampler", None)
        if info.planned is None or not self.plans_spans or sampler is None:
            return None
        shape = _Shape.of(info)
        decided = sampler.should_sample(
            Context(),
            int(info.planned.trace_id, 16),
            shape.run_name,
            SpanKind.INTERNAL,
            _run_attributes(info, shape),
            _links(info.continues),
        )
        return info.planned if decided.decision.is_sampled() else None


@dataclass(frozen=True, slots=True)
class _Shape:
    """What every run of one agent and model shares: span names and the fixed attributes."""

    run_name: str
    run_attributes: dict[str, Any]  # copied per run, which adds its own
    chat_name: str
    chat_attributes: dict[str, Any]  # copied per model call, which adds its own

    @classmethod
    def of(cls, info: RunInfo) -> _Shape:
        info = _utf8_info(info)
        return cls(
            f"{n.SPAN_INVOKE_AGENT} {info.agent}",
            {
                n.GEN_AI_OPERATION_NAME: n.OP_INVOKE_AGENT,
                n.GEN_AI_PROVIDER_NAME: info.provider,
                n.GEN_AI_AGENT_NAME: info.agent,
                n.GEN_AI_REQUEST_MODEL: info.model,
                n.AGENT_TASK_TYPE: info.task_type,
            },
            f"{n.SPAN_CHAT} {info.model}",
            {
                n.GEN_AI_OPERATION_NAME: n.OP_CHAT,
                n.GEN_AI_PROVIDER_NAME: info.provider,
                n.GEN_AI_REQUEST_MODEL: info.model,
            },
        )


class _RunTrace(RunObserver):
    """The spans of one segment: run, then turns holding chats and tools. Each hook catches and logs
    its own failures (`guarded`): the loop calls it as it is, or through the telemetry observer."""

    guarded = True

    def __init__(
        self,
        spans: Spans,  # makes every span of the segment, the run's too
        info: RunInfo,
        shape: _Shape,
        redact: Redact,
        capture: bool,
        events: Logger | None,
        planned: tuple[SegmentLink, bool] | None = None,  # planned ids, and whether the span is sampled
    ) -> None:
        self._spans, self._info = spans, info
        self._redact, self._capture = redact, capture
        self._clock = _Anchored()  # what every span of the segment is timed by
        self._history = _content.HistoryJson(redact)  # converts each message of the run once
        self._events = events
        self._shape, self._planned = shape, planned
        self._run_events: list[tuple[str, dict[str, Any], int]] = []  # a planned span's, until it is made
        self._caller = _live(otel_context.get_current())  # the run span's parent, current again at its end
        self._span = self._planned_span() if planned else self._run_span(self._caller)
        self._ctx = trace.set_span_in_context(self._span)  # the parent of the segment's own spans
        self._current = otel_context.set_value(_RUN_OF, self, trace.set_span_in_context(_CurrentSpan(self)))
        otel_context.attach(self._current)  # the run's span is current until it ends
        self._turn: _Turn | None = None
        self._chat: _Call | None = None
        self._tools: dict[str, _Call] = {}
        self._held: list[_Call] = []  # calls that ended outside any turn: the next turn takes them
        self._chat_name = shape.chat_name
        self._chat_attributes = shape.chat_attributes
        self._ended = False
        sc = self._span.get_span_context()
        if sc.is_valid and sc.trace_flags.sampled:
            self.trace_id = trace.format_trace_id(sc.trace_id)
            self.span_id = trace.format_span_id(sc.span_id)

    def _run_span(self, parent: Context) -> trace.Span:
        info = self._info
        return self._spans.start(
            self._shape.run_name,
            parent,
            _run_attributes(info, self._shape),
            self._run_start(),
            _links(info.continues),
        )

    def _run_start(self) -> int:
        """When the run span begins: as the segment is observed here, on the clock of its spans; a
        replayed segment's at its own start, which came before (`RunInfo.replayed`). Not at the run's
        `started_at` for a live one: that is by the run's clock (a run store's, Temporal's, a test's),
        and a run clock a minute ahead of this host's made a run span of a few seconds end before it
        began, its turns outside it."""
        began = self._clock.start_ns
        if not self._info.replayed or self._info.started_at <= 0:
            return began
        return min(_ns(self._info.started_at), began)

    def _planned_span(self) -> trace.Span:
        """A stand-in with the planned ids, parent of the segment's spans: the run span itself is made
        (with those ids, a root) when the segment ends, so a workflow that leaves a worker's cache
        mid-segment leaves no span begun and never ended (its replay elsewhere makes the span)."""
        assert self._planned is not None
        planned, sampled = self._planned
        flags = TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
        ids = (int(planned.trace_id, 16), int(planned.span_id, 16))
        return trace.NonRecordingSpan(SpanContext(*ids, is_remote=False, trace_flags=flags))

    def _made_planned_span(self) -> None:
        """The planned run span, made now with its planned ids and start (see `_planned_span`)."""
        assert self._planned is not None
        token = _PLANNED.set(self._planned[0])
        try:
            self._span = self._run_span(Context())  # begun: `run_ended` ends it, whatever fails next
        finally:
            _PLANNED.reset(token)
        for name, attributes, at in self._run_events:
            self._span.add_event(name, attributes, at)
        self._run_events = []

    # -- turns -------------------------------------------------------------

    def turn_started(self, index: int, continued: bool = False) -> None:
        try:
            if self._ended:
                return
            if self._turn is not None or self._chat is not None or self._tools:
                self.turn_ended()
            turn = self._turn = _Turn(index, self._clock.now_ns(), continued)
            if self._held:  # an approved tool run on resume, before the turn it completes
                turn.calls, self._held = self._held, []
                turn.start_ns = min(turn.start_ns, *(call.start_ns for call in turn.calls))
        except BaseException:
            hook_failed("turn_started (spans)")

    def turn_ended(self, index: int = 0, signal: TurnSignal | StopReason | None = None) -> None:
        """End the open turn (its spans are made now) and whatever it still holds (a call cut off
        by cancellation, say); also when a turn starts, or the segment ends, with one still open."""
        try:
            if self._chat is not None or self._tools:
                self._interrupt_calls()
            turn, self._turn = self._turn, None
            if turn is None:
                return
            attributes: dict[str, Any] = {n.AGENT_TURN_INDEX: turn.index}
            if turn.continued:
                attributes[n.AGENT_TURN_CONTINUED] = True
            if signal is not None:
                attributes[n.AGENT_TURN_SIGNAL] = str(signal)  # its word: a plain string, as exported
            spans = self._spans
            span = spans.open(n.SPAN_TURN, self._ctx, SpanKind.INTERNAL, attributes, turn.start_ns)
            try:
                if turn.calls:
                    parent = spans.parent_of(span)
                    for call in turn.calls:
                        self._span_of(call, parent)
            finally:  # begun, so ended: a call's span failing leaves no turn span open
                spans.close(span, self._clock.now_ns(), turn.events)
        except BaseException:
            hook_failed("turn_ended (spans)")

    # -- model and tool calls ------------------------------------------------

    def model_started(self, request: ModelRequest, attempt: int) -> None:
        try:
            if self._ended:
                return
            if self._chat is not None:
                self._emit(self._chat, {n.ERROR_TYPE: n.ERROR_INTERRUPTED})
            attributes = self._chat_attributes.copy()
            name = self._chat_name
            if request.model:  # a foreign run's call to a model other than the run's
                name = _called(attributes, request.model)
            attributes[n.GEN_AI_REQUEST_MAX_TOKENS] = request.max_tokens
            attributes[n.AGENT_ATTEMPT] = attempt
            content = None
            if self._capture or self._events is not None:
                content = {n.GEN_AI_INPUT_MESSAGES: self._history(request.messages)}
                if request.system:
                    content[n.GEN_AI_SYSTEM_INSTRUCTIONS] = _content.system_json(request.system, self._redact)
                if self._capture:
                    attributes.update(content)
            self._chat = _Call(name, self._clock.now_ns(), attributes, SpanKind.CLIENT, content)
        except BaseException:
            hook_failed("model_started (spans)")

    def model_ended(self, reply: ModelReply | None, error: BaseException | None) -> None:
        try:
            chat, self._chat = self._chat, None
            if chat is None:
                return
            if reply is None:
                failed = {n.ERROR_TYPE: error_type_of(error)}
                if request_id := shown_id(getattr(error, "request_id", None)):  # it answered: its id
                    failed[n.ANTHROPIC_REQUEST_ID] = request_id
                self._emit(chat, failed)
                return
            if reply.extra and (model := reply.extra.get(CALL_MODEL)):  # its model, told only now
                chat.name = _called(chat.attributes, model)
            _add_reply_attributes(chat.attributes, reply)
            if chat.content is not None:  # content is captured: its output is read with the span, as
                chat.reply = reply  # a reply sent block by block may show calls after it was recorded
            chat.event = self._events is not None  # the content event is emitted with the span
            self._emit(chat)
        except BaseException:
            hook_failed("model_ended (spans)")

    def _event(self, events: Logger, chat: _Call, span: Context) -> None:
        """The model call's content as a `gen_ai.client.inference.operation.details` event."""
        attributes = {key: value for key, value in chat.attributes.items() if key in _EVENT_KEYS} | (
            chat.content or {}
        )
        events.emit(
            event_name=n.EVENT_INFERENCE_DETAILS,
            attributes=attributes,
            context=span,
            timestamp=chat.ended_ns,
        )

    def tool_started(self, call: ToolCall) -> None:
        try:
            if self._ended:
                return
            if (stale := self._tools.pop(call.id, None)) is not None:
                self._emit(stale, {n.ERROR_TYPE: n.ERROR_INTERRUPTED})
            attributes: dict[str, Any] = {
                n.GEN_AI_OPERATION_NAME: n.OP_EXECUTE_TOOL,
                n.GEN_AI_TOOL_NAME: self._tool_name(call.name),
                n.GEN_AI_TOOL_CALL_ID: shown_id(call.id),
            }
            if self._capture:
                attributes[n.GEN_AI_TOOL_CALL_ARGUMENTS] = _content.value_json(call.arguments, self._redact)
            name = f"{n.SPAN_EXECUTE_TOOL} {attributes[n.GEN_AI_TOOL_NAME]}"
            self._tools[call.id] = _Call(name, self._clock.now_ns(), attributes)
        except BaseException:
            hook_failed("tool_started (spans)")

    def _tool_name(self, name: str) -> str:
        """A called tool's name as its span shows it: a configured tool's as it is; a name the model made
        up (or a foreign framework's) only when it looks like a name once redacted, else "other". The model
        chooses it: with content capture off, a secret or 10 kB of text in it must not name a span."""
        if name in self._info.tools:
            return utf8_text(name)
        shown = utf8_text(self._redact(name[: 4 * MAX_TOOL_NAME_CHARS]))
        looks_like_a_name = len(shown) <= MAX_TOOL_NAME_CHARS and shown.isprintable() and " " not in shown
        return shown if shown and looks_like_a_name else n.TOOL_OTHER

    def tool_ended(self, call: ToolCall, outcome: ToolOutcome) -> None:
        try:
            pending = self._tools.pop(call.id, None)
            if pending is None:
                return
            if self._capture:
                pending.attributes[n.GEN_AI_TOOL_CALL_RESULT] = self._redact(outcome.text)
            if outcome.is_error:
                pending.attributes[n.ERROR_TYPE] = bounded_name(outcome.error_type, n.ERROR_TOOL)
            self._emit(pending)
        except BaseException:
            hook_failed("tool_ended (spans)")

    # -- verification, people, the end -------------------------------------

    def verified(self, failures: list[str]) -> None:
        try:
            if self._ended:
                return
            attributes: dict[str, Any] = {
                n.AGENT_VERIFY_PASSED: not failures,
                n.AGENT_VERIFY_FAILURE_COUNT: len(failures),
            }
            if failures:
                attributes[n.AGENT_VERIFY_FAILURES] = [self._short(f) for f in failures]
            if self._turn is not None:
                self._turn.events.append((n.EVENT_VERIFY, attributes, self._clock.now_ns()))
            elif self._planned is not None:  # the run span is made at the end (see `_planned_span`)
                self._run_events.append((n.EVENT_VERIFY, attributes, self._clock.now_ns()))
            else:
                self._span.add_event(n.EVENT_VERIFY, attributes, self._clock.now_ns())
        except BaseException:
            hook_failed("verified (spans)")

    def human_waited(self, wait: HumanWait) -> None:
        try:
            if self._ended:
                return
            attributes: dict[str, Any] = {n.AGENT_HUMAN_WAIT_OUTCOME: wait.outcome}
            if wait.pending_tool:
                attributes[n.AGENT_HUMAN_WAIT_PENDING_TOOL] = wait.pending_tool
            if self._capture and wait.question:
                attributes[n.AGENT_HUMAN_WAIT_QUESTION] = self._redact(wait.question)
            span = self._spans.open(
                n.SPAN_HUMAN_WAIT, self._ctx, SpanKind.INTERNAL, attributes, _ns(wait.suspended_at)
            )
            self._spans.close(span, _ns(wait.suspended_at + person_wait_seconds(wait)))
        except BaseException:
            hook_failed("human_waited (spans)")

    def run_ended(self, result: RunResult) -> None:
        try:
            if self._ended:
                return
            self._ended = True
            self.turn_ended()
            try:
                if self._planned is not None:
                    self._made_planned_span()
                self._end_segment(result)
            finally:  # whatever failed (a redactor that raises, say)
                self._close()
        except BaseException:
            hook_failed("run_ended (spans)")

    def _end_segment(self, result: RunResult) -> None:
        """The run span's last attributes, and the spans of calls no turn took."""
        for call in self._held:  # the segment ended before a turn took them
            self._span_of(call, self._ctx)
        self._held = []
        attributes = _result_attributes(result)
        if self._capture and result.note:
            attributes[n.AGENT_STOP_NOTE] = self._redact(result.note)
        if result.reason is StopReason.ERROR:
            error_type = attributes[n.ERROR_TYPE] = bounded_name(result.error_type, str(StopReason.ERROR))
            self._span.set_status(Status(StatusCode.ERROR, error_type))
        self._span.set_attributes(attributes)

    def _close(self) -> None:
        """End the run span and make the caller's context current again, even when ending it raises:
        no run span left open, and no later run in the caller's task made a child of this one."""
        try:
            self._span.end(self._clock.now_ns())
        finally:
            self._restore_callers_context()

    def _restore_callers_context(self) -> None:
        """The caller's context current again, where the run's is current: in the task that
        started the run, as a rule. (Restored by attaching it, not by `detach`, which fails and
        logs an error when a run ends in another task, as an abandoned stream's close does.)"""
        if otel_context.get_current() is self._current:
            otel_context.attach(self._caller)

    # -- helpers -------------------------------------------------------------

    @property
    def span(self) -> trace.Span:
        """The segment's run span."""
        return self._span

    @property
    def caller_if_ended(self) -> Context | None:
        """The context this segment began in, once it has ended (None while it runs)."""
        return self._caller if self._ended else None

    def _interrupt_calls(self) -> None:
        """The calls still open (cut off by cancellation, say) ended as interrupted."""
        for call in [self._chat, *self._tools.values()]:
            if call is not None:
                self._emit(call, {n.ERROR_TYPE: n.ERROR_INTERRUPTED})
        self._chat, self._tools = None, {}

    def _emit(self, call: _Call, ended: dict[str, Any] | None = None) -> None:
        """A call ended (with `ended` added to its attributes): the open turn takes it, or the
        next one; once the segment has ended, its span is made under the run's."""
        call.ended_ns = self._clock.now_ns()
        if ended:
            call.attributes.update(ended)
        if self._turn is not None:
            self._turn.calls.append(call)
        elif not self._ended:
            self._held.append(call)
        else:
            self._span_of(call, self._ctx)

    def _span_of(self, call: _Call, parent: Parent) -> None:
        """The call's span under `parent`; failed when `error.type` says it failed.

        A call cut off by cancellation says so in `error.type` but is no error:
        a cancelled run has no failed span.
        """
        if call.reply is not None:
            self._read_output(call, call.reply)
        spans = self._spans
        span = spans.open(call.name, parent, call.kind, call.attributes, call.start_ns)
        error_type = call.attributes.get(n.ERROR_TYPE)
        failed = error_type and error_type != n.ERROR_INTERRUPTED
        spans.close(span, call.ended_ns, status=Status(StatusCode.ERROR, error_type) if failed else None)
        if call.event and self._events is not None:
            self._event(self._events, call, spans.context_of(span))

    def _read_output(self, chat: _Call, reply: ModelReply) -> None:
        """A model call's captured output, read from its reply as its span is made."""
        chat.reply = None
        output = _content.output_json(reply.content, reply.stop_reason, self._redact)
        if chat.content is not None:
            chat.content[n.GEN_AI_OUTPUT_MESSAGES] = output
        if self._capture:
            chat.attributes[n.GEN_AI_OUTPUT_MESSAGES] = output

    def _short(self, failure: str) -> str:
        """A verifier failure, redacted and cut; without content capture only its first line.

        A failure's first line is the verifier's own words (a predicate's
        reason, "`pytest -q` exited 1:"); what follows may be the command's
        output, which can quote anything the run touched.
        """
        text = self._redact(failure if self._capture else failure.partition("\n")[0])
        return text if len(text) <= MAX_FAILURE_CHARS else text[:MAX_FAILURE_CHARS] + "..."


def person_wait_seconds(wait: HumanWait) -> float:
    """From suspension to the answer or the deadline, whichever came first (`HumanWait.seconds`)."""
    return wait.seconds


def error_type_of(error: BaseException | None) -> str:
    """A short name for a failure: the error's own `error_type` when it is name-like, else its class."""
    if error is None:
        return n.ERROR_UNKNOWN
    return bounded_name(getattr(error, "error_type", None), type(error).__name__)


def utf8_text(text: str) -> str:
    """`text` as UTF-8 carries it: a lone surrogate (JSON's `\\ud800`, argv bytes Python could not
    decode) written as a backslash escape. OTLP could not encode a span named with one: the whole
    batch failed, the spans of every other run in it lost too."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _utf8_info(info: RunInfo) -> RunInfo:
    """`info` with the names its spans are named and labelled by as UTF-8 carries them."""
    names = (info.agent, info.task_type, info.provider, info.model)
    fixed = tuple(utf8_text(v) if isinstance(v, str) else v for v in names)
    if fixed == names:
        return info
    agent, task_type, provider, model = fixed
    return replace(info, agent=agent, task_type=task_type, provider=provider, model=model)


def bounded_name(value: object, fallback: str) -> str:
    """`value` when it looks like a name (no spaces, at most 64 characters), else `fallback`.

    An error type is a label value and a span attribute: free text there
    would make a series per message and could carry message content.
    """
    return value if isinstance(value, str) and _NAME.fullmatch(value) else fallback


class _CurrentSpan(trace.Span):
    """The span a run makes current: its run span while the segment runs, the span current where it
    began once it has ended. A run that ends in another thread or task than the one that started it
    cannot make the caller's context current again there; so nothing begun there afterwards (an
    instrumented client's span, the team's own) is parented under the ended run, in its trace."""

    def __init__(self, run: _RunTrace) -> None:
        self._run = run

    def _now(self) -> trace.Span:
        caller = self._run.caller_if_ended
        return self._run.span if caller is None else trace.get_current_span(caller)

    def get_span_context(self) -> SpanContext:
        return self._now().get_span_context()

    def is_recording(self) -> bool:
        return self._now().is_recording()

    def end(self, end_time: int | None = None) -> None:
        self._now().end(end_time)

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        self._now().set_attributes(attributes)

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        self._now().set_attribute(key, value)

    def add_event(self, name: str, attributes: Attributes = None, timestamp: int | None = None) -> None:
        self._now().add_event(name, attributes, timestamp)

    def add_link(self, context: SpanContext, attributes: Attributes = None) -> None:
        self._now().add_link(context, attributes)

    def update_name(self, name: str) -> None:
        self._now().update_name(name)

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        self._now().set_status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        self._now().record_exception(exception, attributes, timestamp, escaped)


def _live(ctx: Context) -> Context:
    """`ctx`, or when its span is a segment's that has ended, the context that segment began in. A
    run that ends in another thread or task than its caller's (a home-grown loop stopped from a
    worker, a stream closed by another task) cannot make its caller's context current again there:
    the next run in the caller's thread or task must not be made a child of the ended one."""
    while isinstance(run := otel_context.get_value(_RUN_OF, ctx), _RunTrace):
        caller = run.caller_if_ended
        if caller is None:
            return ctx
        ctx = caller
    return ctx


def _run_attributes(info: RunInfo, shape: _Shape) -> dict[str, Any]:
    attributes = shape.run_attributes.copy()
    attributes[n.GEN_AI_CONVERSATION_ID] = info.run_id
    attributes[n.AGENT_SEGMENT] = info.segment
    if info.extended:
        attributes[n.AGENT_BUDGET_EXTENDED] = True
    if info.replayed:
        attributes[n.AGENT_SEGMENT_REPLAYED] = True
    return attributes


def _result_attributes(result: RunResult) -> dict[str, Any]:
    """Run totals so far (all segments), as the result reports them."""
    usage = result.usage  # its fields read once, not through the result's properties
    attributes: dict[str, Any] = {
        n.STOP_REASON: str(result.reason),
        n.STOP_VERIFIED: result.verified,
        n.AGENT_TURNS: result.turns,
        n.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
        n.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
    }
    if result.limit is not None:
        attributes[n.STOP_LIMIT] = str(result.limit)
    if result.reason == StopReason.GAVE_UP:  # as the stop_cause label says: an agent's own give-up
        attributes[n.STOP_CAUSE] = str(result.cause or StopCause.AGENT)  # unless said otherwise
    if usage.cost_usd is not None:  # left out when a model's price is unknown
        attributes[n.AGENT_COST_USD] = usage.cost_usd
    return attributes


def _called(attributes: dict[str, Any], model: str) -> str:
    """A chat span's name for a call to `model`, which its `attributes` now name as requested (as UTF-8
    carries it, as the run's model is: see `utf8_text`)."""
    model = utf8_text(model)
    attributes[n.GEN_AI_REQUEST_MODEL] = model
    return f"{n.SPAN_CHAT} {model}"


def _add_reply_attributes(attributes: dict[str, Any], reply: ModelReply) -> None:
    """The reply's usage, finish reason, model, ids and quota, added to its call's `attributes`."""
    attributes[n.GEN_AI_USAGE_INPUT_TOKENS] = reply.input_tokens
    attributes[n.GEN_AI_USAGE_OUTPUT_TOKENS] = reply.output_tokens
    attributes[n.GEN_AI_RESPONSE_FINISH_REASONS] = (reply.stop_reason,)
    if reply.model:
        attributes[n.GEN_AI_RESPONSE_MODEL] = utf8_text(reply.model)  # a server's: OTLP must encode it
    if reply.response_id:  # ids from outside, bounded and escaped (`shown_id`)
        attributes[n.GEN_AI_RESPONSE_ID] = shown_id(reply.response_id)
    if reply.request_id:
        attributes[n.ANTHROPIC_REQUEST_ID] = shown_id(reply.request_id)
    attributes[n.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = reply.cache_read_input_tokens
    attributes[n.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = reply.cache_creation_input_tokens
    if reply.extra:  # most replies: empty
        _add_extra_attributes(attributes, reply)
    if reply.time_to_first_token is not None:
        attributes[n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = reply.time_to_first_token
    if reply.server_tool_use:  # web search, web fetch, code execution
        for tool, uses in reply.server_tool_use.items():
            attributes[f"{n.SERVER_TOOL_USE_PREFIX}{tool}"] = uses


def _add_extra_attributes(attributes: dict[str, Any], reply: ModelReply) -> None:
    """What a reply's `extra` adds to its call's `attributes`: its usage in parts, the output tokens
    spent thinking, and what is left of the quota."""
    extra = reply.extra
    if BILLED_BY_MODEL in extra or BILLED_APART in extra:  # a few replies
        _add_billed(attributes, reply)
    if (thinking := extra.get(THINKING_TOKENS)) is not None:  # a part of the output
        attributes[n.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = thinking
    if rate_limit := extra.get("rate_limit"):  # what is left of the quota (fast mode's: fast-*)
        for header, value in rate_limit.items():
            name = header.removeprefix("anthropic-ratelimit-").removeprefix("anthropic-")
            attributes[f"{n.RATE_LIMIT_PREFIX}{name}"] = str(value)


def _add_billed(attributes: dict[str, Any], reply: ModelReply) -> None:
    """The usage attributes of a reply whose usage is in parts: a server-side fallback's attempts (its
    top-level counts may give the answering attempt's alone: the span counts every attempt, as the
    run does), and the calls billed apart within it."""
    if by_model := reply.billed_by_model:
        for key, field in _USAGE_FIELDS:
            attributes[key] = sum(getattr(part, field) for part in by_model)
    if apart := reply.billed_apart:
        _add_billed_apart(attributes, apart)


def _add_billed_apart(attributes: dict[str, Any], parts: list[ModelReply]) -> None:
    """The calls the provider made within this one and billed apart from its top-level usage (a
    server-side compaction, an advisor model's answer), added to its usage attributes: the span says
    what the API billed for the call, as the run's totals count it (the token metric gives each part
    under its own model)."""
    for key, field in _USAGE_FIELDS:
        attributes[key] += sum(getattr(part, field) for part in parts)


_USAGE_FIELDS = (
    (n.GEN_AI_USAGE_INPUT_TOKENS, "input_tokens"),
    (n.GEN_AI_USAGE_OUTPUT_TOKENS, "output_tokens"),
    (n.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, "cache_read_input_tokens"),
    (n.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, "cache_creation_input_tokens"),
)


def _links(continues: SegmentLink | None) -> Sequence[Link]:
    """A link to the suspended segment's span, when its ids are well-formed."""
    if continues is None:
        return ()
    try:
        context = SpanContext(
            trace_id=int(continues.trace_id, 16),
            span_id=int(continues.span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    except (TypeError, ValueError):
        return ()
    return (Link(context),) if context.is_valid else ()


class _Anchored:
    """This host's wall time when a segment began, carried on by the monotonic clock: its spans are
    timed by it, so a step of the wall clock mid-segment (an NTP correction, a VM resumed) makes no
    span end before it began, nor a call's span fall outside its turn's."""

    __slots__ = ("_monotonic_ns", "start_ns")

    def __init__(self) -> None:
        self.start_ns, self._monotonic_ns = time.time_ns(), time.monotonic_ns()

    def now_ns(self) -> int:
        return self.start_ns + (time.monotonic_ns() - self._monotonic_ns)


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)
