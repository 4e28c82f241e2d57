"""Foreign agents' metrics scraped by a real Prometheus, read by the dashboards' own queries."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from agents import set_tracing_disabled
from agents.testing.model import assistant_message, function_call
from integrations_support import FakeCLI, assistant, calls, graph_of, result, says
from prom_stack import prometheus, prometheus_config, wait_until
from prometheus_client import CollectorRegistry
from pydantic_ai.usage import UsageLimits
from test_dashboards import panel_exprs, substitute
from test_integrations import oa_agent, pai_agent

from agent.integrations import claude_agent_sdk as claude
from agent.integrations import langgraph as lg
from agent.integrations import openai_agents as oa
from agent.integrations import pydantic_ai as pai
from telemetry import MetricsHooks
from telemetry.metrics import serve_metrics

AGENTS = ("pai_agent", "oa_agent", "lg_agent", "claude_agent")
TASK = "foreign_task"
CLAUDE_STOPS = 'agent_stops_total{agent="claude_agent"}'


def one_round(hooks: MetricsHooks) -> None:
    """A success of each framework, and a turns limit of Pydantic AI."""
    set_tracing_disabled(True)
    try:
        pai.run(pai_agent(["done"]), "x", hooks=hooks, task_type=TASK)
        limits = UsageLimits(request_limit=1)
        pai.run(
            pai_agent([("look", {"path": "a"}, "c1"), "x"]),
            "x",
            hooks=hooks,
            task_type=TASK,
            usage_limits=limits,
        )
        steps: list[Any] = [[function_call("read", {"path": "a"}, call_id="c1")], [assistant_message("ok")]]
        oa.run(oa_agent(steps), "x", hooks=hooks, task_type=TASK)
        lg.run(graph_of([calls("look", {"path": "a"}, "c1"), says("ok")]), {"messages": [("user", "x")]},
               hooks=hooks, task_type=TASK)  # fmt: skip
        cli = FakeCLI([assistant("m1", {"type": "text", "text": "ok"}), result(result="ok")])
        claude.run("x", transport=cli, hooks=hooks, task_type=TASK)
    finally:
        set_tracing_disabled(False)


def panel(title: str) -> str:
    (expr,) = [e for where, e in panel_exprs() if where.endswith(f": {title} / A")]
    return expr


def values(prom: Any, expr: str) -> list[float]:
    return [float(s["value"][1]) for s in prom.query(expr) if not math.isnan(float(s["value"][1]))]


@pytest.mark.slow
def test_foreign_agents_stops_reach_prometheus_and_the_stop_panels(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    hooks = MetricsHooks(registry)
    server = serve_metrics(0, registry)
    try:
        config = prometheus_config([f"127.0.0.1:{server.port}"], interval="1s")
        with prometheus(config, tmp_path / "prom") as prom:
            wait_until(lambda: prom.query('up{job="endstate-agent"} == 1'), 30, "the first scrape")
            one_round(hooks)  # creates the series (at zero, then counted)
            wait_until(
                lambda: prom.query('agent_stops_total{agent="claude_agent"} > 0'), 30, "a scrape after"
            )
            one_round(hooks)
            wait_until(
                lambda: prom.query('agent_stops_total{agent="claude_agent"} > 1'), 30, "a second round"
            )
            for agent in AGENTS:
                by_reason = panel("Stops by reason").replace('"$agent"', f'"{agent}"')
                assert any(v > 0 for v in values(prom, substitute(by_reason))), agent
            budget = panel("Which budget ran out").replace('"$agent"', '"pai_agent"')
            limited = prom.query(substitute(budget))
            assert [s["metric"].get("stop_limit") for s in limited if float(s["value"][1]) > 0] == ["turns"]
    finally:
        server.close()
