"""Spans dropped with the export queue full are said in the close's one line, not only counted.

A command that runs an agent and exits (`endstate demo`, `start`, `answer`) serves its /metrics only
with `--metrics-port`, and the counts die with the process: with a collector slower than the spans
came (here `OTEL_BSP_MAX_QUEUE_SIZE=8`), `endstate demo` delivered 44 of its 265 spans and said
nothing at all. The close's one line now says how many the full queue dropped, and where they are
counted; nothing is said when none was.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from prometheus_client import CollectorRegistry
from test_telemetry_delivery import looking

from telemetry import Telemetry
from telemetry import names as n


class HeldFirst(SpanExporter):
    """Holds its first export until `release` is set (a slow collector, without a clock); takes all."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.sent = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        assert self.release.wait(120), "never released"
        self.sent += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


@pytest.fixture
def small_queue(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith(("OTEL_", "ENDSTATE_TRACES")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
    yield


def close_lines(telemetry: Telemetry, caplog: pytest.LogCaptureFixture) -> list[str]:
    with caplog.at_level(logging.WARNING, logger="endstate.telemetry"):
        assert telemetry.shutdown(timeout_s=60)
    return [r.getMessage() for r in caplog.records if r.name == "endstate.telemetry"]


def test_spans_the_full_queue_dropped_are_said_at_the_close(
    small_queue: None, caplog: pytest.LogCaptureFixture
) -> None:
    exporter = HeldFirst()
    telemetry = Telemetry.from_env({**os.environ}, registry=CollectorRegistry(), span_exporter=exporter)
    agent = looking("crowded", 20, telemetry)
    spans = telemetry.spans
    assert spans is not None
    done = threading.Event()
    threading.Thread(target=lambda: (agent.run("look"), done.set()), daemon=True).start()
    assert exporter.entered.wait(120)  # the first batch is out, and held: the queue fills behind it
    assert done.wait(120)
    exporter.release.set()
    full = telemetry.registry.get_sample_value(
        f"{n.METRIC_TELEMETRY_SPANS_DROPPED}_total", {"reason": n.DROP_QUEUE_FULL}
    )
    assert full is not None and full > 0
    lines = close_lines(telemetry, caplog)
    assert exporter.sent + full == 3 * 20 + 1  # every span sent or dropped with the queue full
    assert len(lines) == 1, lines
    assert f"{full:.0f} spans dropped" in lines[0] and "queue full" in lines[0]
    assert f"{n.METRIC_TELEMETRY_SPANS_DROPPED}_total" in lines[0] and "failures" not in lines[0]
    assert "OTEL_BSP_MAX_QUEUE_SIZE" in lines[0]  # what holds more


def test_nothing_is_said_when_no_span_was_dropped(
    small_queue: None, caplog: pytest.LogCaptureFixture
) -> None:
    exporter = HeldFirst()
    exporter.release.set()
    telemetry = Telemetry.from_env({**os.environ}, registry=CollectorRegistry(), span_exporter=exporter)
    looking("roomy", 1, telemetry).run("look")
    assert close_lines(telemetry, caplog) == []
    assert exporter.sent == 3 + 1  # its turn, the call and the tool in it, and the run
