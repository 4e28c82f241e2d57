"""A catalog entry whose build names its Agent otherwise (`register("triage", ...)` building
`Agent(name="ticket-triage")`, the README's pattern with one of its two names changed).

Before, the store, `runs`/`pending --agent` and the help gauges knew the run as `triage`, while its
spans, `agent_stops_total` and `agent_runs_started_total` said `ticket-triage`: the dashboards split
one agent in two, and an alert's `agent` label, given to `endstate pending --agent` or `review --agent`
as the README says, found none of its runs. Now a run from a catalog carries its entry's name
everywhere, and the log says so once."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer, serving, temporal_fixture, waiting

from agent import Agent, Catalog, tool
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.models import ScriptedModel, call, finish, reply
from telemetry import Telemetry
from telemetry.metrics import MetricsHooks


@tool(needs_approval=True)
def close_ticket(ticket_id: str) -> str:
    """Close a ticket."""
    return f"{ticket_id} closed"


def build(state: dict) -> Agent:
    steps = [reply(call("close_ticket", ticket_id="T-1")), reply(finish("give_up", "kept open"))]
    return Agent(name="ticket-triage", model=ScriptedModel(steps), tools=[close_ticket], task_type="triage")


@pytest.fixture
def catalog() -> Catalog:
    made = Catalog()
    made.register("triage", build)
    return made


def test_a_run_of_an_entry_is_counted_and_traced_under_the_entrys_name(
    tmp_path: Path, catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    spans = InMemorySpanExporter()
    telemetry = Telemetry.from_env(registry=CollectorRegistry(), span_exporter=spans)
    store = open_store(str(tmp_path / "runs.db"))
    runner = Runner(store, catalog, hooks=telemetry.hooks)

    async def waits_then_denied() -> tuple[str, str]:
        asked = await runner.start("triage", "Close T-1")
        ended = await runner.resume(asked.run_id, approved=False)
        return asked.agent, ended.agent

    with caplog.at_level(logging.WARNING, logger="endstate.catalog"):
        named = asyncio.run(waits_then_denied())
    telemetry.force_flush()
    assert named == ("triage", "triage")
    stops = telemetry.registry.get_sample_value
    labels = {"agent": "triage", "task_type": "triage"}
    assert stops("agent_runs_started_total", labels) == 1
    ended = {**labels, "stop_reason": "gave_up", "stop_limit": "none", "stop_cause": "agent"}
    assert stops("agent_stops_total", ended) == 1
    assert stops("agent_runs_started_total", {**labels, "agent": "ticket-triage"}) is None
    runs = [s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert {s.name for s in runs} == {"invoke_agent triage"}
    assert {(s.attributes or {}).get("gen_ai.agent.name") for s in runs} == {"triage"}
    assert [r.agent for r in store.list_runs()] == ["triage"]  # what `runs --agent` and the gauges read
    said = [r.getMessage() for r in caplog.records if "ticket-triage" in r.getMessage()]
    assert len(said) == 1 and "'triage'" in said[0]  # once, though two segments built it
    telemetry.shutdown()


temporal = temporal_fixture()


@pytest.mark.slow
def test_on_temporal_too_the_run_carries_its_entrys_name(temporal: TemporalServer, catalog: Catalog) -> None:
    registry = CollectorRegistry()

    async def scenario() -> tuple[str, str, str | None]:
        async with serving(temporal, catalog, hooks=MetricsHooks(registry)) as runs:
            asked = await asyncio.wait_for(runs.start("triage", "Close T-1"), 120)
            await waiting(runs, asked.run_id)
            listed = [r.agent for r in await runs.runs()]  # by the search attribute EndstateAgent
            ended = await asyncio.wait_for(runs.deny(asked.run_id, "keep it open"), 120)
            return asked.agent, ended.agent, listed[0] if listed else None

    assert asyncio.run(scenario()) == ("triage", "triage", "triage")
    labels = {"agent": "triage", "task_type": "triage"}
    assert registry.get_sample_value("agent_runs_started_total", labels) == 1
    ended = {**labels, "stop_reason": "gave_up", "stop_limit": "none", "stop_cause": "agent"}
    assert registry.get_sample_value("agent_stops_total", ended) == 1
