"""Setup from the OTEL_* variables, and export that never blocks or breaks a run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from load_bounds import FLUSH_S
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import NoOpTracerProvider
from otlp_receiver import OtlpReceiver, attributes, closed_port
from prometheus_client import CollectorRegistry

from agent import Agent, RunResult, StopReason, tool
from agent.errors import ConfigError
from agent.models import ScriptedModel, call, finish
from telemetry import Telemetry
from telemetry import names as n
from telemetry.export import CountedBatchProcessor, JsonLinesExporter
from telemetry.setup import resource_from_env

FAST_TIMEOUT = {"OTEL_EXPORTER_OTLP_TIMEOUT": "0.3"}  # seconds, as the Python SDK reads it
# An export to a collector that holds it waits this long: whatever waited for it would take a minute.
SLOW_TIMEOUT = {"OTEL_EXPORTER_OTLP_TIMEOUT": "60"}
TO_FILE = {n.ENV_TRACES_FILE: os.devnull}
Setenv = Callable[[dict[str, str]], dict[str, str]]


@pytest.fixture
def setenv(monkeypatch: pytest.MonkeyPatch) -> Setenv:
    """Sets OTEL_* variables in the process environment, where the SDK reads them; no others."""
    for name in list(os.environ):
        if name.startswith(("OTEL_", "ENDSTATE_TRACES")):
            monkeypatch.delenv(name)

    def set_all(env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return dict(os.environ)

    return set_all


@tool
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def run_some(hooks: Any = None, runs: int = 3) -> list[RunResult]:
    results = []
    for i in range(runs):
        steps = [[call("look", path=f"f{i}")], [finish("done", f"read f{i}")]]
        agent = Agent("shipper", ScriptedModel(steps), tools=[look], **({"hooks": hooks} if hooks else {}))
        results.append(agent.run(f"read f{i}", run_id=f"run-{i}"))
    return results


def outcome(results: list[RunResult]) -> list[tuple[Any, ...]]:
    return [(r.reason, r.turns, r.input_tokens, r.output_tokens, r.output, r.verified) for r in results]


def failures(telemetry: Telemetry, signal: str = n.SIGNAL_TRACES) -> float:
    value = telemetry.registry.get_sample_value("agent_telemetry_export_failures_total", {"signal": signal})
    return value or 0.0


def wait_for_failure(telemetry: Telemetry, within: float = 60.0) -> bool:
    """Whether a failed export is counted within `within` seconds: an export still in flight at a
    close that gave up fails on the exporter's thread, after the close returned."""
    deadline = time.monotonic() + within
    while failures(telemetry) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    return failures(telemetry) >= 1


def attempts(telemetry: Telemetry, signal: str = n.SIGNAL_TRACES) -> float:
    value = telemetry.registry.get_sample_value("agent_telemetry_exports_total", {"signal": signal})
    return value or 0.0


def test_spans_reach_an_otlp_http_collector(setenv: Setenv) -> None:
    with OtlpReceiver() as receiver:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_SERVICE_NAME": "probe-svc",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test,team=agent%20ops,service.name=not-this",
        }
        telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
        (result,) = run_some(telemetry.hooks, runs=1)
        assert telemetry.force_flush(FLUSH_S)
        telemetry.shutdown()
    assert set(receiver.paths) == {"/v1/traces"}
    received = receiver.spans()
    resource = received[0][0]
    assert resource["service.name"] == "probe-svc"
    assert resource["deployment.environment"] == "test" and resource["team"] == "agent ops"
    by_name = {span.name: span for _, span in received}
    assert set(by_name) == {"invoke_agent shipper", "agent.turn", "chat scripted", "execute_tool look"}
    run = by_name["invoke_agent shipper"]
    run_attrs = attributes(run.attributes)
    assert run_attrs[n.STOP_REASON] == "success" and run_attrs[n.AGENT_TURNS] == 2
    assert run_attrs[n.GEN_AI_CONVERSATION_ID] == "run-0"
    assert run.trace_id.hex() == result.trace_id
    turns = [span for _, span in received if span.name == n.SPAN_TURN]
    assert {t.parent_span_id for t in turns} == {run.span_id}
    signals = {
        attributes(t.attributes)[n.AGENT_TURN_INDEX]: attributes(t.attributes)[n.AGENT_TURN_SIGNAL]
        for t in turns
    }
    assert signals == {1: "tool_use", 2: "success"}  # the hooks' enum members, sent as their words
    assert by_name["chat scripted"].parent_span_id in {t.span_id for t in turns}
    assert failures(telemetry) == 0


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_service_name_is_named_endstate(blank: str, setenv: Setenv) -> None:
    """OTEL_SERVICE_NAME set but blank names no service (the SDK would send the spaces as its name)."""
    setenv({"OTEL_SERVICE_NAME": blank})
    assert resource_from_env().attributes["service.name"] == "endstate"


def test_the_traces_endpoint_is_used_as_given(setenv: Setenv) -> None:
    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint + "/custom/traces"}
        telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
        run_some(telemetry.hooks, runs=1)
        assert telemetry.force_flush(FLUSH_S)
        telemetry.shutdown()
    assert set(receiver.paths) == {"/custom/traces"}


@pytest.mark.parametrize("collector", ["refuses", "never_answers"])
def test_a_broken_collector_changes_nothing_but_a_counter(collector: str, setenv: Setenv) -> None:
    """Runs, a flush and a close take their usual time (bounds far above a loaded machine's, far
    below the minute a wait for the collector that holds each export would take); the failure is
    counted (the held exports are refused once the test is done timing)."""
    expected = outcome(run_some())
    with OtlpReceiver(mode="hold") as holding:
        port = closed_port() if collector == "refuses" else int(holding.endpoint.rsplit(":", 1)[1])
        timeout = FAST_TIMEOUT if collector == "refuses" else SLOW_TIMEOUT
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", **timeout}
        telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
        started = time.monotonic()
        results = run_some(telemetry.hooks)
        ran = time.monotonic() - started
        telemetry.force_flush(1)
        flushed = time.monotonic() - started - ran
        telemetry.shutdown(timeout_s=1)
        closed = time.monotonic() - started - ran - flushed
        holding.release()
        counted = wait_for_failure(telemetry)
    assert outcome(results) == expected
    assert all(r.trace_id for r in results)
    assert counted, "no failed export was counted"
    assert ran < 30, "a run waited for the collector"
    assert flushed < 30 and closed < 30, (flushed, closed)


class Raising(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise RuntimeError("exporter bug")

    def shutdown(self) -> None:
        raise RuntimeError("exporter bug")


def test_a_raising_exporter_is_counted() -> None:
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=Raising())
    results = run_some(telemetry.hooks)
    assert telemetry.force_flush(FLUSH_S)
    assert telemetry.shutdown(FLUSH_S)
    assert outcome(results) == outcome(run_some())
    assert failures(telemetry) >= 1


HANG_SCRIPT = """
import sys
from agent import Agent
from agent.models import ScriptedModel, finish
from telemetry import Telemetry
telemetry = Telemetry.from_env()
for i in range(3):
    agent = Agent("exiter", ScriptedModel([[finish("done", "ok")]]), hooks=telemetry.hooks)
    assert agent.run("go").reason == "success"
sys.stdin.readline()  # until the batch processor's export, never answered, is under way
print("closing", flush=True)
if sys.argv[1] == "shutdown":
    telemetry.shutdown()
print("done", flush=True)
"""
EXIT_BOUND_S = 15.0  # far past the close's bound (CLOSE_TIMEOUT_S, 2 s), half the SDK's own (30 s)


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["shutdown", "atexit"])
def test_a_process_exits_promptly_when_the_collector_never_answers(ending: str, tmp_path: Path) -> None:
    """An export in flight (its timeout 120 s) would hold the exit until the SDK gives up, 30 s later;
    the close is bounded. Timed from the "closing" line: starting Python takes seconds under load."""
    errors = tmp_path / "stderr.txt"
    with OtlpReceiver(mode="hang") as hanging, errors.open("w") as stderr:
        env = {
            **os.environ,
            "OTEL_EXPORTER_OTLP_ENDPOINT": hanging.endpoint,
            "OTEL_EXPORTER_OTLP_TIMEOUT": "120",
            "OTEL_BSP_SCHEDULE_DELAY": "50",  # the export starts before the close
        }
        argv = [sys.executable, "-c", textwrap.dedent(HANG_SCRIPT), ending]
        with subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True
        ) as proc:
            assert proc.stdin is not None and proc.stdout is not None
            assert hanging.arrived.wait(60), "no export began within 60 s"
            proc.stdin.write("close now\n")
            proc.stdin.flush()
            first = proc.stdout.readline()  # the close starts
            closing = time.monotonic()
            try:
                proc.wait(timeout=2 * EXIT_BOUND_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            exited = time.monotonic() - closing
            rest = proc.stdout.read()
    assert exited < EXIT_BOUND_S, f"the process took {exited:.1f} s to exit once it began closing"
    assert proc.returncode == 0, errors.read_text()
    assert (first + rest).split() == ["closing", "done"]


def test_no_endpoint_but_a_file_writes_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    telemetry = Telemetry.from_env({n.ENV_TRACES_FILE: str(path)}, registry=CollectorRegistry())
    (result,) = run_some(telemetry.hooks, runs=1)
    assert telemetry.shutdown(FLUSH_S)
    spans = [json.loads(line) for line in path.read_text().splitlines()]
    names = {s["name"] for s in spans}
    assert {"invoke_agent shipper", "agent.turn", "chat scripted", "execute_tool look"} <= names
    run = next(s for s in spans if s["name"] == "invoke_agent shipper")
    assert run["context"]["trace_id"] == "0x" + str(result.trace_id)


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        {"OTEL_TRACES_EXPORTER": "none"},
    ],
)
def test_no_export_means_no_tracing_but_metrics(env: Mapping[str, str], setenv: Setenv) -> None:
    telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
    assert isinstance(telemetry.tracer_provider, NoOpTracerProvider) and telemetry.tracing is None
    (result,) = run_some(telemetry.hooks, runs=1)
    assert result.reason is StopReason.SUCCESS and result.trace_id is None
    labels = {
        "agent": "shipper",
        "task_type": "default",
        "stop_reason": "success",
        "stop_limit": "none",
        "stop_cause": "",
    }
    assert telemetry.registry.get_sample_value("agent_stops_total", labels) == 1
    assert telemetry.shutdown() and telemetry.force_flush()


def test_the_console_exporter_writes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    telemetry = Telemetry.from_env({"OTEL_TRACES_EXPORTER": "console"}, registry=CollectorRegistry())
    (result,) = run_some(telemetry.hooks, runs=1)
    assert telemetry.shutdown(FLUSH_S)
    out, err = capsys.readouterr()
    assert out == "" and '"name": "invoke_agent shipper"' in err
    assert result.trace_id and f'"trace_id": "0x{result.trace_id}"' in err


def test_sampled_out_runs_carry_no_trace_id(setenv: Setenv) -> None:
    exporter = InMemorySpanExporter()
    env = setenv({"OTEL_TRACES_SAMPLER": "always_off"})
    telemetry = Telemetry.from_env(env, registry=CollectorRegistry(), span_exporter=exporter)
    (result,) = run_some(telemetry.hooks, runs=1)
    telemetry.shutdown()
    assert result.trace_id is None and exporter.get_finished_spans() == ()


@pytest.mark.parametrize(
    ("env", "says"),
    [
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            "http/protobuf",
        ),
        ({**TO_FILE, "OTEL_BSP_MAX_QUEUE_SIZE": "lots"}, "whole number"),
        ({**TO_FILE, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "0"}, "positive"),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "otlp"),
        ({**TO_FILE, "OTEL_TRACES_SAMPLER": "ratio"}, r"OTEL_TRACES_SAMPLER='ratio' is not a sampler"),
        ({**TO_FILE, "OTEL_TRACES_SAMPLER": " always_off"}, r"OTEL_TRACES_SAMPLER=' always_off' has spaces"),
        (
            {**TO_FILE, "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "10%"},
            r"OTEL_TRACES_SAMPLER_ARG='10%' must be a ratio from 0 to 1",
        ),
        (
            {**TO_FILE, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "5"},
            r"OTEL_TRACES_SAMPLER_ARG='5' must be a ratio",
        ),
        ({**TO_FILE, "OTEL_SPAN_EVENT_COUNT_LIMIT": "many"}, r"OTEL_SPAN_EVENT_COUNT_LIMIT='many' .* from 0"),
        ({**TO_FILE, "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "-1"}, r"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT='-1'"),
        ({**TO_FILE, "OTEL_BSP_SCHEDULE_DELAY": "0"}, r"OTEL_BSP_SCHEDULE_DELAY='0' must be a positive"),
        ({**TO_FILE, "OTEL_BSP_EXPORT_TIMEOUT": "30s"}, r"OTEL_BSP_EXPORT_TIMEOUT='30s' must be a whole"),
        ({**TO_FILE, "OTEL_BLRP_SCHEDULE_DELAY": "1s"}, r"OTEL_BLRP_SCHEDULE_DELAY='1s' must be a whole"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, r"OTEL_EXPORTER_OTLP_ENDPOINT=.* must be a URL"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "not a url"}, r"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=.* URL"),
        (  # the gRPC exporter raised a bare ValueError; with 0, -1 or NaN every export failed
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
            | {"OTEL_EXPORTER_OTLP_TIMEOUT": "ten"},
            r"OTEL_EXPORTER_OTLP_TIMEOUT='ten' must be a number of seconds above 0",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "0"},
            r"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT='0' must be a number of seconds above 0",
        ),
        ({**TO_FILE, "OTEL_EXPORTER_OTLP_TIMEOUT": "nan"}, r"OTEL_EXPORTER_OTLP_TIMEOUT='nan' must be"),
        (
            {**TO_FILE, "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT": "-1"},
            r"OTEL_EXPORTER_OTLP_LOGS_TIMEOUT='-1' must be",
        ),
        (
            {**TO_FILE, "OTEL_BSP_MAX_QUEUE_SIZE": "10", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "100"},
            r"OTEL_BSP_MAX_EXPORT_BATCH_SIZE=100 is larger than OTEL_BSP_MAX_QUEUE_SIZE=10",
        ),
    ],
)
def test_bad_settings_say_what_to_fix(env: dict[str, str], says: str, setenv: Setenv) -> None:
    with pytest.raises(ConfigError, match=says):
        Telemetry.from_env(setenv(env), registry=CollectorRegistry())


def test_grpc_without_its_package_says_which_to_install(
    setenv: Setenv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gRPC is a dependency now; an install that lost it still gets a clear error (import made to fail)."""
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", None)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    with pytest.raises(ConfigError, match="opentelemetry-exporter-otlp-proto-grpc"):
        Telemetry.from_env(setenv(env), registry=CollectorRegistry())


def test_export_attempts_and_failures_start_at_zero_for_every_signal() -> None:
    telemetry = Telemetry.from_env(TO_FILE, registry=CollectorRegistry())
    families = {m.name: m for m in telemetry.registry.collect()}
    for name in ("agent_telemetry_exports", "agent_telemetry_export_failures"):
        totals = {s.labels["signal"]: s.value for s in families[name].samples if s.name.endswith("_total")}
        assert totals.keys() == {n.SIGNAL_TRACES, n.SIGNAL_METRICS}, name
        assert totals[n.SIGNAL_TRACES] == 0, name
    telemetry.shutdown()


def test_every_span_batch_counts_as_an_attempt_and_a_delivered_one_not_as_a_failure(setenv: Setenv) -> None:
    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
        run_some(telemetry.hooks, runs=1)
        assert telemetry.force_flush(FLUSH_S)
        first = attempts(telemetry)
        run_some(telemetry.hooks, runs=1)
        assert telemetry.force_flush(FLUSH_S)
        telemetry.shutdown()
    assert first >= 1
    assert attempts(telemetry) == len(receiver.requests) >= first + 1  # one request per batch
    assert failures(telemetry) == 0


def test_text_utf8_cannot_hold_reaches_the_collector_as_a_replacement_character(setenv: Setenv) -> None:
    """A lone surrogate (a file name decoded with surrogateescape) in captured content would make
    the OTLP encoder refuse the whole batch, other runs' spans too; it is sent as U+FFFD."""
    odd = b"report-\xff.txt".decode("utf-8", "surrogateescape")

    @tool
    def listing() -> str:
        """List the folder."""
        return f"files: {odd}"

    with OtlpReceiver() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, n.ENV_CAPTURE_CONTENT: "true"}
        telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
        steps = [[call("listing")], [finish("done", "listed")]]
        result = Agent("lister", ScriptedModel(steps), tools=[listing], hooks=telemetry.hooks).run("list")
        run_some(telemetry.hooks, runs=1)  # another run's spans, in the same batch
        assert telemetry.force_flush(FLUSH_S)
        telemetry.shutdown()
    assert result.reason is StopReason.SUCCESS
    by_name = {span.name: span for _, span in receiver.spans()}
    assert {"invoke_agent lister", "execute_tool listing", "invoke_agent shipper"} <= set(by_name)
    tool_result = attributes(by_name["execute_tool listing"].attributes)[n.GEN_AI_TOOL_CALL_RESULT]
    assert "report-\ufffd.txt" in tool_result
    assert failures(telemetry) == 0


def test_an_agent_name_utf8_cannot_hold_fails_no_batch(setenv: Setenv) -> None:
    """No content captured: such a name failed the whole batch (other runs' spans too); it is sent
    with the byte escaped (as its metric label is), and nothing counts as failed."""
    odd = b"ops-\xff".decode("utf-8", "surrogateescape")
    with OtlpReceiver() as receiver:
        telemetry = Telemetry.from_env(
            setenv({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}), registry=CollectorRegistry()
        )
        steps = [[finish("done", "ok")]]
        assert Agent(odd, ScriptedModel(steps), hooks=telemetry.hooks).run("x").reason is StopReason.SUCCESS
        run_some(telemetry.hooks, runs=1)  # another run's spans, in the same batch
        assert telemetry.force_flush(FLUSH_S)
        telemetry.shutdown()
    names = {span.name for _, span in receiver.spans()}
    assert {"invoke_agent ops-\\udcff", "invoke_agent shipper"} <= names
    assert failures(telemetry) == 0


def test_a_second_telemetry_on_one_registry_says_how_to_fix_it() -> None:
    registry = CollectorRegistry()
    Telemetry.from_env({}, registry=registry)
    with pytest.raises(ConfigError, match="one Telemetry per registry"):
        Telemetry.from_env({}, registry=registry)


def test_against_a_refusing_collector_every_attempt_is_a_failure(setenv: Setenv) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{closed_port()}", **FAST_TIMEOUT}
    telemetry = Telemetry.from_env(setenv(env), registry=CollectorRegistry())
    for _ in range(2):
        run_some(telemetry.hooks, runs=1)
        assert telemetry.force_flush(FLUSH_S)
    telemetry.shutdown(timeout_s=1)
    assert attempts(telemetry) >= 2
    assert failures(telemetry) == attempts(telemetry)


def test_every_read_of_the_pending_source_is_an_attempt_and_a_raising_one_a_failure() -> None:
    broken = True

    def pending() -> list[tuple[str, str, float]]:
        if broken:
            raise ConnectionError("run store down")
        return []

    telemetry = Telemetry.from_env({}, registry=CollectorRegistry(), pending=pending)
    metrics = n.SIGNAL_METRICS
    for _ in range(3):  # a scrape reads the counters, then the source: each read shows in the next one
        list(telemetry.registry.collect())
    assert (attempts(telemetry, metrics), failures(telemetry, metrics)) == (3, 3)
    broken = False
    for _ in range(2):
        list(telemetry.registry.collect())
    assert (attempts(telemetry, metrics), failures(telemetry, metrics)) == (5, 3)
    assert attempts(telemetry) == failures(telemetry) == 0  # no span export configured: no trace attempts


def test_the_offline_span_file_is_capped_and_rotated(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    exporter = JsonLinesExporter(path, max_bytes=4_000)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    for i in range(200):
        with tracer.start_as_current_span(f"span {i}"):
            pass
    provider.shutdown()
    rotated = path.with_name("traces.jsonl.1")
    assert rotated.exists() and path.exists()
    assert rotated.stat().st_size < 4_000 + 2_000  # at most the cap and one batch past it
    assert path.stat().st_size < 4_000 + 2_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces.jsonl", "traces.jsonl.1"]  # no more files
    last = path.read_text().splitlines()[-1]
    assert '"name": "span 199"' in last


def test_a_small_queue_set_alone_takes_a_batch_that_fits_it(setenv: Setenv) -> None:
    """The SDK's default batch (512) is larger than a queue of 100: the batch shrinks to the queue."""
    exporter = InMemorySpanExporter()
    env = setenv({"OTEL_BSP_MAX_QUEUE_SIZE": "100"})
    telemetry = Telemetry.from_env(env, registry=CollectorRegistry(), span_exporter=exporter)
    (result,) = run_some(telemetry.hooks, runs=1)
    assert telemetry.shutdown(FLUSH_S)
    assert result.reason is StopReason.SUCCESS and exporter.get_finished_spans()


def test_the_queue_sizes_are_read_from_the_variables_given(setenv: Setenv) -> None:
    """`from_env(environ)` reads the batch settings from `environ`, not from the process's."""
    setenv({})
    with pytest.raises(ConfigError, match="OTEL_BSP_MAX_QUEUE_SIZE='lots'"):
        Telemetry.from_env({**TO_FILE, "OTEL_BSP_MAX_QUEUE_SIZE": "lots"}, registry=CollectorRegistry())


@pytest.mark.slow
def test_a_limit_the_sdk_reads_at_import_is_a_clear_error_from_the_command_line(setenv: Setenv) -> None:
    """The SDK reads OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT as `opentelemetry.sdk.trace` is imported: a bad
    value was a ValueError traceback from every `endstate` command that records runs."""
    env = setenv({"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "lots", **TO_FILE})
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "demo"], env={**os.environ, **env}, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "endstate: OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT='lots' must be a whole number from 0, such as 128 "
        "(empty: no limit)"
    ]


class _RecordOnly(Sampler):
    """Records every span but samples none (a span processor sees them end; no exporter should)."""

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        return SamplingResult(Decision.RECORD_ONLY)

    def get_description(self) -> str:
        return "record only"


def test_a_span_recorded_but_not_sampled_never_takes_a_place_in_the_queue_nor_counts_as_dropped() -> None:
    """`on_end` is the admission itself now (`sampled_only`): a span ended unsampled is passed by
    before it is counted, so a queue of one still takes the sampled span after a hundred of them."""
    dropped: list[tuple[int, str]] = []
    exporter = InMemorySpanExporter()
    processor = CountedBatchProcessor(exporter, lambda k, why: dropped.append((k, why)), 1, 1)
    unsampled = TracerProvider(sampler=_RecordOnly())
    unsampled.add_span_processor(processor)
    for i in range(100):
        unsampled.get_tracer("t").start_span(f"unsampled {i}").end()
    sampled = TracerProvider()
    sampled.add_span_processor(processor)
    sampled.get_tracer("t").start_span("sampled").end()
    processor.force_flush()
    processor.shutdown()
    assert [s.name for s in exporter.get_finished_spans()] == ["sampled"]
    assert dropped == []
