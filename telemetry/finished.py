"""Spans made whole: a turn's spans handed to the SDK's processors as finished spans.

A turn's spans are made when the turn ends (see `telemetry.tracing`), each with
its start, end, attributes, events and status known. The SDK's own way to make
one (`start_span`, then `end`) keeps a live span in between: a lock, a mutable
copy of the attributes, `on_start` and `_on_ending` for every processor, and a
second, read-only copy at `end` for `on_end`. `Spans.open` and `Spans.close`
make that read-only span directly, deciding its ids and sampling as
`Tracer.start_span` does (the tracer's sampler, id generator, span limits,
resource and scope): the processors' `on_end` gets the span the SDK would give
it, and a backend sees the same span.

It is done so only where it skips nothing anyone would see: an SDK tracer,
enabled, without the SDK's internal metrics, whose processors do nothing when
a span starts or is ending (the SDK's batch and simple processors, Endstate's
counted one). The processors are checked again whenever one is added. Any
other tracer makes its spans with `start_span` as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

EventSpec = tuple[str, Mapping[str, Any], int]  # name, attributes, time (ns)
Parent = Union[Context, "_Open"]  # where a span is made: under a context's span, or one `open` made
_UNSET = Status(StatusCode.UNSET)
_FLAGS = {  # (sampled, the parent's trace id random): the span's flags, as `Tracer.start_span` sets them
    (sampled, random): TraceFlags(
        (TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
        | (TraceFlags.RANDOM_TRACE_ID if random else 0)
    )
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
    """A span decided (ids, sampling) and not yet handed on."""

    name: str
    context: SpanContext
    parent: SpanContext | None
    kind: SpanKind
    attributes: Mapping[str, Any] | None  # the sampler's: None when it records nothing
    start_ns: int


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

    def open(
        self, name: str, parent: Parent, kind: SpanKind, attributes: Mapping[str, Any], start_ns: int
    ) -> _Open | trace.Span:
        """A span begun at `start_ns` under `parent` (a context, or a span `open` made): made whole
        by `close`."""
        sdk = self._sdk
        if isinstance(parent, _Open):
            parent_span, context = parent.context, None
        else:
            parent_span, context = trace.get_current_span(parent).get_span_context(), parent
        if sdk is None or not parent_span.is_valid or not self._fits(sdk):
            context = context or self.context_of(parent)
            return self._tracer.start_span(
                name, context=context, kind=kind, attributes=attributes, start_time=start_ns
            )
        decided = _sampled(sdk.sampler, parent_span)
        if decided is None:  # a sampler of its own: asked as the SDK asks it
            context = context or self.context_of(parent)
            result = sdk.sampler.should_sample(context, parent_span.trace_id, name, kind, attributes, ())
            sampled, state = result.decision.is_sampled(), result.trace_state
            recorded: Mapping[str, Any] | None = result.attributes if result.decision.is_recording() else None
        else:
            sampled, state = decided, parent_span.trace_state
            recorded = attributes if decided else None
        flags = _FLAGS[sampled, parent_span.trace_flags.random_trace_id]
        made = SpanContext(parent_span.trace_id, sdk.id_generator.generate_span_id(), False, flags, state)
        return _Open(name, made, parent_span, kind, recorded, start_ns)

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
        if span.attributes is None or self._processors is None:  # sampled out: nothing recorded
            return
        assert self._sdk is not None
        limits = self._sdk._span_limits
        made = ReadableSpan(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=self._sdk.resource,
            attributes=_bounded(span.attributes, limits),
            events=_events(events, limits) if events else (),  # none: none dropped, as the SDK's
            links=(),
            kind=span.kind,
            status=status or _UNSET,
            start_time=span.start_ns,
            end_time=end_ns,
            instrumentation_info=self._sdk.instrumentation_info,
            instrumentation_scope=self._sdk._instrumentation_scope,
        )
        self._processors.on_end(made)

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
    for a span under the local `parent`, without asking it; None for any other sampler or parent."""
    if type(sampler) is not sdk_sampling.ParentBased or parent.is_remote:
        return None
    delegate = getattr(
        sampler, "_local_parent_sampled" if parent.trace_flags.sampled else "_local_parent_not_sampled", None
    )
    if delegate is sdk_sampling.ALWAYS_ON:
        return True
    if delegate is sdk_sampling.ALWAYS_OFF:
        return False
    return None


_SCALARS = frozenset({str, bool, int, float})


def _bounded(attributes: Mapping[str, Any], limits: SpanLimits) -> Mapping[str, Any]:
    """`attributes` as the SDK bounds a span's: a copy as they are when each is already a valid
    value within the limits (what the SDK's cleaning would keep, none dropped), else the SDK's."""
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
                    longest is not None and type(item) is str and len(item) > longest
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


def _events(events: Iterable[EventSpec], limits: SpanLimits) -> BoundedList:
    return BoundedList.from_seq(
        limits.max_events,
        [
            Event(
                name,
                BoundedAttributes(
                    limits.max_event_attributes,
                    attributes,
                    max_value_len=limits.max_attribute_length,
                    immutable=True,
                ),
                at,
            )
            for name, attributes, at in events
        ],
    )
