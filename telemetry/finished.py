"""Spans made whole: handed to the SDK's processors as finished spans.

A turn's spans are made when the turn ends (see `telemetry.tracing`), each with
its start, end, attributes, events and status known; a run's span is current
while the run goes, and ends with it. The SDK's own way to make a span
(`start_span`, then `end`) keeps a live span in between: a lock, a mutable
copy of the attributes, lists for events and links, `on_start` and
`_on_ending` for every processor, and a second, read-only copy at `end` for
`on_end`. `Spans.open` and `Spans.close` make that read-only span directly,
deciding its ids and sampling as `Tracer.start_span` does (the tracer's
sampler, id generator, span limits, resource and scope): each processor's
`on_end` gets the span the SDK would give it, and a backend sees the same span.
`Spans.start` is the run span's way: a `WholeSpan`, current while the run goes,
keeping what anyone sets on it (attributes, events, links, status, name, an
exception) as the SDK's span keeps it, made whole when it ends.

It is done so only where it skips nothing anyone would see: an SDK tracer,
enabled, without the SDK's internal metrics, whose processors do nothing when
a span starts or is ending (the SDK's batch and simple processors, Endstate's
counted one). The processors are checked again whenever one is added. Any
other tracer makes its spans with `start_span` as before.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.trace import (
    Event,
    ReadableSpan,
    SpanLimits,
    SpanProcessor,
    SynchronousMultiSpanProcessor,
    Tracer,
)
from opentelemetry.sdk.trace import sampling as sdk_sampling
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util.types import Attributes, AttributeValue

from telemetry import names as n

log = logging.getLogger(__name__)

EventSpec = tuple[str, Mapping[str, Any], int]  # name, attributes, time (ns)
Parent = Union[Context, "_Open"]  # where a span is made: under a context's span, or one `open` made
_UNSET = Status(StatusCode.UNSET)
_FLAGS = {  # (sampled, the trace id random): a span's flags, as `Tracer.start_span` sets them
    (sampled, random): TraceFlags(TraceFlags.SAMPLED * sampled | TraceFlags.RANDOM_TRACE_ID * random)
    for sampled in (False, True)
    for random in (False, True)
}

# What a processor does as a span starts or is ending: the SDK's and Endstate's own do nothing.
_NOTHING_AT_START = {SpanProcessor.on_start, BatchSpanProcessor.on_start, SimpleSpanProcessor.on_start}
_NOTHING_AT_ENDING = {SpanProcessor._on_ending, BatchSpanProcessor._on_ending, SimpleSpanProcessor._on_ending}


def does_nothing_at_start(kind: type[SpanProcessor]) -> None:
    """Say that processors of `kind` do nothing in `on_start` and `_on_ending` (theirs or inherited)."""
    _NOTHING_AT_START.add(kind.on_start)
    _NOTHING_AT_ENDING.add(kind._on_ending)


@dataclass(slots=True)
class _Open:
    """A recorded span decided (ids, sampling) and not yet handed on."""

    name: str
    context: SpanContext
    parent: SpanContext | None
    kind: SpanKind
    attributes: Mapping[str, Any]  # as the sampler gave them
    start_ns: int
    links: Sequence[Link] = ()


class Spans:
    """Makes spans whole: `open` one (a parent for others), `close` it with its end, events and status."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer
        sdk = _plain_sdk_tracer(tracer)
        self._sdk = sdk
        self._processors: SynchronousMultiSpanProcessor | None = None
        self._checked: tuple[SpanProcessor, ...] | None = None  # the processors found to fit
        if sdk is not None and type(sdk.span_processor) is SynchronousMultiSpanProcessor:
            self._processors = sdk.span_processor

    def start(
        self,
        name: str,
        parent: Context,
        attributes: Mapping[str, Any],
        start_ns: int | None = None,
        links: Sequence[Link] = (),
    ) -> trace.Span:
        """A span current while something goes (a run): ended by its `end`, which makes it whole."""
        span = self.open(name, parent, SpanKind.INTERNAL, attributes, start_ns or time.time_ns(), links)
        return WholeSpan(self, span) if isinstance(span, _Open) else span

    def open(
        self,
        name: str,
        parent: Parent,
        kind: SpanKind,
        attributes: Mapping[str, Any],
        start_ns: int,
        links: Sequence[Link] = (),
    ) -> _Open | trace.Span:
        """A span begun at `start_ns` under `parent` (a context, or a span `open` made), a root when
        that holds none: made whole by `close`."""
        sdk = self._sdk
        if sdk is None or not self._fits(sdk):
            return self._tracer.start_span(
                name, self.context_of(parent), kind, attributes, links, start_time=start_ns
            )
        context = None if isinstance(parent, _Open) else parent
        above = parent.context if isinstance(parent, _Open) else _span_context(parent)
        root = not above.is_valid
        trace_id = sdk.id_generator.generate_trace_id() if root else above.trace_id
        decided = _sampled(sdk.sampler, above)
        if decided is None:  # a sampler of its own: asked as the SDK asks it
            context = context or self.context_of(parent)
            result = sdk.sampler.should_sample(context, trace_id, name, kind, attributes, links)
            sampled, state = result.decision.is_sampled(), result.trace_state
            recorded: Mapping[str, Any] | None = result.attributes if result.decision.is_recording() else None
        else:
            sampled, state = decided, None if root else above.trace_state
            recorded = attributes if decided else None
        random = sdk.id_generator.is_trace_id_random() if root else above.trace_flags.random_trace_id
        made = SpanContext(
            trace_id, sdk.id_generator.generate_span_id(), False, _FLAGS[sampled, random], state
        )
        if recorded is None:  # nothing recorded: a span only to parent others, as the SDK's
            return NonRecordingSpan(made)
        return _Open(name, made, None if root else above, kind, recorded, start_ns, links)

    def close(
        self,
        span: _Open | trace.Span,
        end_ns: int,
        events: Sequence[EventSpec] = (),
        status: Status | None = None,
    ) -> None:
        """End `span` at `end_ns` with `events` and `status`, and hand it to the processors."""
        if not isinstance(span, _Open):
            for name, attributes, at in events:
                span.add_event(name, attributes, at)
            if status is not None:
                span.set_status(status)
            span.end(end_time=end_ns)
            return
        made = [self.event(name, attributes, at) for name, attributes, at in events]
        self.hand_on(span, end_ns, made, status)

    def event(self, name: str, attributes: Attributes, at: int | None = None) -> Event:
        """An event with its attributes bounded as the SDK bounds an event's."""
        limits = self._limits
        bounded = BoundedAttributes(
            limits.max_event_attributes, attributes, max_value_len=limits.max_attribute_length, immutable=True
        )
        return Event(name, bounded, at)

    def link(self, link: Link) -> Link | None:
        """`link` with its attributes bounded as the SDK bounds a link's; None for a link it drops."""
        context, attributes = link.context, link.attributes
        if not (context and (context.is_valid or attributes or context.trace_state)):
            return None
        limits = self._limits
        bounded = BoundedAttributes(
            limits.max_link_attributes, attributes, max_value_len=limits.max_attribute_length, immutable=True
        )
        return Link(context, bounded)

    def hand_on(
        self,
        span: _Open,
        end_ns: int,
        events: Sequence[Event],
        status: Status | None,
        links: Sequence[Link] = (),
    ) -> None:
        """`span`, ended, to every processor: as the SDK's `Span.end` hands it on."""
        assert self._sdk is not None and self._processors is not None
        limits = self._limits
        made = ReadableSpan(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=self._sdk.resource,
            attributes=_bounded(span.attributes, limits),
            events=BoundedList.from_seq(limits.max_events, events) if events else (),  # none: none dropped
            links=BoundedList.from_seq(limits.max_links, links) if links else (),
            kind=span.kind,
            status=status or _UNSET,
            start_time=span.start_ns,
            end_time=end_ns,
            instrumentation_info=self._sdk.instrumentation_info,
            instrumentation_scope=self._sdk._instrumentation_scope,
        )
        self._processors.on_end(made)

    @property
    def _limits(self) -> SpanLimits:
        assert self._sdk is not None
        return self._sdk._span_limits

    @staticmethod
    def context_of(span: Parent | trace.Span) -> Context:
        """A context whose current span is `span` (a context is itself)."""
        if isinstance(span, Context):
            return span
        live = span if not isinstance(span, _Open) else NonRecordingSpan(span.context)
        return trace.set_span_in_context(live)

    @classmethod
    def parent_of(cls, span: _Open | trace.Span) -> Parent:
        """What `open` takes to make a span under `span`."""
        return span if isinstance(span, _Open) else cls.context_of(span)

    def _fits(self, sdk: Tracer) -> bool:
        """Whether spans may be handed on whole: the tracer enabled, and every processor it
        has (checked again when one is added) doing nothing at a span's start or ending."""
        processors = self._processors
        if processors is None or not sdk._is_enabled():
            return False
        now = processors._span_processors
        if now is not self._checked:
            if not all(_quiet(p) for p in now):
                return False
            self._checked = now
        return True


class WholeSpan(trace.Span):
    """A recorded span made whole when it ends: what is set on it meanwhile (by the run, or by
    anyone holding it as the current span) is kept as the SDK's live span keeps it, and after its
    end is ignored with the SDK's warning."""

    def __init__(self, spans: Spans, span: _Open) -> None:
        self._spans, self._span = spans, span
        self._lock = threading.Lock()
        self._dropped = 0  # attributes dropped: past the limit, or no name
        limits = spans._limits
        clean = _plainly_clean(span.attributes, limits.max_span_attribute_length)
        if clean is not None and (
            limits.max_span_attributes is None or len(clean) <= limits.max_span_attributes
        ):
            self._attributes = clean  # as they are: what setting each would keep
        else:
            self._attributes = {}
            for key, value in span.attributes.items():
                self._set(key, value)
        self._events: list[Event] = []
        self._links = [kept for link in span.links if (kept := spans.link(link)) is not None]
        self._status: Status | None = None
        self._ended = False

    def get_span_context(self) -> SpanContext:
        return self._span.context

    def is_recording(self) -> bool:
        return not self._ended

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        with self._lock:
            if self._was_ended("Setting attribute on ended span."):
                return
            for key, value in attributes.items():
                self._set(key, value)

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        with self._lock:
            if not self._was_ended("Setting attribute on ended span."):
                self._set(key, value)

    def add_event(self, name: str, attributes: Attributes = None, timestamp: int | None = None) -> None:
        event = self._spans.event(name, attributes, timestamp)
        with self._lock:
            if not self._was_ended("Tried calling _add_event on an ended span."):
                self._events.append(event)

    def add_link(self, context: SpanContext, attributes: Attributes = None) -> None:
        link = self._spans.link(Link(context, attributes))
        with self._lock:
            if link is not None and not self._was_ended("Tried calling _add_link on an ended span."):
                self._links.append(link)

    def update_name(self, name: str) -> None:
        with self._lock:
            if not self._was_ended("Tried calling update_name on an ended span."):
                self._span.name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        """As the SDK's: an OK status is final, UNSET is ignored, a `Status` takes no description."""
        with self._lock:
            if self._was_ended("Tried calling set_status on an ended span."):
                return
            code = status.status_code if isinstance(status, Status) else status
            if (
                self._status is not None and self._status.status_code is StatusCode.OK
            ) or code is StatusCode.UNSET:
                return
            if isinstance(status, Status):
                if description is not None:
                    log.warning(
                        "Description %s ignored. Use either `Status` or `(StatusCode, Description)`",
                        description,
                    )
                self._status = status
            else:
                self._status = Status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        """An `exception` event, with the attributes the SDK's span gives one."""
        kind = type(exception)
        module, qualname = kind.__module__, kind.__qualname__
        recorded: dict[str, Any] = {
            n.EXCEPTION_TYPE: f"{module}.{qualname}" if module and module != "builtins" else qualname,
            n.EXCEPTION_MESSAGE: str(exception),
            n.EXCEPTION_STACKTRACE: "".join(traceback.format_exception(exception)),
            n.EXCEPTION_ESCAPED: str(escaped),
        }
        self.add_event(n.EVENT_EXCEPTION, recorded | dict(attributes or {}), timestamp)

    def end(self, end_time: int | None = None) -> None:
        with self._lock:
            if self._was_ended("Calling end() on an ended span."):
                return
            self._ended = True
            self._span.attributes = self._kept()
        self._spans.hand_on(self._span, end_time or time.time_ns(), self._events, self._status, self._links)

    def _set(self, key: str, value: AttributeValue) -> None:
        """One attribute, as the SDK's span sets one: cleaned now (a list kept as it is now, a long
        text cut), last set last, the oldest dropped past the limit, one with no name dropped."""
        limits = self._spans._limits
        most, longest = limits.max_span_attributes, limits.max_span_attribute_length
        if most == 0 or type(key) is not str or not key:
            self._dropped += 1
            return
        if type(value) not in _SCALARS or (
            type(value) is str and longest is not None and len(value) > longest
        ):
            value = BoundedAttributes(None, {key: value}, max_value_len=longest)[key]
        attributes = self._attributes
        if key in attributes:
            del attributes[key]
        elif most is not None and len(attributes) >= most:
            del attributes[next(iter(attributes))]
            self._dropped += 1
        attributes[key] = value

    def _kept(self) -> Mapping[str, Any]:
        """The attributes as the span ends: counting those dropped, as the SDK's span does."""
        if not self._dropped:
            return self._attributes
        limits = self._spans._limits
        kept = BoundedAttributes(
            limits.max_span_attributes, None, max_value_len=limits.max_span_attribute_length
        )
        kept._dict, kept.dropped = self._attributes, self._dropped  # as its `__deepcopy__`: values clean
        return kept

    def _was_ended(self, warning: str) -> bool:
        if self._ended:
            log.warning(warning)
        return self._ended


def _span_context(context: Context) -> SpanContext:
    return trace.get_current_span(context).get_span_context()


def _plain_sdk_tracer(tracer: trace.Tracer) -> Tracer | None:
    """`tracer` if it is the SDK's own, with what `Spans` reads, and the SDK's internal metrics off."""
    if type(tracer) is not Tracer:
        return None
    needed = ("_span_limits", "_instrumentation_scope", "_is_enabled", "_tracer_metrics", "span_processor")
    if not all(hasattr(tracer, name) for name in needed):  # a later SDK, changed: its own way
        return None
    if type(tracer._tracer_metrics).__name__ != "NoOpTracerMetrics":
        return None
    if not isinstance(tracer.sampler, sdk_sampling.Sampler):
        return None
    return tracer


def _sampled(sampler: sdk_sampling.Sampler, parent: SpanContext) -> bool | None:
    """What the SDK's default sampler (parent based, each delegate always on or always off) decides
    for a span under a local `parent` or a root, without asking it; None for any other."""
    if type(sampler) is not sdk_sampling.ParentBased or parent.is_remote:
        return None
    if not parent.is_valid:
        delegate = getattr(sampler, "_root", None)
    elif parent.trace_flags.sampled:
        delegate = getattr(sampler, "_local_parent_sampled", None)
    else:
        delegate = getattr(sampler, "_local_parent_not_sampled", None)
    if delegate is sdk_sampling.ALWAYS_ON:
        return True
    if delegate is sdk_sampling.ALWAYS_OFF:
        return False
    return None


_SCALARS = frozenset({str, bool, int, float})


def _bounded(attributes: Mapping[str, Any], limits: SpanLimits) -> Mapping[str, Any]:
    """`attributes` as the SDK bounds a span's: a copy as they are when each is already a valid
    value within the limits (what the SDK's cleaning would keep, none dropped), else the SDK's."""
    if isinstance(attributes, BoundedAttributes):  # bounded already
        return attributes
    most, longest = limits.max_span_attributes, limits.max_span_attribute_length
    clean = _plainly_clean(attributes, longest)
    if clean is None or (most is not None and len(clean) > most):
        return BoundedAttributes(most, attributes, immutable=True, max_value_len=longest)
    return clean


def _plainly_clean(attributes: Mapping[str, Any], longest: int | None) -> dict[str, Any] | None:
    """A copy of `attributes` if every key is a name and every value a str, bool, int or float (or
    a tuple of them) no string of which is longer than `longest`: what the SDK keeps unchanged."""
    for key, value in attributes.items():
        kind = type(value)
        if kind is str:
            if longest is not None and len(value) > longest:
                return None
        elif kind is tuple:
            for item in value:
                if type(item) not in _SCALARS or (
                    type(item) is str and longest is not None and len(item) > longest
                ):
                    return None
        elif kind not in _SCALARS:
            return None
        if type(key) is not str or not key:
            return None
    return dict(attributes)


def _quiet(processor: SpanProcessor) -> bool:
    kind = type(processor)
    return kind.on_start in _NOTHING_AT_START and kind._on_ending in _NOTHING_AT_ENDING
