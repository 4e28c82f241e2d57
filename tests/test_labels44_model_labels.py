"""The model-call metrics follow the dashboards' agent and task type (labels44).

`gen_ai_client_token_usage` (cache reads and writes included), `gen_ai_client_operation_duration_seconds`
and `gen_ai_client_operation_time_to_first_chunk_seconds` carried the GenAI labels only, so the model
panels could not follow `$agent` and `$task_type`: choosing agent X showed every agent's model traffic.
They now carry the run's `agent` and `task_type` beside the GenAI labels, bounded as the run's are.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prom_stack import prometheus, prometheus_config, wait_until
from prometheus_client import CollectorRegistry
from test_dashboards import substitute
from test_integrations_prometheus import panel

from agent import Agent, ModelError, RunInfo, RunResult, StopReason
from agent.models import ModelRequest, ScriptedModel, finish
from agent.models.base import BILLED_BY_MODEL, CALL_MODEL, ModelReply
from telemetry import MetricsHooks, metrics
from telemetry import names as n
from telemetry.metrics import serve_metrics

MODEL_METRICS = (
    n.METRIC_GEN_AI_TOKEN_USAGE,
    n.METRIC_GEN_AI_OPERATION_DURATION,
    n.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK,
)
GEN_AI = (n.LABEL_GEN_AI_OPERATION_NAME, n.LABEL_GEN_AI_PROVIDER_NAME, n.LABEL_GEN_AI_REQUEST_MODEL)
LABELS = {
    n.METRIC_GEN_AI_TOKEN_USAGE: {n.LABEL_AGENT, n.LABEL_TASK_TYPE, *GEN_AI, n.LABEL_GEN_AI_TOKEN_TYPE},
    n.METRIC_GEN_AI_OPERATION_DURATION: {n.LABEL_AGENT, n.LABEL_TASK_TYPE, *GEN_AI, n.LABEL_ERROR_TYPE},
    n.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK: {n.LABEL_AGENT, n.LABEL_TASK_TYPE, *GEN_AI},
}
REQUEST = ModelRequest(system="", journal=[], tools=[], max_tokens=16)


def call_model(hooks: MetricsHooks, run_id: str, agent: str, task_type: str, model: str, tokens: int) -> None:
    """One run of `agent` with a model call of `tokens` input tokens (cache reads and writes beside
    them), streamed, then a failed call."""
    run = hooks.run_started(RunInfo(run_id, agent, task_type, model, "anthropic", "task"))
    run.model_started(REQUEST, 1)
    cache = {"cache_read_input_tokens": 2 * tokens, "cache_creation_input_tokens": 3 * tokens}
    reply = ModelReply([], tokens, 7, model=model, time_to_first_token=0.5, **cache)
    run.model_ended(reply, None)
    run.model_started(REQUEST, 1)
    run.model_ended(None, ModelError("busy", error_type="overloaded"))
    run.run_ended(RunResult(run_id, agent, task_type, StopReason.SUCCESS, turns=1))


def chat(agent: str, task_type: str, model: str, **more: str) -> dict[str, str]:
    labels = {n.LABEL_AGENT: agent, n.LABEL_TASK_TYPE: task_type, n.LABEL_GEN_AI_OPERATION_NAME: n.OP_CHAT}
    return labels | {n.LABEL_GEN_AI_PROVIDER_NAME: "anthropic", n.LABEL_GEN_AI_REQUEST_MODEL: model, **more}


def value(hooks: MetricsHooks, name: str, labels: dict[str, str]) -> float | None:
    return hooks.registry.get_sample_value(name, labels)


def model_samples(hooks: MetricsHooks) -> list[tuple[str, dict[str, str]]]:
    return [
        (family.name, sample.labels)
        for family in hooks.registry.collect()
        if family.name in MODEL_METRICS
        for sample in family.samples
    ]


def test_two_agents_calling_one_model_are_counted_apart() -> None:
    hooks = MetricsHooks(CollectorRegistry())
    call_model(hooks, "r1", "alpha", "triage", "claude-x", 100)
    call_model(hooks, "r2", "beta", "fix", "claude-x", 10)
    call_model(hooks, "r3", "beta", "fix", "claude-x", 10)
    tokens, duration = f"{n.METRIC_GEN_AI_TOKEN_USAGE}_sum", f"{n.METRIC_GEN_AI_OPERATION_DURATION}_count"
    for agent, task_type, runs, each in (("alpha", "triage", 1, 100), ("beta", "fix", 2, 10)):
        for token_type, times in ((n.TOKEN_INPUT, 1), (n.TOKEN_CACHE_READ, 2), (n.TOKEN_CACHE_CREATION, 3)):
            labels = chat(agent, task_type, "claude-x", gen_ai_token_type=token_type)
            assert value(hooks, tokens, labels) == runs * each * times, (agent, token_type)
        assert value(hooks, duration, chat(agent, task_type, "claude-x", error_type="")) == runs
        assert value(hooks, duration, chat(agent, task_type, "claude-x", error_type="overloaded")) == runs
        first = f"{n.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK}_count"
        assert value(hooks, first, chat(agent, task_type, "claude-x")) == runs
    assert value(hooks, tokens, chat("alpha", "fix", "claude-x", gen_ai_token_type=n.TOKEN_INPUT)) is None


def test_every_model_series_carries_agent_task_type_and_the_genai_labels_and_no_run_id() -> None:
    hooks = MetricsHooks(CollectorRegistry())
    call_model(hooks, "run-1", "alpha", "triage", "claude-x", 100)
    agent = Agent("beta", ScriptedModel([[finish("done", "ok")]]), hooks=hooks, task_type="fix")
    result = agent.run("t")
    samples = model_samples(hooks)
    assert {name for name, _ in samples} == set(MODEL_METRICS)
    for name, labels in samples:
        assert set(labels) - {"le"} == LABELS[name], name
        assert (labels[n.LABEL_AGENT], labels[n.LABEL_TASK_TYPE]) in {("alpha", "triage"), ("beta", "fix")}
        assert not {"run-1", result.run_id} & set(labels.values())
    # the scripted run's call, at zero beforehand, counted under its own agent
    labels = {n.LABEL_AGENT: "beta", n.LABEL_TASK_TYPE: "fix", n.LABEL_GEN_AI_OPERATION_NAME: n.OP_CHAT}
    labels |= {n.LABEL_GEN_AI_PROVIDER_NAME: "scripted", n.LABEL_GEN_AI_REQUEST_MODEL: "scripted"}
    assert value(hooks, f"{n.METRIC_GEN_AI_OPERATION_DURATION}_count", {**labels, "error_type": ""}) == 1


def test_calls_to_other_models_and_billed_parts_stay_under_the_runs_agent() -> None:
    """A foreign run's call to another model, and a fallback's parts billed to another model, are
    that model's series of the run's agent and task type."""
    hooks = MetricsHooks(CollectorRegistry())
    run = hooks.run_started(RunInfo("r1", "triage-bot", "refunds", "small", "anthropic", "task"))
    run.model_started(ModelRequest(system="", journal=[], tools=[], max_tokens=16, model="big"), 1)
    run.model_ended(ModelReply([], 40, 2, model="big"), None)
    run.model_started(REQUEST, 1)
    parts = [{"model": "fallback", "input_tokens": 30, "output_tokens": 1}]
    run.model_ended(ModelReply([], 30, 1, model="small", extra={BILLED_BY_MODEL: parts}), None)
    run.model_started(REQUEST, 1)
    run.model_ended(ModelReply([], 5, 1, extra={CALL_MODEL: "told"}), None)
    run.run_ended(RunResult("r1", "triage-bot", "refunds", StopReason.SUCCESS, turns=3))
    tokens = f"{n.METRIC_GEN_AI_TOKEN_USAGE}_sum"
    for model, input_tokens in (("big", 40), ("fallback", 30), ("told", 5)):
        labels = chat("triage-bot", "refunds", model, gen_ai_token_type=n.TOKEN_INPUT)
        assert value(hooks, tokens, labels) == input_tokens, model
    assert all(labels[n.LABEL_AGENT] == "triage-bot" for _, labels in model_samples(hooks))


def test_agents_past_the_label_cap_are_counted_as_their_runs_are(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "MAX_AGENT_TASK_TYPES", 1)
    hooks = MetricsHooks(CollectorRegistry())
    call_model(hooks, "r1", "alpha", "triage", "claude-x", 100)
    call_model(hooks, "r2", "alpha", "per-task-123", "claude-x", 10)
    call_model(hooks, "r3", "new", "per-task-456", "claude-x", 1)
    tokens = f"{n.METRIC_GEN_AI_TOKEN_USAGE}_sum"
    pairs = {(labels[n.LABEL_AGENT], labels[n.LABEL_TASK_TYPE]) for _, labels in model_samples(hooks)}
    assert pairs == {("alpha", "triage"), ("alpha", "other"), ("other", "other")}
    assert value(hooks, tokens, chat("alpha", "other", "claude-x", gen_ai_token_type="input")) == 10
    assert value(hooks, tokens, chat("other", "other", "claude-x", gen_ai_token_type="input")) == 1


MODEL_PANELS = ("Model call duration p95", "Model tokens per minute")


@pytest.mark.slow
def test_choosing_an_agent_narrows_the_model_panels_in_a_real_prometheus(tmp_path: Path) -> None:
    """Two agents call two models (one shared): with `$agent` set to one of them, the model panels
    show only its models and its tokens; with All, both."""
    hooks = MetricsHooks(CollectorRegistry())
    server = serve_metrics(0, hooks.registry)
    rounds = [("alpha", "triage", "claude-a", 100), ("alpha", "triage", "shared", 100)]
    rounds += [("beta", "fix", "claude-b", 7), ("beta", "fix", "shared", 7)]
    try:
        with prometheus(prometheus_config([f"127.0.0.1:{server.port}"]), tmp_path / "prom") as prom:
            wait_until(lambda: prom.query('up{job="endstate-agent"} == 1'), 30, "the first scrape")
            for i, (agent, task_type, model, tokens) in enumerate(rounds):
                call_model(hooks, f"r{i}", agent, task_type, model, tokens)  # the series at zero
            wait_until(lambda: prom.query("count(agent_stops_total > 0) >= 2"), 30, "a scrape after")
            for i, (agent, task_type, model, tokens) in enumerate(rounds * 3):
                call_model(hooks, f"again-{i}", agent, task_type, model, tokens)
            wait_until(lambda: prom.query("sum(agent_stops_total) >= 16"), 30, "the calls scraped")
            for selected, models in (("alpha", {"claude-a", "shared"}), ("beta", {"claude-b", "shared"})):
                for title in MODEL_PANELS:
                    expr = substitute(panel(title).replace('"$agent"', f'"{selected}"'))
                    shown = [s for s in prom.query(expr) if float(s["value"][1]) > 0]
                    assert {s["metric"][n.LABEL_GEN_AI_REQUEST_MODEL] for s in shown} == models, (
                        title,
                        selected,
                    )
            tokens = substitute(panel("Model tokens per minute").replace('"$task_type"', '"fix"'))
            shared = [s for s in prom.query(tokens) if s["metric"][n.LABEL_GEN_AI_REQUEST_MODEL] == "shared"]
            rate = {s["metric"][n.LABEL_GEN_AI_TOKEN_TYPE]: float(s["value"][1]) for s in shared}
            everyone = substitute(panel("Model tokens per minute"))
            both = {s["metric"][n.LABEL_GEN_AI_TOKEN_TYPE]: float(s["value"][1]) for s in prom.query(everyone)
                    if s["metric"][n.LABEL_GEN_AI_REQUEST_MODEL] == "shared"}  # fmt: skip
            assert 0 < rate[n.TOKEN_INPUT] < both[n.TOKEN_INPUT]  # beta's 7-token calls, not alpha's too
            assert rate[n.TOKEN_CACHE_READ] == pytest.approx(2 * rate[n.TOKEN_INPUT])
    finally:
        server.close()
