"""Label values from outside (a catalog's agent and tool names, a task type a client or a Temporal start
chose, the model a provider's reply names) must not break /metrics for every later scrape, nor the
PromQL a scrape is read with.

A lone surrogate (JSON's `"\\ud800"`, or argv bytes Python could not decode) in one label value made
`prometheus_client` fail every exposition of the process: every scrape failed, every alert went blind.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prom_stack import prometheus, prometheus_config, wait_until
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest
from prometheus_client.parser import text_string_to_metric_families

from agent import RunInfo, RunResult, StopReason
from agent.models import ModelRequest, ToolCall
from agent.models.base import BILLED_BY_MODEL, ModelReply
from agent.tools import ToolOutcome
from telemetry import MetricsHooks, TracingHooks, metrics
from telemetry.metrics import serve_metrics

SURROGATE = "\ud800"
HOSTILE_AGENT = 'a"b{c}=\\,x'  # quotes, braces, a backslash: escaped by the exposition, kept as they are
HOSTILE_TASK = "ünï\u2028code ✓"


def hostile_run(
    hooks: MetricsHooks, run_id: str, agent: str, task_type: str, model: str, tool: str, fallback: str = ""
) -> None:
    info = RunInfo(run_id, agent, task_type, model, "anthropic", "task", tools=(tool,))
    run = hooks.run_started(info)
    run.model_started(ModelRequest(system="", journal=[], tools=[], max_tokens=16), 1)
    part = {"model": fallback or f"fallback-{SURROGATE}", "input_tokens": 3, "output_tokens": 1}
    run.model_ended(ModelReply([], 3, 1, model=model, extra={BILLED_BY_MODEL: [part]}), None)
    call = ToolCall(id="c1", name=tool, arguments={})
    run.tool_started(call)
    run.tool_ended(call, ToolOutcome("ok"))
    run.run_ended(RunResult(run_id, agent, task_type, StopReason.SUCCESS, turns=1))


def label_values(text: str) -> set[str]:
    return {
        v
        for family in text_string_to_metric_families(text)
        for s in family.samples
        for v in s.labels.values()
    }


def test_a_lone_surrogate_in_any_outside_name_leaves_every_scrape_served() -> None:
    hooks = MetricsHooks(CollectorRegistry())
    hostile_run(
        hooks, "r1", f"agent-{SURROGATE}", f"task-{SURROGATE}", f"model-{SURROGATE}", f"tool-{SURROGATE}"
    )
    text = generate_latest(hooks.registry).decode("utf-8")  # raised UnicodeEncodeError: every scrape failed
    openmetrics_latest(hooks.registry)
    values = label_values(text)
    for name in ("agent", "task", "model", "tool", "fallback"):
        assert f"{name}-\\ud800" in values, name  # written out, still one series per name


def test_huge_names_are_cut_to_a_bounded_label_that_keeps_them_apart() -> None:
    hooks = MetricsHooks(CollectorRegistry())
    long = "x" * 100_000
    hostile_run(hooks, "r1", long + "1", long + "a", long + "m", "t", fallback="fb")
    hostile_run(hooks, "r2", long + "2", long + "a", long + "m", "t", fallback="fb")
    text = generate_latest(hooks.registry).decode("utf-8")
    assert len(text) < 2_000_000  # 100 kB names on ~500 series each: over 200 MB a scrape before
    values = label_values(text)
    assert max(map(len, values)) <= metrics.MAX_LABEL_CHARS
    agents = {
        s.labels["agent"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if "agent" in s.labels
    }
    assert len(agents) == 2, "two agents whose names differ only past the cut keep two label values"


def go_quoted(value: str) -> str:
    """A PromQL string literal for `value`, as the alert templates' `printf "%q"` writes it."""
    return json.dumps(value, ensure_ascii=False)


def test_hostile_names_survive_a_real_scrape_and_the_promql_that_selects_them(tmp_path: Path) -> None:
    hooks = MetricsHooks(CollectorRegistry())
    hostile_run(hooks, "r1", HOSTILE_AGENT, HOSTILE_TASK, f"model-{SURROGATE}", "look")
    server = serve_metrics(0, hooks.registry)
    try:
        with prometheus(prometheus_config([f"127.0.0.1:{server.port}"]), tmp_path / "prom") as prom:
            selector = f"agent={go_quoted(HOSTILE_AGENT)},task_type={go_quoted(HOSTILE_TASK)}"
            found = wait_until(
                lambda: prom.query(f'agent_stops_total{{{selector},stop_reason="success"}} == 1'),
                30,
                "the hostile run's stop in Prometheus",
            )
            assert found[0]["metric"]["agent"] == HOSTILE_AGENT
            assert found[0]["metric"]["task_type"] == HOSTILE_TASK
            assert prom.query('up{job="endstate-agent"} == 1')  # every scrape of the process succeeds
            models = prom.query("count by (gen_ai_request_model) (gen_ai_client_token_usage_count)")
            assert {m["metric"]["gen_ai_request_model"] for m in models} >= {
                "model-\\ud800",
                "fallback-\\ud800",
            }
    finally:
        server.close()


def test_a_waiting_run_whose_task_type_is_no_utf8_leaves_every_replicas_scrape_served() -> None:
    """A Temporal start's task type is checked as text of at most 2,048 bytes counted with
    `surrogatepass`: `{"task_type": "\\ud800"}` passes. Once that run waits for a person, every replica
    reads it from the shared store (or Temporal's visibility) into its help gauges: each replica's
    /metrics failed, the whole fleet's scrapes with it."""
    waiting = [("triage", f"t-{SURROGATE}", 1, 1_700_000_000.0)]
    for _replica in range(3):
        hooks = MetricsHooks(CollectorRegistry(), pending=lambda: waiting)
        text = generate_latest(hooks.registry).decode("utf-8")
        families = {f.name: f for f in text_string_to_metric_families(text)}
        [sample] = families["agent_help_pending"].samples
        assert sample.labels == {"agent": "triage", "task_type": "t-\\ud800"} and sample.value == 1


def test_a_span_named_with_no_utf8_text_no_longer_fails_the_batch_of_every_run_in_it() -> None:
    """`invoke_agent {agent}`, `chat {model}` and `execute_tool {tool}` took the names as they came: OTLP
    could not encode a span named with a lone surrogate, so the batch failed, and with it the spans of
    every other run exported beside it."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    hooks = TracingHooks(provider)
    for run_id, name in (("r1", f"agent-{SURROGATE}"), ("r2", "plain")):
        info = RunInfo(
            run_id, name, f"task-{SURROGATE}", f"model-{SURROGATE}", "anthropic", "task", tools=("t",)
        )
        run = hooks.run_started(info)
        run.turn_started(1)
        run.model_started(ModelRequest("", [], [], 100), 1)
        run.model_ended(ModelReply([], 3, 1, model=f"model-{SURROGATE}"), None)
        call = ToolCall(id="c1", name=f"tool-{SURROGATE}", arguments={})
        run.tool_started(call)
        run.tool_ended(call, ToolOutcome("ok"))
        run.turn_ended(1, StopReason.SUCCESS)
        run.run_ended(RunResult(run_id, name, "t", StopReason.SUCCESS, turns=1))
    provider.shutdown()
    spans = exporter.get_finished_spans()
    encode_spans(spans).SerializeToString()  # raised UnicodeEncodeError for the whole batch
    names = {s.name for s in spans}
    assert {
        "invoke_agent agent-\\ud800",
        "invoke_agent plain",
        "chat model-\\ud800",
        "execute_tool tool-\\ud800",
    } <= names


ALERT_RULES = Path(__file__).resolve().parents[1] / "alerts" / "rules"
WINDOW_CLAUSE = re.compile(
    r'\{\{ if (printf "agent_task_type:agent_stops_final:increase1h[^|]*\| query) \}\}'
)


def test_the_alert_templates_promql_finds_a_hostile_agent_and_task_type(tmp_path: Path) -> None:
    """The stop alerts say which window they judged by querying, from their template, the recorded
    count of the agent's runs with the labels quoted by Go's `%q`: the query must find an agent and
    task type with quotes, braces, a backslash, a line separator and a lone surrogate's escape, or the
    description names the wrong window. The clause is taken from alerts.yml as it is."""
    clause = WINDOW_CLAUSE.search((ALERT_RULES / "alerts.yml").read_text())
    assert clause, "the stop alerts' window clause is not in alerts.yml"
    agent, task_type = HOSTILE_AGENT, HOSTILE_TASK + "\\ud800"  # a lone surrogate as the metrics serve it
    window = f"{{{{ if {clause.group(1)} }}}}hour{{{{ else }}}}6 hours{{{{ end }}}}"
    alert = {"alert": "WindowClause", "expr": "agent_task_type:agent_stops_final:increase1h >= 20"}
    rules = {"groups": [{"name": "t", "rules": [{**alert, "annotations": {"window": window}}]}]}
    (tmp_path / "clause.yml").write_text(yaml.safe_dump(rules))
    run = f"agent={go_quoted(agent)},task_type={go_quoted(task_type)}"
    stops = (("success", "none"), ("limit", "turns"))
    series = [
        f'agent_stops_total{{{run},stop_reason="{r}",stop_limit="{lim}",stop_cause=""}}' for r, lim in stops
    ]
    inputs = [{"series": one, "values": "0+1x90"} for one in series]
    expected = {"exp_labels": {"agent": agent, "task_type": task_type}, "exp_annotations": {"window": "hour"}}
    check = {"eval_time": "80m", "alertname": "WindowClause", "exp_alerts": [expected]}
    test = {"interval": "1m", "input_series": inputs, "alert_rule_test": [check]}
    files = [str(ALERT_RULES / "recording.yml"), str(tmp_path / "clause.yml")]
    config = {"rule_files": files, "evaluation_interval": "1m", "tests": [test]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(config, allow_unicode=True))
    argv = ["promtool", "test", "rules", str(tmp_path / "test.yml")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
