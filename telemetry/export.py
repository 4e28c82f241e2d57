"""Span export that never raises and never loses a span uncounted, and a JSON-lines file for offline use.

Why spans were dropped ("Queue full") in tight loops: the SDK's batch
processor exports from a thread of its own, and that thread needs the GIL
to encode a batch. Each blocking call of an export (connect, send, receive)
hands the GIL to the busy run, and the export thread gets it back only when
the run is forced to give it up, after the switch interval (5 ms): an export
of 512 spans that takes 15-25 ms alone took 55-120 ms beside a tight loop,
while the loop ended 10-30 spans a millisecond into a 2048-span queue. The
raw SDK in the same loop drops as many or more (it ends spans faster); it is
no Endstate bug but a scheduling one, and the fix belongs where spans are
queued.

`CountedBatchProcessor` wraps the SDK's `BatchSpanProcessor` (a
`SpanProcessor` around it, a `SpanExporter` inside it), so it knows how many
spans are queued without reading the SDK's queue: spans ended minus spans
handed to the exporter minus spans written off. Past half the queue it
yields the GIL (`time.sleep(0)`) as each span ends, so the export thread
keeps up. That never waits for the collector, but a yield is no free call:
on a busy machine the system may give the core away, and with a collector
that is down or never answers (an export in flight for longer than
STALLED_EXPORT_S) the yields bought nothing and made each turn of a tight
loop 2-3 times slower (350 µs instead of 120): then spans are not yielded
for. Once the queue is full spans are dropped, each one counted. It drops a span itself before the SDK
would, so every span lost is counted: queue full, still queued (or ended)
after shutdown, or in a batch the exporter failed (a collector down past the
exporter's own retries). `CountedLogProcessor` does the same for content events (log
records) in the SDK's batch log record processor.

It costs a span about what the SDK's own processor does: one call (`on_end`
is the admission itself), one uncontended lock, under which a span is
admitted and queued (so threads ending spans at once never overfill the
queue between the count and the append: the SDK would then drop its oldest
span itself), and one sampled check, not two (the SDK's `on_end` checks
again; its queue's `emit` is called when it is there).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, cast

from opentelemetry.context import Context
from opentelemetry.sdk._logs import LogRecordProcessor, ReadableLogRecord
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from agent.text import LONE_SURROGATE, without_lone_surrogates
from telemetry.finished import does_nothing_at_start
from telemetry.names import DROP_EXPORT_FAILED, DROP_QUEUE_FULL, DROP_SHUTDOWN, SIGNAL_LOGS, SIGNAL_TRACES
from telemetry.rejected import Rejections

# Exporters that raise, of spans and of content events: held back, and the latest said in the one
# line of `telemetry.setup.Delivery` about that signal
SPAN_LOG = logging.getLogger("endstate.telemetry.export.spans")
EVENT_LOG = logging.getLogger("endstate.telemetry.export.events")
FILE_LOG = logging.getLogger("endstate.telemetry.file")  # the span file's failures, one line a batch


class _Guarded:
    """`shutdown` and `force_flush` of a wrapped exporter (`inner`), whose failures are logged
    (as the `what` exporter's), never raised."""

    inner: Any
    what: str

    @property
    def _log(self) -> logging.Logger:
        return EVENT_LOG if self.what == "event" else SPAN_LOG

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception as exc:
            self._log.warning("%s exporter shutdown raised %s", self.what, _said(exc), exc_info=True)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        try:
            return bool(self.inner.force_flush(timeout_millis))
        except Exception as exc:
            self._log.warning("%s exporter flush raised %s", self.what, _said(exc), exc_info=True)
            return False


class ReasonsHeld(Protocol):
    """Who keeps the reasons an exporter's lines give while it exports for them (`Delivery`)."""

    def held(self, logger: str, order: int, reason: str) -> None: ...


_EXPORTING = threading.local()  # `owner`: whose export runs on this thread now (None: nobody's)


def exporting_for() -> ReasonsHeld | None:
    """Whose export runs on this thread now: an exporter's lines logged meanwhile are its reasons,
    not another telemetry's (one whose close gave up may still be exporting in the same process)."""
    owner: ReasonsHeld | None = getattr(_EXPORTING, "owner", None)
    return owner


class _Owned:
    """`with _Owned(owner):` marks this thread's export as `owner`'s until it ends."""

    def __init__(self, owner: ReasonsHeld | None) -> None:
        self.owner = owner

    def __enter__(self) -> None:
        _EXPORTING.owner = self.owner

    def __exit__(self, *exc: object) -> None:
        _EXPORTING.owner = None


def _said(exc: Exception) -> str:
    """An exception as one line names it: its type, and its message when that can be read."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:
        return type(exc).__name__


class CountingExporter(_Guarded, SpanExporter):
    """Wraps an exporter: every export is counted as an attempt, and a failed or
    raising one as a failure too, never raised. An export the collector answered
    with rejected spans (`rejections`: an OTLP partial success) is a failure too,
    and those spans are given to `on_rejected` (counted as dropped).

    Text UTF-8 cannot hold (a lone surrogate, as in a file name decoded with
    `surrogateescape`) goes out as U+FFFD: in a span's name it fails the whole
    batch, in an attribute the OTLP encoder leaves that attribute out. Spans
    carrying captured content (`mend_first`) are mended before each export;
    others only when an export failed.
    """

    def __init__(
        self,
        inner: SpanExporter,
        on_failure: Callable[[str], None],
        on_attempt: Callable[[str], None] | None = None,
        mend_first: bool = False,
        rejections: Rejections | None = None,
        on_rejected: Callable[[int], None] | None = None,
        owner: ReasonsHeld | None = None,
    ) -> None:
        self.inner, self.what = inner, "span"
        self._on_failure = on_failure
        self._on_attempt = on_attempt
        self._mend_first = mend_first
        self._rejections = rejections  # spans the collector answered it rejected (partial success)
        self._on_rejected = on_rejected
        self._owned = _Owned(owner)  # who keeps the reasons its exporter's lines give

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._owned:
            return self._counted(spans)

    def _counted(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._on_attempt is not None:
            self._on_attempt(SIGNAL_TRACES)
        if self._mend_first:
            spans = _mended(spans) or spans
        result = self._export(spans)
        if result is not SpanExportResult.SUCCESS and not self._mend_first and (mended := _mended(spans)):
            result = self._export(mended)  # a text UTF-8 cannot hold failed the whole batch
        rejected = self._rejections.take(len(spans)) if self._rejections is not None else 0
        if rejected and result is SpanExportResult.SUCCESS and self._on_rejected is not None:
            self._on_rejected(rejected)  # lost, though the export succeeded: dropped, and a failure
        if result is not SpanExportResult.SUCCESS or rejected:
            self._on_failure(SIGNAL_TRACES)
        return result

    def _export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            return self.inner.export(spans)
        except Exception as exc:
            SPAN_LOG.warning("span export raised %s; %d spans dropped", _said(exc), len(spans), exc_info=True)
            return SpanExportResult.FAILURE


class CountingLogExporter(_Guarded, LogRecordExporter):
    """Wraps the content events' exporter as `CountingExporter` wraps the spans': every export
    counted as an attempt of `logs`, a failed or raising one as a failure too, never raised."""

    def __init__(
        self,
        inner: LogRecordExporter,
        on_failure: Callable[[str], None],
        on_attempt: Callable[[str], None],
        rejections: Rejections | None = None,
        on_rejected: Callable[[int], None] | None = None,
        owner: ReasonsHeld | None = None,
    ) -> None:
        self.inner, self.what = inner, "event"
        self._on_failure = on_failure
        self._on_attempt = on_attempt
        self._rejections = rejections  # events the collector answered it rejected (partial success)
        self._on_rejected = on_rejected
        self._owned = _Owned(owner)

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        with self._owned:
            return self._counted(batch)

    def _counted(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        self._on_attempt(SIGNAL_LOGS)
        try:
            result = self.inner.export(batch)
        except Exception as exc:
            EVENT_LOG.warning(
                "event export raised %s; %d events dropped", _said(exc), len(batch), exc_info=True
            )
            result = LogRecordExportResult.FAILURE
        rejected = self._rejections.take(len(batch)) if self._rejections is not None else 0
        if rejected and result is LogRecordExportResult.SUCCESS and self._on_rejected is not None:
            self._on_rejected(rejected)
        if result is not LogRecordExportResult.SUCCESS or rejected:
            self._on_failure(SIGNAL_LOGS)
        return result


def _mended(spans: Sequence[ReadableSpan]) -> list[ReadableSpan] | None:
    """The spans with every lone surrogate in their names and attributes (and their events') as
    U+FFFD; None when no span has one (ASCII text, nearly all of it, is passed over at once)."""
    texts = (text for span in spans for text in _texts(span) if not text.isascii())
    if not any(LONE_SURROGATE.search(text) for text in texts):
        return None
    return [_mend_span(span) for span in spans]


def _texts(span: ReadableSpan) -> Iterator[str]:
    yield span.name
    for attributes in (span.attributes, *(e.attributes for e in span.events)):
        for value in (attributes or {}).values():
            yield from (
                v for v in (value if isinstance(value, tuple | list) else (value,)) if isinstance(v, str)
            )
    yield from (e.name for e in span.events)


def _mend(value: Any) -> Any:
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, tuple | list):
        return tuple(_mend(v) for v in value)
    return value


def _mend_span(span: ReadableSpan) -> ReadableSpan:
    def attributes(given: Any) -> dict[str, Any]:
        return {key: _mend(value) for key, value in (given or {}).items()}

    return ReadableSpan(
        name=_mend(span.name),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes(span.attributes),
        events=[Event(_mend(e.name), attributes(e.attributes), e.timestamp) for e in span.events],
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class FanOutExporter(SpanExporter):
    """Each batch to every exporter `OTEL_TRACES_EXPORTER` lists (`otlp,console`), as the SDK's own
    set-up adds a processor for each: a success when every one took it. One that raises is logged and
    is a failure; the others still get the batch."""

    def __init__(self, exporters: Sequence[SpanExporter]) -> None:
        self.exporters = tuple(exporters)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        results = [self._one(exporter, spans) for exporter in self.exporters]
        ok = all(r is SpanExportResult.SUCCESS for r in results)
        return SpanExportResult.SUCCESS if ok else SpanExportResult.FAILURE

    @staticmethod
    def _one(exporter: SpanExporter, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            return exporter.export(spans)
        except Exception as exc:
            SPAN_LOG.warning(
                "span export to %s raised %s", type(exporter).__name__, _said(exc), exc_info=True
            )
            return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        for exporter in self.exporters:
            exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all([exporter.force_flush(timeout_millis) for exporter in self.exporters])


class JsonLinesExporter(SpanExporter):
    """Appends each span as one JSON line: traces without a collector.

    The file is capped: past `max_bytes` it is rotated to `PATH.1` (the one
    before that is dropped), so a long-running offline process keeps at most
    twice the cap on disk.
    """

    def __init__(self, path: str | Path, max_bytes: int = 10 * 1024 * 1024) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(span.to_json(indent=None) + "\n" for span in spans)
        try:
            with self._lock:
                self._rotate_if_full()
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(lines)
        except OSError as exc:  # held back and said once, with the reason (`telemetry.setup.Delivery`)
            FILE_LOG.warning("cannot append spans to %s: %s", self.path, exc.strerror or exc)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def _rotate_if_full(self) -> None:
        try:
            if self.path.stat().st_size < self.max_bytes:
                return
        except FileNotFoundError:
            return
        self.path.replace(self.path.with_name(self.path.name + ".1"))

    def shutdown(self) -> None:
        return None


OnDropped = Callable[[int, str], None]  # (count, reason)
# An export in flight this long is stalled (a collector down, retried, or never answering: the OTLP
# exporters wait up to 10 s), where one of 512 spans beside a tight loop takes 55-120 ms: yielding for
# it buys nothing. Well above a second: on a loaded machine an export still encoding its batch (which
# needs the GIL the yields give it) can take over one, and spans would then be dropped, not sent.
STALLED_EXPORT_S = 5.0
_EXPORTED = (SpanExportResult.SUCCESS, LogRecordExportResult.SUCCESS)


class _CountedQueue:
    """Admission to a batch processor's queue, with every item lost counted (see the module's docstring).

    `_queued` counts the items admitted and not yet handed to the exporter nor written off.
    """

    batch: BatchSpanProcessor | BatchLogRecordProcessor  # the SDK's processor, exporting from its thread
    _emit: Callable[[Any], None]  # its own way into its queue

    sampled_only: ClassVar[bool] = False  # spans: only sampled ones are queued, as in the SDK's processor

    def __init__(
        self,
        on_dropped: OnDropped,
        max_queue_size: int,
        max_export_batch_size: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._on_dropped = on_dropped
        self._clock = clock
        self._max = max_queue_size
        self._yield_from = max(max_export_batch_size, max_queue_size // 2)
        self._closed = False
        self._start_counts()
        if hasattr(os, "register_at_fork"):  # a forked child's SDK queue starts empty: so do its counts
            os.register_at_fork(after_in_child=_while_alive(weakref.WeakMethod(self._start_counts)))

    def _start_counts(self) -> None:
        """Counts of an empty queue, with nothing in export: at the start, and in a forked child,
        whose copy of the SDK's queue the SDK empties (the parent sends those items, and its export in
        flight is the parent's) and whose copy of the lock may be held by a thread it does not have."""
        self._lock = threading.Lock()  # for every count below, and each item's admission with it
        # Admitted items not yet handed: never fewer than the SDK's queue holds (an item popped is
        # counted as handed just after), so an item admitted here never makes the SDK drop one.
        self._queued = 0
        self._sending = 0  # handed to the exporter, whose export has not returned yet
        self._sending_since: float | None = None  # when the export in flight began
        self._full = 0  # items dropped because the queue was full, in this process

    def _offer(self, item: Any) -> None:
        if self.sampled_only and not item.context.trace_flags.sampled:
            return
        if self._queued >= self._yield_from and not self._stalled():  # hints, read unlocked
            _give_way()
        with self._lock:
            if self._queued < self._max and not self._closed:
                self._queued += 1
                self._emit(item)
                return
            closed = self._closed
            self._full += not closed
        self._on_dropped(1, DROP_SHUTDOWN if closed else DROP_QUEUE_FULL)

    def shutdown(self) -> None:
        self._closed = True  # every item offered from now on is dropped, and counted
        self.batch.shutdown()
        self.count_unsent()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.batch.force_flush(timeout_millis)

    def count_unsent(self) -> int:
        """Count as dropped every item still queued (shutdown ended or gave up); how many that was."""
        with self._lock:
            lost, self._queued = self._queued, min(0, self._queued)
        if lost > 0:
            self._on_dropped(lost, DROP_SHUTDOWN)
        return max(0, lost)

    def count_full(self) -> int:
        """How many items were dropped because the queue was full (said at the close)."""
        with self._lock:
            return self._full

    def count_sending(self) -> int:
        """How many items are in an export that has not returned (counted once it does)."""
        with self._lock:
            return self._sending

    def _stalled(self) -> bool:
        since = self._sending_since
        return since is not None and self._clock() - since > STALLED_EXPORT_S

    def _count_handed(self, count: int) -> None:
        with self._lock:
            self._queued -= count
            self._sending += count
            self._sending_since = self._clock()

    def _count_returned(self, count: int) -> None:
        with self._lock:
            self._sending -= count
            if not self._sending:
                self._sending_since = None

    def _count_failed(self, count: int) -> None:
        self._on_dropped(count, DROP_EXPORT_FAILED)  # handed, so no longer queued: the counts hold


def _while_alive(method: weakref.WeakMethod[Callable[[], None]]) -> Callable[[], None]:
    """Calls `method` while its object lives (a fork hook must not keep a processor alive)."""

    def call() -> None:
        if (bound := method()) is not None:
            bound()

    return call


def _give_way() -> None:
    """Let the export thread take the GIL (it needs it to encode a batch)."""
    time.sleep(0)


class CountedBatchProcessor(_CountedQueue, SpanProcessor):
    """The SDK's batch span processor, with no span lost uncounted (see the module's docstring)."""

    def __init__(
        self,
        exporter: SpanExporter,
        on_dropped: OnDropped,
        max_queue_size: int,
        max_export_batch_size: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(on_dropped, max_queue_size, max_export_batch_size, clock)
        self.batch = BatchSpanProcessor(
            cast(
                SpanExporter, _Handing(exporter, self._count_handed, self._count_failed, self._count_returned)
            ),
            max_queue_size=max_queue_size,
            max_export_batch_size=max_export_batch_size,
        )
        self._emit = _queue_of(self.batch)

    sampled_only = True
    # the SDK calls it as each span ends: one call, no wrapper (its `span` is `_offer`'s `item`)
    on_end = _CountedQueue._offer  # type: ignore[assignment]

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None


does_nothing_at_start(CountedBatchProcessor)  # so spans made whole skip its `on_start` (telemetry.finished)


class CountedLogProcessor(_CountedQueue, LogRecordProcessor):
    """The SDK's batch log record processor (content events), with no event lost uncounted."""

    def __init__(
        self,
        exporter: LogRecordExporter,
        on_dropped: OnDropped,
        max_queue_size: int,
        max_export_batch_size: int,
    ) -> None:
        super().__init__(on_dropped, max_queue_size, max_export_batch_size)
        self.batch = BatchLogRecordProcessor(
            cast(
                LogRecordExporter,
                _Handing(exporter, self._count_handed, self._count_failed, self._count_returned),
            ),
            max_queue_size=max_queue_size,
            max_export_batch_size=max_export_batch_size,
        )
        self._emit = self.batch.on_emit

    on_emit = _CountedQueue._offer  # type: ignore[assignment]  # as `on_end`


def _queue_of(batch: BatchSpanProcessor) -> Callable[[ReadableSpan], None]:
    """Where a sampled span goes: the SDK's queue (`emit`), or its `on_end` if a later SDK moved it.

    `on_end` would check again that the span is sampled, which `CountedBatchProcessor` has done.
    """
    queue = getattr(batch, "_batch_processor", None)
    emit = getattr(queue, "emit", None)
    return emit if callable(emit) else batch.on_end


class _Handing:
    """Tells the processor how many items (spans or events) each export takes off its queue, exports
    them, says when the export returned, and how many an export that did not succeed lost."""

    def __init__(
        self,
        inner: SpanExporter | LogRecordExporter,
        on_handed: Callable[[int], None],
        on_failed: Callable[[int], None],
        on_returned: Callable[[int], None],
    ) -> None:
        self.inner = inner
        self._on_handed = on_handed
        self._on_failed = on_failed
        self._on_returned = on_returned

    def export(self, items: Sequence[Any]) -> Any:
        self._on_handed(len(items))
        result: Any = None
        try:
            result = self.inner.export(items)
        finally:
            self._on_returned(len(items))
            if result not in _EXPORTED:
                self._on_failed(len(items))
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
