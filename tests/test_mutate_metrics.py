"""Metrics decisions a hand mutation audit found no test pinned (see the `mutate` branch's report)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from agent import Agent, StopReason, tool
from agent.errors import TakenOver
from agent.models import ScriptedModel, call, finish
from agent.snapshot import Checkpoint
from telemetry import MetricsHooks


@tool
def look(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def samples(registry: CollectorRegistry, name: str) -> list[float]:
    return [s.value for m in registry.collect() for s in m.samples if s.name == name]


def test_a_segment_taken_over_counts_what_it_spent_but_no_stop() -> None:
    """Another worker took the run over while this one ran it (its checkpoint was refused): this
    segment is no end of the run, so no stop is counted, but what its model calls cost was spent and
    is counted (under its reason, `cancelled`), or the cost panels would miss it."""
    registry, handed = CollectorRegistry(), []

    def checkpoint(new: Checkpoint) -> None:
        handed.append(new)
        if len(handed) == 2:
            raise TakenOver("another worker holds the run now")

    model = ScriptedModel([[call("look", q="a")], [call("look", q="b")], [finish("done", "x")]])
    agent = Agent("taken", model, tools=[look], checkpoint=checkpoint, hooks=MetricsHooks(registry))
    result = agent.run("look twice")
    assert result.reason is StopReason.CANCELLED
    assert result.cost_usd is not None and result.cost_usd > 0
    labels = {"agent": "taken", "task_type": "default", "stop_reason": "cancelled"}
    assert registry.get_sample_value("agent_cost_usd_total", labels) == pytest.approx(result.cost_usd)
    assert sum(samples(registry, "agent_stops_total")) == 0
