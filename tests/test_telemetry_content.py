"""Content capture and redaction, names against the semantic conventions, odd input, the scrape."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes
from prometheus_client import CollectorRegistry, generate_latest

from agent import Agent, CompositeHooks, HumanWait, ModelError, RunInfo, RunResult, StopReason, tool
from agent.hooks import SegmentLink
from agent.models import ModelReply, ModelRequest, ScriptedModel, ToolCall, call, finish, say
from agent.models.anthropic import PROVIDER as ANTHROPIC
from agent.tools import ToolOutcome
from telemetry import MetricsHooks, Redactor, TracingHooks, serve_metrics
from telemetry import names as n
from telemetry.redact import REDACTED

API_KEY = "sk-ant-api03-PLANTEDsecretKEY0123456789"
ENV_SECRET = "hunter2-correct-horse-battery"
TASK = "Summarise the quarterly numbers"
SAID = "Looking at the ledger now"
RESULT_TEXT = "revenue was 42"


@tool
def ledger(quarter: str) -> str:
    """Read the ledger."""
    return f"{RESULT_TEXT}; token={ENV_SECRET}"


def traced_run(capture: bool) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    redact = Redactor.from_env({"MY_DB_PASSWORD": ENV_SECRET, n.ENV_REDACT_ENV: "MY_DB_PASSWORD"})
    hooks = TracingHooks(provider, capture_content=capture, redact=redact)
    steps = [
        [say(SAID), call("ledger", quarter=f"Q3 key {API_KEY}")],
        [finish("give_up", f"stuck {API_KEY}")],
    ]
    agent = Agent("writer", ScriptedModel(steps), instructions="Be brief.", tools=[ledger], hooks=hooks)
    assert agent.run(f"{TASK} with key {API_KEY}").reason is StopReason.GAVE_UP
    provider.shutdown()
    return list(exporter.get_finished_spans())


def all_values(spans: list[ReadableSpan]) -> list[str]:
    """Every attribute value of every span and event, as text."""
    bags = [s.attributes or {} for s in spans] + [e.attributes or {} for s in spans for e in s.events]
    return [str(v) for bag in bags for v in bag.values()]


def test_no_content_without_opt_in() -> None:
    text = " ".join(all_values(traced_run(capture=False)))
    for content in (TASK, SAID, RESULT_TEXT, "Q3", "Be brief", API_KEY, ENV_SECRET, "stuck"):
        assert content not in text
    assert n.GEN_AI_INPUT_MESSAGES not in {k for s in traced_run(False) for k in (s.attributes or {})}


PLANT = "PLANTED-customer-ledger-row-7731"


@tool
def crash(row: str) -> str:
    """Fails, saying what it read."""
    raise RuntimeError(f"cannot parse {row}")


def checker(ctx: Any) -> list[str]:
    """Like a command verifier: a headline, then the command's output."""
    return [f"`pytest -q` exited 1:\nAssertionError: expected {PLANT}"]


def every_path_text(capture: bool) -> tuple[str, str]:
    """What spans (attributes, events, statuses) and the scrape hold after runs that saw PLANT everywhere."""
    exporter, registry = InMemorySpanExporter(), CollectorRegistry()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks = CompositeHooks((TracingHooks(provider, capture_content=capture), MetricsHooks(registry)))
    scripts: list[list[Any]] = [
        [[say(PLANT), call("crash", row=PLANT)], [finish("done", PLANT)], [finish("give_up", PLANT)]],
        [[finish("need_help", f"Is {PLANT} right?")]],
        [ModelError(f"the API refused {PLANT}", error_type="bad_request")],
    ]
    for steps in scripts:
        agent = Agent("leaky", ScriptedModel(steps), tools=[crash], verifiers=[checker], hooks=hooks)
        agent.run(f"clean {PLANT}")
    provider.shutdown()
    spans = list(exporter.get_finished_spans())
    statuses = [s.status.description or "" for s in spans]
    return " ".join(all_values(spans) + statuses), generate_latest(registry).decode()


def test_no_content_on_any_path_without_opt_in() -> None:
    spans, scrape = every_path_text(capture=False)
    assert PLANT not in spans and PLANT not in scrape
    assert "`pytest -q` exited 1:" in spans  # a verifier failure's headline is no content


def test_verifier_output_only_with_opt_in() -> None:
    spans, _ = every_path_text(capture=True)
    assert f"expected {PLANT}" in spans


def test_content_with_opt_in_is_redacted() -> None:
    spans = traced_run(capture=True)
    text = " ".join(all_values(spans))
    assert TASK in text and SAID in text and RESULT_TEXT in text and "Be brief." in text
    assert API_KEY not in text and ENV_SECRET not in text
    assert REDACTED in text
    chats = [s for s in spans if s.name.startswith(n.SPAN_CHAT)]
    inputs = json.loads(str((chats[-1].attributes or {})[n.GEN_AI_INPUT_MESSAGES]))
    assert [m["role"] for m in inputs] == ["user", "assistant", "user"]
    assert inputs[0]["parts"] == [{"type": "text", "content": f"{TASK} with key {REDACTED}"}]
    assert inputs[1]["parts"][1]["type"] == "tool_call"
    assert inputs[2]["parts"][0]["type"] == "tool_call_response"
    outputs = json.loads(str((chats[0].attributes or {})[n.GEN_AI_OUTPUT_MESSAGES]))
    assert outputs[0]["role"] == "assistant" and outputs[0]["finish_reason"] == "tool_use"
    (tool_span,) = [s for s in spans if s.name.startswith(n.SPAN_EXECUTE_TOOL)]
    assert RESULT_TEXT in str((tool_span.attributes or {})[n.GEN_AI_TOOL_CALL_RESULT])


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        ("x-api-key: sk-ant-api03-abcdefghijklmnop", "abcdefghijklmnop"),
        ("Authorization: Bearer eyJhbGciOi.payload.sig", "eyJhbGciOi"),
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"),
        ('{"password": "pa55word-long"}', "pa55word-long"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz"),
    ],
)
def test_redactor_removes_key_shapes(text: str, leaked: str) -> None:
    out = Redactor().redact(text)
    assert leaked not in out and REDACTED in out


def test_redactor_keeps_ordinary_text_and_truncates() -> None:
    redactor = Redactor(secrets=("s3cr3t-value!",), max_chars=20)
    assert redactor.redact("max_tokens: 4096, input_tokens=12") == "max_tokens: 4096, input_tokens=12"
    assert redactor.redact("the s3cr3t-value! here") == f"the {REDACTED} here"
    assert redactor("a" * 50) == "a" * 20 + "...[truncated 30 chars]"
    assert Redactor.from_env({"ANTHROPIC_API_KEY": "short"}).secrets == ()  # too short to redact safely


def test_names_follow_the_semantic_conventions() -> None:
    for name in dir(n):
        if name.startswith("GEN_AI_") and hasattr(gen_ai_attributes, name):
            assert getattr(n, name) == getattr(gen_ai_attributes, name), name
    conventional = {v for k, v in vars(gen_ai_attributes).items() if k.startswith("GEN_AI_")}
    ours = {
        k: v
        for k, v in vars(n).items()
        if isinstance(v, str) and v.startswith("gen_ai.") and not k.startswith("EVENT_")
    }
    assert {k: v for k, v in ours.items() if v not in conventional} == {}  # no made-up gen_ai.* names
    # Newer than the installed semconv package: from semantic-conventions-genai (gen-ai-events.md,
    # gen-ai-metrics.md), which took the GenAI conventions over.
    assert n.EVENT_INFERENCE_DETAILS == "gen_ai.client.inference.operation.details"
    assert prometheus_name("gen_ai.invoke_agent.duration", "s") == n.METRIC_GEN_AI_INVOKE_AGENT_DURATION
    assert prometheus_name("gen_ai.execute_tool.duration", "s") == n.METRIC_GEN_AI_EXECUTE_TOOL_DURATION
    assert prometheus_name(gen_ai_attributes.GEN_AI_AGENT_NAME) == n.LABEL_GEN_AI_AGENT_NAME
    assert prometheus_name(gen_ai_attributes.GEN_AI_TOOL_NAME) == n.LABEL_GEN_AI_TOOL_NAME
    assert n.ERROR_TYPE == error_attributes.ERROR_TYPE
    assert error_attributes.ErrorTypeValues.OTHER.value == n.ERROR_OTHER
    operations = gen_ai_attributes.GenAiOperationNameValues
    assert (
        operations.CHAT.value,
        operations.INVOKE_AGENT.value,
        operations.EXECUTE_TOOL.value,
    ) == (n.OP_CHAT, n.OP_INVOKE_AGENT, n.OP_EXECUTE_TOOL)
    tokens = gen_ai_attributes.GenAiTokenTypeValues
    assert (tokens.INPUT.value, tokens.OUTPUT.value) == (n.TOKEN_INPUT, n.TOKEN_OUTPUT)
    assert gen_ai_attributes.GenAiProviderNameValues.ANTHROPIC.value == ANTHROPIC
    assert prometheus_name(gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE) == n.METRIC_GEN_AI_TOKEN_USAGE
    assert (
        prometheus_name(gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION, "s")
        == n.METRIC_GEN_AI_OPERATION_DURATION
    )
    assert prometheus_name(gen_ai_attributes.GEN_AI_OPERATION_NAME) == n.LABEL_GEN_AI_OPERATION_NAME
    assert prometheus_name(gen_ai_attributes.GEN_AI_PROVIDER_NAME) == n.LABEL_GEN_AI_PROVIDER_NAME
    assert prometheus_name(gen_ai_attributes.GEN_AI_REQUEST_MODEL) == n.LABEL_GEN_AI_REQUEST_MODEL
    assert prometheus_name(gen_ai_attributes.GEN_AI_TOKEN_TYPE) == n.LABEL_GEN_AI_TOKEN_TYPE
    assert prometheus_name(error_attributes.ERROR_TYPE) == n.LABEL_ERROR_TYPE


def prometheus_name(otel_name: str, unit: str = "") -> str:
    """The OpenTelemetry-to-Prometheus mapping: dots to underscores, unit `s` as `_seconds`."""
    return otel_name.replace(".", "_") + ("_seconds" if unit == "s" else "")


def test_histograms_use_the_recommended_and_chosen_buckets() -> None:
    registry = CollectorRegistry()
    MetricsHooks(registry).run_started(RunInfo("r", "a", "t", "m", "p", "task", tools=("look",)))
    bounds = {
        m.name: sorted({float(s.labels["le"]) for s in m.samples if "le" in s.labels})
        for m in registry.collect()
        if m.type == "histogram"
    }
    expected = {
        n.METRIC_RUN_TURNS: n.BUCKETS_RUN_TURNS,
        n.METRIC_RUN_ACTIVE_SECONDS: n.BUCKETS_RUN_ACTIVE_SECONDS,
        n.METRIC_RUN_TOKENS: n.BUCKETS_RUN_TOKENS,
        n.METRIC_HUMAN_WAIT_SECONDS: n.BUCKETS_HUMAN_WAIT_SECONDS,
        n.METRIC_GEN_AI_TOKEN_USAGE: n.BUCKETS_GEN_AI_TOKEN_USAGE,
        n.METRIC_GEN_AI_OPERATION_DURATION: n.BUCKETS_GEN_AI_OPERATION_DURATION,
        n.METRIC_GEN_AI_INVOKE_AGENT_DURATION: n.BUCKETS_GEN_AI_INVOKE_AGENT_DURATION,
        n.METRIC_GEN_AI_EXECUTE_TOOL_DURATION: n.BUCKETS_GEN_AI_EXECUTE_TOOL_DURATION,
        n.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK: n.BUCKETS_GEN_AI_TIME_TO_FIRST_CHUNK,
    }
    assert bounds == {name: [*map(float, b), float("inf")] for name, b in expected.items()}
    assert n.BUCKETS_RUN_TURNS[-1] >= 100 and n.BUCKETS_RUN_ACTIVE_SECONDS[-1] >= 3600
    assert n.BUCKETS_HUMAN_WAIT_SECONDS[-1] >= 86400
    # the GenAI conventions' advice: powers of 4 tokens from 1, doubling seconds from 0.01
    assert tuple(4**i for i in range(14)) == n.BUCKETS_GEN_AI_TOKEN_USAGE
    assert tuple(round(0.01 * 2**i, 2) for i in range(14)) == n.BUCKETS_GEN_AI_OPERATION_DURATION
    assert tuple(round(0.1 * 2**i, 1) for i in range(13)) == n.BUCKETS_GEN_AI_INVOKE_AGENT_DURATION


ODD_RESULT = RunResult("r", "a", "t", StopReason.ERROR, turns=-1, trace_id="not-hex")


def odd_calls(observer: Any) -> None:
    """Calls in an order and with values the loop never makes."""
    observer.turn_ended(7, "")
    observer.model_ended(None, None)
    observer.model_ended(ModelReply([]), None)
    observer.tool_ended(ToolCall("x", "nope", {}), ToolOutcome("", True, None))
    observer.model_started(ModelRequest.of_messages("", [{"role": "user", "content": None}], [], 1), 1)
    observer.tool_started(ToolCall("x", "rm -rf / ; DROP TABLE", {"a": object()}))
    observer.tool_ended(ToolCall("x", "rm -rf / ; DROP TABLE", {}), ToolOutcome("", True, "timeout"))
    observer.verified([])
    observer.verified(["x" * 10_000])
    observer.human_waited(HumanWait(suspended_at=10.0, ended_at=5.0, outcome="weird"))
    observer.run_ended(ODD_RESULT)
    observer.run_ended(ODD_RESULT)
    observer.turn_started(1)


@pytest.fixture
def odd_info() -> RunInfo:
    return RunInfo("r", "a", "t", "m", "p", "", segment=3, continues=SegmentLink("zz", ""), limits={})


def test_hooks_take_odd_input_without_raising(odd_info: RunInfo) -> None:
    registry = CollectorRegistry()
    metrics = MetricsHooks(registry)
    tracing = TracingHooks(TracerProvider(), capture_content=True, redact=Redactor())
    for hooks in (metrics, tracing):
        odd_calls(hooks.run_started(odd_info))
    labels = {"agent": "a", "task_type": "t", "tool": n.TOOL_OTHER, "outcome": "timeout"}
    assert registry.get_sample_value("agent_tool_calls_total", labels) == 1
    assert registry.get_sample_value("agent_runs_started_total", {"agent": "a", "task_type": "t"}) == 0


def test_tool_labels_are_configured_names_capped() -> None:
    hooks = MetricsHooks(CollectorRegistry())
    configured = tuple(f"tool_{i}" for i in range(200))
    hooks.run_started(RunInfo("r", "a", "t", "m", "p", "task", tools=configured))
    labels = {hooks.tool_label("a", "t", name) for name in [*configured, "made_up"]}
    assert len(labels) == 65 and n.TOOL_OTHER in labels
    assert hooks.tool_label("a", "t", "tool_0") == "tool_0"
    assert hooks.tool_label("a", "t", "made_up") == n.TOOL_OTHER
    assert hooks.tool_label("b", "t", "tool_0") == n.TOOL_OTHER  # another agent's tools are its own


def test_pending_gauges_come_from_the_source() -> None:
    now = time.time()
    rows = [("a", "t", now - 600), ("a", "t", now - 60), ("b", "t", now - 5), ("b", "t", 0.0)]
    registry = CollectorRegistry()
    MetricsHooks(registry, pending=lambda: rows)
    assert registry.get_sample_value("agent_help_pending", {"agent": "a", "task_type": "t"}) == 2
    oldest = registry.get_sample_value("agent_help_oldest_pending_seconds", {"agent": "a", "task_type": "t"})
    assert oldest == pytest.approx(600, abs=5)
    assert registry.get_sample_value("agent_help_pending", {"agent": "b", "task_type": "t"}) == 2
    oldest_b = registry.get_sample_value(
        "agent_help_oldest_pending_seconds", {"agent": "b", "task_type": "t"}
    )
    assert oldest_b == pytest.approx(5, abs=5)  # a row with no start time counts, but has no age


def test_a_failing_pending_source_is_counted_not_raised() -> None:
    def broken() -> list[tuple[str, str, float]]:
        raise OSError("store down")

    registry = CollectorRegistry()
    MetricsHooks(registry, pending=broken)
    assert registry.get_sample_value("agent_help_pending", {"agent": "a", "task_type": "t"}) is None
    assert registry.get_sample_value("agent_telemetry_export_failures_total", {"signal": "metrics"}) >= 1


@pytest.fixture
def served() -> Iterator[tuple[Any, str]]:
    provider = TracerProvider()
    registry = CollectorRegistry()
    hooks = CompositeHooks((TracingHooks(provider), MetricsHooks(registry)))
    result = Agent("scraped", ScriptedModel([[finish("give_up", "no")]]), hooks=hooks).run("t")
    server = serve_metrics(0, registry)
    yield server, str(result.trace_id)
    server.close()
    provider.shutdown()


def scrape(url: str, accept: str | None = None) -> tuple[str, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


def test_openmetrics_scrape_carries_the_trace_exemplar(served: tuple[Any, str]) -> None:
    server, trace_id = served
    assert server.url.startswith("http://127.0.0.1:")
    kind, body = scrape(server.url, "application/openmetrics-text; version=1.0.0")
    assert kind.startswith("application/openmetrics-text")
    exemplar_lines = [line for line in body.splitlines() if f'# {{trace_id="{trace_id}"}}' in line]
    assert exemplar_lines and all(
        line.startswith("agent_run_active_seconds_bucket") for line in exemplar_lines
    )
    kind, body = scrape(server.url)
    assert kind.startswith("text/plain") and "trace_id" not in body and "agent_stops_total" in body
