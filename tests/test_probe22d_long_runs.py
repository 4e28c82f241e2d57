"""probe22d: a long run on Temporal meets Temporal's history event count limit (51,200 events by
default, which ends a workflow with no result): the run stops first, named, like one near the history
size limit. Against a real Temporal dev server whose count limit is lowered so a short run reaches it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture

from agent import Agent, Budget, tool
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, call, finish
from agent.temporal import _wire as w

pytestmark = pytest.mark.slow

EVENT_LIMIT = 600  # the server's `limit.historyCount.error` here (51,200 by default)


class CountLimitedServer(TemporalServer):
    """The dev server with its history event count limit lowered to `EVENT_LIMIT`."""

    extra_args = (
        "--dynamic-config-value", f"limit.historyCount.error={EVENT_LIMIT}",
        "--dynamic-config-value", f"limit.historyCount.warn={EVENT_LIMIT // 2}",
    )  # fmt: skip


@tool
def tick(n: int) -> str:
    """One small step of a long job."""
    return f"tick {n}"


def long_job(state: dict[str, Any]) -> Agent:
    script = [[call("tick", n=i)] for i in range(1, 200)] + [[finish("done", "ticked")]]
    return Agent(name="ticker", model=ScriptedModel(script), tools=[tick], budget=Budget(max_turns=250))


temporal = temporal_fixture(make=CountLimitedServer)


def test_a_run_whose_history_nears_temporals_event_count_limit_stops_named(
    temporal: TemporalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scaled down: the server ends a workflow at 600 events, the run stops past 400 (40,000 of 51,200).
    # Was: Temporal terminated the workflow ("history count exceeds limit"): no result, no stop counted.
    monkeypatch.setattr(w, "MAX_HISTORY_EVENTS", 400)

    async def scenario() -> None:
        catalog = Catalog()
        catalog.register("ticker", long_job)
        # never continued as new: the bound that catches a run which cannot hand over (its snapshot too large)
        async with serving(temporal, catalog, continue_after_events=None) as runs:
            result = await runs.start("ticker", "Tick 200 times")
            assert not isinstance(result, str)
            assert (result.reason, result.error_type) == ("error", "history_too_large"), result.note
            assert "events" in result.note and "max_turns" in result.note
            assert 10 < result.turns < 200
            ended = await runs.result(result.run_id)  # the workflow ended itself
            assert (ended.reason, ended.error_type) == ("error", "history_too_large")
            history = await runs.client.get_workflow_handle(result.run_id).fetch_history()
            assert len(history.events) < EVENT_LIMIT
            described = await runs.client.get_workflow_handle(result.run_id).describe()
            assert described.status is not None and described.status.name == "COMPLETED"

    asyncio.run(scenario())
