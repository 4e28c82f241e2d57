"""temporal42: a run read over Temporal (`GET /runs/{id}`, `endstate runs --json`, `TemporalRuns.record`)
carries what it carries over a store: its output, summary, active and waiting seconds, trace id and end
time, not empty values. Against a real Temporal Server (the dev server)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture

from agent import Agent, Budget
from agent.durable.runner import Catalog
from agent.durable.store import RunStatus
from agent.models.scripted import ScriptedModel, finish

pytestmark = pytest.mark.slow

LONG = "".join(f"line {i} of the answer. " for i in range(400))  # past what the memo keeps (2,000)


def long_answer(state: dict[str, Any]) -> Agent:
    script = [[finish("need_help", "Which one?")], [finish("done", LONG)]]
    return Agent(name="long", model=ScriptedModel(script), budget=Budget(max_seconds=60))


def catalog() -> Catalog:
    found = Catalog()
    found.register("long", long_answer)
    return found


temporal = temporal_fixture()


def test_a_finished_run_read_over_temporal_carries_its_output_times_and_trace(
    temporal: TemporalServer,
) -> None:
    # Was: output "", summary "", active_seconds 0.0, waiting_seconds 0.0, trace_id None, ended_at None
    # for every run read over Temporal: the client read only the note, turns and tokens of the result.
    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            asked = await runs.start("long", "Answer at length")
            assert not isinstance(asked, str) and asked.reason == "need_help"
            await asyncio.sleep(1.0)  # a person's wait, counted as waiting time
            await runs.answer(asked.run_id, "the first")
            result = await runs.result(asked.run_id)  # the workflow's end, past its segment's
            record = await runs.record(result.run_id)
            listed = {r.run_id: r for r in await runs.runs()}[result.run_id]
        assert result.reason == "success" and result.output == LONG
        assert record is not None and record.status is RunStatus.FINISHED
        assert record.output == result.output and record.summary == result.summary != ""
        assert record.active_seconds == result.active_seconds > 0
        assert record.waiting_seconds == result.waiting_seconds >= 1.0
        assert record.trace_id == result.trace_id
        assert record.ended_at is not None and record.ended_at >= record.started_at
        # a listing keeps the start of long texts (Temporal's memo), and the same times
        assert listed.output and LONG.startswith(listed.output)
        assert listed.active_seconds == record.active_seconds
        assert listed.waiting_seconds == record.waiting_seconds
        assert listed.ended_at == record.ended_at

    asyncio.run(scenario())
