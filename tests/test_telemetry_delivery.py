"""No span lost uncounted, and a close bounded at 2 s that says once when telemetry was not delivered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence

import pytest
from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from otlp_receiver import OtlpReceiver, closed_port
from prometheus_client import CollectorRegistry
from test_runner_agents import env_with_tests

from agent import Agent, Budget, ProgressDetector, tool
from agent.models import ModelReply, ModelRequest
from telemetry import Telemetry
from telemetry import names as n
from telemetry.export import CountedBatchProcessor


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in list(os.environ):
        if name.startswith(("OTEL_", "ENDSTATE_TRACES")):
            monkeypatch.delenv(name)
    yield monkeypatch


class Looker:
    """A model that calls `look` every turn, as fast as it can."""

    name = "fast"
    provider = "anthropic"

    def __init__(self) -> None:
        self.turn = 0

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.turn += 1
        block = {
            "type": "tool_use",
            "id": f"t{self.turn}",
            "name": "look",
            "input": {"path": f"p{self.turn}"},
        }
        return ModelReply([block], 10, 4, "tool_use", self.name, "msg")


@tool
async def look(path: str) -> str:
    """Read a file."""
    return path


def looking(name: str, turns: int, telemetry: Telemetry) -> Agent:
    """An agent that calls `look` every turn for `turns` turns, never idle, with `telemetry`'s hooks."""
    return Agent(
        name,
        Looker(),
        tools=[look],
        budget=Budget(max_turns=turns, max_seconds=None),
        progress=lambda: ProgressDetector(max_idle_turns=None),
        hooks=telemetry.hooks,
    )


DROP_REASONS = (n.DROP_QUEUE_FULL, n.DROP_SHUTDOWN, n.DROP_EXPORT_FAILED)


def dropped(telemetry: Telemetry, reason: str) -> float:
    value = telemetry.registry.get_sample_value("agent_telemetry_spans_dropped_total", {"reason": reason})
    assert value is not None
    return value


# A 10,000-turn tight loop in a process of its own, as an agent's process exporting to a collector in
# another: the pytest worker it ran in before held what 1,000 earlier tests left (threads, a large heap,
# the receiver itself), and lost 40-60 turn spans there in 2 of 3 CI runs, never alone or under CPU load.
TIGHT_LOOP_SCRIPT = """
import json, sys
from prometheus_client import CollectorRegistry
from telemetry import Telemetry
from test_telemetry_delivery import DROP_REASONS, dropped, looking
telemetry = Telemetry.from_env(registry=CollectorRegistry())
result = looking("tight", int(sys.argv[1]), telemetry).run("look at everything")
closed = telemetry.shutdown(timeout_s=60)
lost = {reason: dropped(telemetry, reason) for reason in DROP_REASONS}
print(json.dumps({"turns": result.turns, "closed": closed, "lost": lost}))
"""


@pytest.mark.slow
def test_a_10000_turn_tight_loop_loses_no_span_at_the_default_settings() -> None:
    turns = 10_000
    env = {k: v for k, v in env_with_tests().items() if not k.startswith(("OTEL_", "ENDSTATE_TRACES"))}
    with OtlpReceiver() as receiver:
        done = subprocess.run(
            [sys.executable, "-c", TIGHT_LOOP_SCRIPT, str(turns)],
            env={**env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint},
            capture_output=True,
            text=True,
            timeout=600,
        )
        received = receiver.spans()
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    kinds = Counter(span.name for _, span in received)
    expected = {
        n.SPAN_TURN: turns,
        "execute_tool look": turns,
        "chat fast": turns,
        f"{n.SPAN_INVOKE_AGENT} tight": 1,
    }
    zero = dict.fromkeys(DROP_REASONS, 0.0)
    assert (said["turns"], said["closed"]) == (turns, True), done.stderr
    assert (dict(kinds), said["lost"]) == (expected, zero)  # not one lost, nor counted lost


def test_every_span_lost_is_counted_when_the_collector_never_answers(clean_env: pytest.MonkeyPatch) -> None:
    with OtlpReceiver(mode="hang") as hanging:
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hanging.endpoint)
        clean_env.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8")
        clean_env.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
        telemetry = Telemetry.from_env(registry=CollectorRegistry())
        agent = looking("stuck", 50, telemetry)
        assert agent.run("look").turns == 50
        assert not telemetry.shutdown(timeout_s=0.5)  # the export in flight never ends
        ended = 3 * 50 + 1
        handed = telemetry.registry.get_sample_value("agent_telemetry_exports_total", {"signal": "traces"})
    full, at_close = dropped(telemetry, n.DROP_QUEUE_FULL), dropped(telemetry, n.DROP_SHUTDOWN)
    assert full > 0 and at_close > 0
    assert handed is not None and full + at_close == ended - 4 * handed  # every span: sent, or counted


def test_every_span_of_a_failed_export_is_counted_when_the_collector_is_down(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    clean_env.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
    telemetry = Telemetry.from_env(registry=CollectorRegistry())
    agent = looking("unheard", 30, telemetry)
    assert agent.run("look").turns == 30
    telemetry.shutdown(timeout_s=1)
    ended, reasons = 3 * 30 + 1, (n.DROP_QUEUE_FULL, n.DROP_SHUTDOWN, n.DROP_EXPORT_FAILED)
    deadline = time.monotonic() + 60  # an export given up at the close still ends, and counts its spans
    while sum(dropped(telemetry, r) for r in reasons) < ended and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sum(dropped(telemetry, r) for r in reasons) == ended  # none sent, every one counted once
    assert dropped(telemetry, n.DROP_EXPORT_FAILED) > 0


CLOSE_SCRIPT = """
import time
from agent import Agent
from agent.models import ScriptedModel, finish
from telemetry import Telemetry
telemetry = Telemetry.from_env()
for i in range(3):
    Agent("exiter", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks).run("go")
started = time.monotonic()
telemetry.shutdown()
print(f"{time.monotonic() - started:.3f}", flush=True)
"""


# Far past the close's own bound (CLOSE_TIMEOUT_S) for a loaded machine, far below the minute a close
# that waited for the export (its timeout 120 s: retried, or never answered) would take.
CLOSE_BOUND_S = 15.0


@pytest.mark.slow
@pytest.mark.parametrize("collector", ["refuses", "never_answers"])
def test_closing_with_a_dead_collector_is_bounded_and_says_so_once(collector: str) -> None:
    with OtlpReceiver(mode="hang") as hanging:
        endpoint = hanging.endpoint if collector == "never_answers" else f"http://127.0.0.1:{closed_port()}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(CLOSE_SCRIPT)],
            env={**env, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "120"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.strip()) <= CLOSE_BOUND_S  # flush and shutdown together
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # one line, no tracebacks, no per-batch retries
    assert "telemetry could not be delivered to " + endpoint in lines[0]


class HeldExporter(SpanExporter):
    """Holds every export until released, then takes it: a collector that stalls for a while."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.sent = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.released.wait(10)
        self.sent += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.released.set()


def test_spans_ended_by_many_threads_at_once_are_each_sent_or_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    exporter, dropped, counting = HeldExporter(), Counter[str](), threading.Lock()

    def count(count: int, why: str) -> None:  # as thread-safe as the Prometheus counter it stands for
        with counting:
            dropped[why] += count

    processor = CountedBatchProcessor(exporter, count, 64, 8)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("many")
    threads, each = 8, 400

    def end_spans() -> None:
        for _ in range(each):
            tracer.start_span("s").end()

    workers = [threading.Thread(target=end_spans, name=f"span-ender-{i}") for i in range(threads)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch between any two steps: an unlocked count-then-append races
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(switch)
    exporter.released.set()
    provider.shutdown()
    assert dropped[n.DROP_QUEUE_FULL] > 0  # the queue did fill while the export stalled
    assert exporter.sent + dropped[n.DROP_QUEUE_FULL] + dropped[n.DROP_SHUTDOWN] == threads * each
    uncounted = [
        r for r in caplog.records if "Queue full" in r.getMessage() and r.threadName.startswith("span-ender")
    ]
    assert uncounted == []  # the SDK never dropped one of these itself (another test's leftover may)
    tracer.start_span("late").end()
    assert dropped[n.DROP_SHUTDOWN] == 1  # a span ended after shutdown is counted too


def test_content_events_that_cannot_be_delivered_are_counted_and_said(
    clean_env: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """EVENT_ONLY sends content events as OTLP logs: a collector without a logs pipeline (here
    nothing listens at the logs endpoint) lost every event unsaid, its exporter's warnings held back."""
    from agent.models import ScriptedModel, finish

    with OtlpReceiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": f"http://127.0.0.1:{closed_port()}/v1/logs",
            "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT": "1",
            n.ENV_CAPTURE_CONTENT: "EVENT_ONLY",
            n.ENV_SEMCONV_STABILITY_OPT_IN: n.OPT_IN_GEN_AI_LATEST,
        }
        for name, value in env.items():
            clean_env.setenv(name, value)
        telemetry = Telemetry.from_env(registry=CollectorRegistry())
        Agent("eventful", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks).run("go")
        assert telemetry.shutdown(timeout_s=10)
    assert receiver.spans()  # the spans went through
    sample = telemetry.registry.get_sample_value
    assert sample("agent_telemetry_exports_total", {"signal": n.SIGNAL_LOGS}) == 1
    assert sample("agent_telemetry_export_failures_total", {"signal": n.SIGNAL_LOGS}) == 1
    said = [r.getMessage() for r in caplog.records if "could not be delivered" in r.getMessage()]
    assert len(said) == 1 and "/v1/logs" in said[0]


class EventCounter(LogRecordProcessor):
    """Counts the content events a logger provider emits."""

    def __init__(self) -> None:
        self.emitted = 0

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        self.emitted += 1

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def test_every_content_event_lost_is_counted_when_the_collector_never_answers(
    clean_env: pytest.MonkeyPatch,
) -> None:
    """The SDK's log batch queue dropped events when full with one log line and no count."""
    with OtlpReceiver(mode="hang") as hanging:
        for name, value in {
            "OTEL_EXPORTER_OTLP_ENDPOINT": hanging.endpoint,
            "OTEL_BLRP_MAX_QUEUE_SIZE": "8",
            "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE": "4",
            n.ENV_CAPTURE_CONTENT: "EVENT_ONLY",
            n.ENV_SEMCONV_STABILITY_OPT_IN: n.OPT_IN_GEN_AI_LATEST,
        }.items():
            clean_env.setenv(name, value)
        telemetry = Telemetry.from_env(registry=CollectorRegistry())
        assert telemetry.logger_provider is not None
        counter = EventCounter()
        telemetry.logger_provider.add_log_record_processor(counter)
        agent = looking("chatty", 30, telemetry)
        assert agent.run("look").turns == 30
        assert not telemetry.shutdown(timeout_s=0.5)  # the export in flight never ends
        batches = telemetry.registry.get_sample_value("agent_telemetry_exports_total", {"signal": "logs"})

    def lost(reason: str) -> float:
        value = telemetry.registry.get_sample_value(
            "agent_telemetry_events_dropped_total", {"reason": reason}
        )
        assert value is not None
        return value

    full, at_close = lost(n.DROP_QUEUE_FULL), lost(n.DROP_SHUTDOWN)
    assert counter.emitted >= 30 and full > 0 and at_close > 0
    assert batches is not None and full + at_close == counter.emitted - 4 * batches  # sent, or counted
