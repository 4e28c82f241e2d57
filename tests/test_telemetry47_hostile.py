"""Telemetry under hostile data, configuration and collectors (the telemetry47 review)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_receiver import OtlpReceiver, closed_port
from prometheus_client import CollectorRegistry
from test_telemetry_delivery import CLOSE_BOUND_S, CLOSE_SCRIPT

from agent import Agent, Budget, ProgressDetector, StopReason, tool
from agent.errors import ConfigError
from agent.models import ScriptedModel, call, finish
from telemetry import Redactor, Telemetry, TracingHooks, export
from telemetry import names as n
from telemetry.export import CountedBatchProcessor
from telemetry.redact import READ_PAST_CUT, REDACTED

KEY = "sk-ant-api03-PLANTEDsecretKEY0123456789"
HUGE = 2_000_000


class CountingRedactor(Redactor):
    """A redactor that notes the length of every text it reads."""

    def redact(self, text: str) -> str:
        READ.append(len(text))
        return super().redact(text)


READ: list[int] = []


def counting() -> CountingRedactor:
    """A counting redactor of its own: what another one read before is no text this one has seen."""
    return CountingRedactor(secrets=(uuid.uuid4().hex,))


@tool
def fetch(page: str) -> str:
    """Fetch a page."""
    return f"page {page}: " + "r" * 20_000


def never_idle() -> ProgressDetector:
    return ProgressDetector(max_idle_turns=None)


def chars_read_a_turn(turns: int) -> float:
    """The characters content capture reads a turn (to redact them) in a run of `turns` fetches."""
    READ.clear()
    hooks = TracingHooks(TracerProvider(), capture_content=True, redact=counting())
    steps = [[call("fetch", page=str(i))] for i in range(turns)] + [[finish("done", "ok")]]
    budget = Budget(max_turns=turns + 1, max_seconds=None)
    agent = Agent(
        "reader", ScriptedModel(steps), tools=[fetch], hooks=hooks, budget=budget, progress=never_idle
    )
    assert agent.run("read").reason is StopReason.SUCCESS
    return sum(READ) / turns


def test_what_a_turn_reads_to_capture_content_does_not_grow_with_the_history() -> None:
    """Each model call's span converted and redacted the whole history again: with 20 kB results,
    0.15 s a turn at 25 turns, 0.5 s at 100."""
    assert chars_read_a_turn(60) <= 1.5 * chars_read_a_turn(20)


@tool
def dump(path: str) -> str:
    """Dump a file."""
    return f"key {KEY} " + "x" * HUGE + KEY


def test_a_huge_tool_argument_and_result_are_read_only_as_far_as_their_spans_keep_them() -> None:
    """Content capture read every character of a tool's result and arguments to redact it (and the
    history's, at each model call), though a span keeps 4,000: a 5 MB result held the run 5 s a span."""
    READ.clear()
    spans, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    hooks = TracingHooks(provider, capture_content=True, redact=counting())
    steps = [[call("dump", path="p" * HUGE)], [finish("done", "ok")]]
    agent = Agent("dumper", ScriptedModel(steps), tools=[dump], hooks=hooks)
    assert agent.run("dump").reason is StopReason.SUCCESS
    kept = [str(v) for s in spans.get_finished_spans() for v in (s.attributes or {}).values()]
    (result,) = [s for s in spans.get_finished_spans() if s.name == f"{n.SPAN_EXECUTE_TOOL} dump"]
    assert str((result.attributes or {})[n.GEN_AI_TOOL_CALL_RESULT]).startswith(f"key {REDACTED} xxx")
    assert not any(KEY in text for text in kept)
    assert max(READ) <= Redactor().max_chars + READ_PAST_CUT


@pytest.fixture
def bare_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No OTEL_* variable in the process environment, where the SDK reads them, but those a test sets."""
    for name in list(os.environ):
        if name.startswith(("OTEL_", "ENDSTATE_TRACES")):
            monkeypatch.delenv(name)
    yield monkeypatch


HTTP = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
GRPC = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}


@pytest.mark.parametrize(
    ("env", "says"),
    [
        # read as false by the SDK, without a word: spans went out, TLS was spoken to a plain collector
        (HTTP | {"OTEL_SDK_DISABLED": "1"}, r"OTEL_SDK_DISABLED='1' must be true or false"),
        (HTTP | {"OTEL_SDK_DISABLED": "yes"}, r"OTEL_SDK_DISABLED='yes' must be true or false"),
        (GRPC | {"OTEL_EXPORTER_OTLP_INSECURE": "yes"}, r"OTEL_EXPORTER_OTLP_INSECURE='yes' must be"),
        (GRPC | {"OTEL_EXPORTER_OTLP_TRACES_INSECURE": "1"}, r"OTEL_EXPORTER_OTLP_TRACES_INSECURE='1' must"),
        # tracebacks as the exporter was made
        (
            GRPC | {"OTEL_PYTHON_EXPORTER_OTLP_GRPC_RETRYABLE_ERROR_CODES": "UNAVAILABLE,NOPE"},
            r"OTEL_PYTHON_EXPORTER_OTLP_GRPC_RETRYABLE_ERROR_CODES=.*'NOPE' is not a gRPC status code",
        ),
        (
            HTTP | {"OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER": "nosuch"},
            r"OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER='nosuch' names no installed credential",
        ),
        (
            GRPC
            | {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://127.0.0.1:4317"}
            | {"OTEL_PYTHON_EXPORTER_OTLP_GRPC_TRACES_CREDENTIAL_PROVIDER": "nosuch"},
            r"OTEL_PYTHON_EXPORTER_OTLP_GRPC_TRACES_CREDENTIAL_PROVIDER='nosuch' names no installed",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://[::1"},
            r"OTEL_EXPORTER_OTLP_ENDPOINT='http://\[::1' must be a URL",
        ),
        # every export failed, said only once the first batch went
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:99999"},
            r"OTEL_EXPORTER_OTLP_ENDPOINT=.* must be",
        ),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:otlp"}, r"_TRACES_ENDPOINT=.* must be"),
        (
            GRPC | {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:0"},
            r"OTEL_EXPORTER_OTLP_ENDPOINT=.* must be",
        ),
    ],
)
def test_a_setting_the_sdk_would_ignore_or_trip_on_is_refused_naming_it(
    env: dict[str, str], says: str, bare_env: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        bare_env.setenv(name, value)
    with pytest.raises(ConfigError, match=says):
        Telemetry.from_env(registry=CollectorRegistry())


def test_the_sdk_can_still_be_disabled_or_enabled_by_name(bare_env: pytest.MonkeyPatch) -> None:
    for value in ("TRUE", "false", ""):
        bare_env.setenv("OTEL_SDK_DISABLED", value)
        Telemetry.from_env(
            {**os.environ, n.ENV_TRACES_FILE: os.devnull}, registry=CollectorRegistry()
        ).shutdown()


def test_the_close_line_counts_the_spans_of_an_export_that_never_ended(
    bare_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """With a collector that takes a request and never answers, the one line said "0 spans never
    sent" though not one span was delivered: those of the export in flight went uncounted in it."""
    with OtlpReceiver(mode="hang") as hanging:
        bare_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hanging.endpoint)
        bare_env.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
        telemetry = Telemetry.from_env(registry=CollectorRegistry())
        agent = Agent("unheard", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks)
        assert agent.run("go").reason is StopReason.SUCCESS  # three spans: the run, its turn, its call
        assert hanging.arrived.wait(60)
        with caplog.at_level(logging.WARNING, logger="endstate.telemetry"):
            assert not telemetry.shutdown(timeout_s=0.5)
    (line,) = [r.getMessage() for r in caplog.records if "could not be delivered" in r.getMessage()]
    said = re.search(r"(\d+) spans never sent, (\d+) more in an export that had not ended", line)
    assert said is not None, line
    assert int(said[1]) + int(said[2]) == 3


class RaisingExporter(SpanExporter):
    """An exporter that raises, as the gRPC one did on a collector's corrupt RetryInfo trailer."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise ValueError("Wire format was corrupt")

    def shutdown(self) -> None:
        raise ValueError("Wire format was corrupt")


def test_an_exporter_that_raises_is_said_in_the_one_line_with_its_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each raise was a warning line of its own (with a traceback in a library's log), then the one
    line said the export failed with "no reason given"."""
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=RaisingExporter())
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            Agent("raiser", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks).run("go")
            telemetry.force_flush(30)
        telemetry.shutdown(30)
    said = [r.getMessage() for r in caplog.records if r.name.startswith("endstate")]
    assert len(said) == 1, said
    assert "could not be delivered" in said[0] and "ValueError: Wire format was corrupt" in said[0]


@pytest.mark.parametrize(
    ("under", "says"), [("", "is a directory"), ("missing/traces.jsonl", "does not exist")]
)
def test_a_span_file_spans_cannot_be_written_to_is_refused_at_the_start(
    under: str, says: str, tmp_path: Path, bare_env: pytest.MonkeyPatch
) -> None:
    """Such a file was found only at the first export: each span then lost, said once as a warning."""
    path = str(tmp_path / under)
    with pytest.raises(ConfigError, match=f"{n.ENV_TRACES_FILE}=.* {says}"):
        Telemetry.from_env({n.ENV_TRACES_FILE: path}, registry=CollectorRegistry())


class HangingExporter(SpanExporter):
    """An exporter whose exports wait until released: a collector that never answers."""

    def __init__(self) -> None:
        self.released = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.released.wait(60)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.released.set()


class RaisingEventExporter(LogRecordExporter):
    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        raise ConnectionError("events endpoint refused")

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def test_the_line_about_spans_gives_no_reason_of_the_content_events_exporter(
    bare_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Every exporter's reason went to one place: spans lost to a collector that never answered were
    said lost because "Failed to export logs batch", the events endpoint's failure."""
    bare_env.setenv(n.ENV_CAPTURE_CONTENT, "EVENT_ONLY")
    bare_env.setenv(n.ENV_SEMCONV_STABILITY_OPT_IN, n.OPT_IN_GEN_AI_LATEST)
    spans = HangingExporter()
    telemetry = Telemetry.from_env(
        registry=CollectorRegistry(), span_exporter=spans, log_exporter=RaisingEventExporter()
    )
    assert telemetry.logger_provider is not None
    try:
        with caplog.at_level(logging.WARNING):
            Agent("both", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks).run("go")
            telemetry.logger_provider.force_flush(30_000)  # the events' export fails, and is said
            assert not telemetry.shutdown(timeout_s=0.5)  # the spans' never ends
    finally:
        spans.released.set()
    lines = [r.getMessage() for r in caplog.records if "could not be delivered" in r.getMessage()]
    (events,) = [line for line in lines if "RaisingEventExporter" in line]
    (about_spans,) = [line for line in lines if "HangingExporter" in line]
    assert "events endpoint refused" in events
    assert "events endpoint refused" not in about_spans and "no answer within 0.5 s" in about_spans


@pytest.mark.parametrize(
    "endpoint", ["ftp://collector/v1/logs", "collector:4318", "http://127.0.0.1:99999/v1/logs"]
)
def test_a_content_events_endpoint_that_is_no_url_is_refused_at_the_start(
    endpoint: str, bare_env: pytest.MonkeyPatch
) -> None:
    """Only the spans' endpoint was checked: the events' failed at every export, found at the first."""
    for name, value in {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": endpoint,
        n.ENV_CAPTURE_CONTENT: "EVENT_ONLY",
        n.ENV_SEMCONV_STABILITY_OPT_IN: n.OPT_IN_GEN_AI_LATEST,
    }.items():
        bare_env.setenv(name, value)
    with pytest.raises(ConfigError, match=r"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=.* must be a URL"):
        Telemetry.from_env(registry=CollectorRegistry())


class Blackhole:
    """A loopback TCP server that accepts connections and never answers (nor reads past its buffer)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.getsockname()[1])

    def _accept(self) -> None:
        with contextlib.suppress(OSError):  # closed
            while True:
                self.accepted.append(self.server.accept()[0])

    def __enter__(self) -> Blackhole:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone does not)
        self.server.close()
        for conn in self.accepted:
            conn.close()
        self._thread.join(10)


@pytest.mark.slow
@pytest.mark.parametrize("collector", ["refuses", "never_answers"])
def test_closing_with_a_dead_grpc_collector_is_bounded_and_said_in_one_line(collector: str) -> None:
    """As over OTLP/HTTP (test_telemetry_delivery): the gRPC exporter's own close waits for an
    export in flight, retried up to its timeout."""
    with Blackhole() as hole:
        port = hole.port if collector == "never_answers" else closed_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ENDSTATE_TRACES"))}
        env |= {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "120",
        }
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(CLOSE_SCRIPT)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip()) <= CLOSE_BOUND_S
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "telemetry could not be delivered to " in lines[0], done.stderr


class StuckExporter(SpanExporter):
    """An exporter whose export hangs until released: a collector that takes a request, never answering."""

    def __init__(self) -> None:
        self.entered, self.released = threading.Event(), threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.released.wait(60)
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self.released.set()


def test_spans_ended_beside_a_stalled_export_do_not_yield_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past half the queue each span's end yields the GIL to the export thread. Beside an export that
    hangs (a collector down or silent) that buys nothing, and cost a tight loop's turn 350 µs, not 120."""
    yields: list[int] = []
    monkeypatch.setattr(export, "_give_way", lambda: yields.append(1))
    now = [0.0]
    exporter, dropped = StuckExporter(), Counter[str]()
    processor = CountedBatchProcessor(
        exporter, lambda count, why: dropped.update({why: count}), 8, 4, clock=lambda: now[0]
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("stalled")
    try:
        for _ in range(4):  # a batch: the export thread takes it at once, and hangs
            tracer.start_span("first").end()
        assert exporter.entered.wait(60)
        now[0] += 60  # a minute later
        for _ in range(50):
            tracer.start_span("beside").end()
    finally:
        exporter.released.set()
        provider.shutdown()
    assert dropped[n.DROP_QUEUE_FULL] > 0  # the queue did fill
    assert yields == []
