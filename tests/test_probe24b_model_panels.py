"""A foreign run whose calls go to two models, read by the dashboards' model panels from a real
Prometheus (probe24b): the p95 latency and tokens-per-minute panels by requested model show each
model the run called, not the run's model alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents import RunConfig, set_tracing_disabled
from agents.testing.model import ModelStep, assistant_message
from prom_stack import prometheus, prometheus_config, wait_until
from prometheus_client import CollectorRegistry
from test_dashboards import substitute
from test_integrations_prometheus import panel, values
from test_probe24b_call_models import Named, oa_usage, triage

from agent.integrations import openai_agents as oa
from telemetry import MetricsHooks
from telemetry.metrics import serve_metrics

MODELS = ("gpt-4.1-mini", "gpt-4.1")


def handoff(hooks: MetricsHooks) -> None:
    """The triage agent (gpt-4.1-mini) hands off to the specialist (gpt-4.1), which answers."""
    answer = [ModelStep(output=[assistant_message("ok")], usage=oa_usage(900))]
    oa.run(triage(), "refund", hooks=hooks, run_config=RunConfig(model_provider=Named(answer)))


@pytest.mark.slow
def test_the_model_panels_show_each_model_a_foreign_run_called(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    hooks = MetricsHooks(registry)
    server = serve_metrics(0, registry)
    set_tracing_disabled(True)
    try:
        config = prometheus_config([f"127.0.0.1:{server.port}"], interval="1s")
        with prometheus(config, tmp_path / "prom") as prom:
            wait_until(lambda: prom.query('up{job="endstate-agent"} == 1'), 30, "the first scrape")
            handoff(hooks)  # creates the series
            wait_until(lambda: prom.query('agent_stops_total{agent="triage"} > 0'), 30, "a scrape after")
            handoff(hooks)
            wait_until(lambda: prom.query('agent_stops_total{agent="triage"} > 1'), 30, "a second run")
            for title in ("Model call duration p95", "Model tokens per minute"):
                shown = prom.query(substitute(panel(title)))
                seen = {s["metric"].get("gen_ai_request_model") for s in shown if values_of(s) > 0}
                assert set(MODELS) <= seen, (title, seen)  # before: gpt-4.1-mini alone
            tokens = (
                'sum by (gen_ai_request_model) (gen_ai_client_token_usage_sum{gen_ai_token_type="input"})'
            )
            by_model = {s["metric"]["gen_ai_request_model"]: float(s["value"][1]) for s in prom.query(tokens)}
            assert by_model == {"gpt-4.1-mini": 20.0, "gpt-4.1": 1800.0}
            assert values(
                prom, 'gen_ai_client_operation_duration_seconds_count{gen_ai_request_model="gpt-4.1"}'
            ) == [2]
    finally:
        set_tracing_disabled(False)
        server.close()


def values_of(sample: dict[str, object]) -> float:
    value = float(sample["value"][1])  # type: ignore[index]
    return 0.0 if value != value else value  # NaN: no data in the window
