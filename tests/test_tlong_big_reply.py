"""A model reply too large for one Temporal payload ends the run at once, named, its call made once.

The model activity's answer went whole: one over the server's blob size limit (2 MiB by default) was
refused, Temporal tried the call again, 5 times in all, about 15 s (each attempt on another worker a new
paid call), and the run ended `error` with the error type `PayloadsTooLarge`. Now the worker does not
send it: the run ends at the first attempt as `error`/`payload_too_large` (as a tool's state too large
ends it), the note saying what was too large and what to do, and the tokens the call used are charged."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture

from agent import Agent, Budget
from agent.durable.runner import Catalog
from agent.models.base import ModelReply, ModelRequest
from agent.models.scripted import ScriptedModel, reply, say
from agent.result import RunResult, StopReason

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
BIG = 3_000_000  # characters of the reply's text: over the server's 2 MiB blob size limit


def talker(asked: list[int]) -> Catalog:
    """`talker` answers its first call with a 3 MB text; each call it is asked is noted in `asked`."""

    def big(request: ModelRequest) -> ModelReply:
        asked.append(len(request.journal))
        return reply(say("x" * BIG), input_tokens=1_000, output_tokens=120_000, stop_reason="max_tokens")

    catalog = Catalog()
    catalog.register(
        "talker",
        lambda state: Agent("talker", ScriptedModel([big, big]), budget=Budget(max_turns=3, max_seconds=300)),
    )
    return catalog


async def model_attempts(client: Any, run_id: str) -> list[int]:
    """The attempt each of the run's model activities ended at, as its history records them."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    models = {
        e.event_id
        for e in history.events
        if e.activity_task_scheduled_event_attributes.activity_type.name.startswith("endstate.model")
    }
    return [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
        and e.activity_task_started_event_attributes.scheduled_event_id in models
    ]


def test_a_reply_over_a_payload_ends_the_run_at_once_named(temporal: TemporalServer) -> None:
    asked: list[int] = []

    async def scenario() -> tuple[RunResult, list[int]]:
        async with serving(temporal, talker(asked)) as runs:
            result = await asyncio.wait_for(runs.start("talker", "Write it all out"), 120)
            assert isinstance(result, RunResult)
            return result, await model_attempts(runs.client, result.run_id)

    result, attempts = asyncio.run(scenario())
    assert attempts == [1]  # was: [5], each answer refused by the server, 15 s of backoff
    assert len(asked) == 1, f"the model was asked {len(asked)} times"
    assert (result.reason, result.error_type) == (StopReason.ERROR, "payload_too_large"), result.note
    assert "the model's reply is 3,000" in result.note and "over the 2,000,000" in result.note
    assert "max_tokens" in result.note
    assert (result.usage.input_tokens, result.usage.output_tokens) == (1_000, 120_000)  # the call is charged
