"""The one line about undelivered telemetry gives its own exporter's reason, never another telemetry's.

The OTLP exporters' failure lines are held back and the latest reason goes in that line. The reason
was taken from any exporter of the process that logged after this telemetry was set up: an earlier
telemetry whose close gave up (its exporter still retrying a collector that went away) put its
reason in the next one's line (CI, `test_telemetry47_hostile`). And the lines were held in a dict
that exporter threads wrote while a new telemetry read it: "dictionary changed size during
iteration" out of `Telemetry.from_env`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from prometheus_client import CollectorRegistry

from agent import Agent
from agent.models import ScriptedModel, finish
from telemetry import Telemetry
from telemetry import setup as telemetry_setup

OTLP_LOG = logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter")


class SaysWhy(SpanExporter):
    """Fails each export, saying why in the OTLP exporter's log as that exporter does."""

    def __init__(self, why: str) -> None:
        self.why = why

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        OTLP_LOG.warning("Failed to export span batch: %s", self.why)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        pass


class Quiet(SpanExporter):
    """Fails each export and says nothing."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        pass


def run_on(telemetry: Telemetry) -> None:
    Agent("a", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks).run("go")
    assert telemetry.spans is not None
    telemetry.spans.force_flush(30_000)


def test_a_reason_another_telemetrys_export_gave_is_not_this_ones(caplog: pytest.LogCaptureFixture) -> None:
    saying = SaysWhy("the first's collector")
    first = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=saying)
    second = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=Quiet())
    try:
        with caplog.at_level(logging.WARNING, logger="endstate.telemetry"):
            run_on(first)  # after the second was set up: its line came after the second's start
            run_on(second)
    finally:
        first.shutdown(5)
        second.shutdown(5)
    lines = [r.getMessage() for r in caplog.records if "could not be delivered" in r.getMessage()]
    (firsts,) = [line for line in lines if "SaysWhy" in line]
    (seconds,) = [line for line in lines if "Quiet" in line]
    assert "the first's collector" in firsts
    assert "the first's collector" not in seconds and "no reason given" in seconds


def test_its_own_exporters_reason_is_still_given(caplog: pytest.LogCaptureFixture) -> None:
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=SaysWhy("refused: 503"))
    try:
        with caplog.at_level(logging.WARNING, logger="endstate.telemetry"):
            run_on(telemetry)
    finally:
        telemetry.shutdown(5)
    (line,) = [r.getMessage() for r in caplog.records if "could not be delivered" in r.getMessage()]
    assert "export failed (Failed to export span batch: refused: 503)" in line


def test_lines_held_back_on_other_threads_while_a_telemetry_starts_never_break_its_start() -> None:
    held = telemetry_setup._HOLD_BACK
    stop = threading.Event()

    def log_lines() -> None:  # exporters' lines of ever new loggers, as threads of other exports
        for count in range(50_000):
            if stop.is_set():
                return
            held.filter(logging.LogRecord(f"test48.{count}", logging.WARNING, "", 0, "down", None, None))

    logger = threading.Thread(target=log_lines, daemon=True)
    logger.start()
    try:
        for _ in range(20_000):
            held.seen()  # was: RuntimeError, dictionary changed size during iteration
    finally:
        stop.set()
        logger.join(30)
        with held._lock:  # the made-up loggers' lines are no exporter's: let them go
            for name in [name for name in held._latest if name.startswith("test48.")]:
                del held._latest[name]
