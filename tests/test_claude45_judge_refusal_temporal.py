"""claude45: an evaluator whose model refuses to judge ends a Temporal run as it ends a local one,
`gave_up` with cause `refusal` at once (not the verifier's failure as `error`, nor every turn spent
on `finish` until `limit`). Against a real Temporal Server (the dev server)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporal_server import TemporalServer, serving, temporal_fixture
from test_probe24a_worker_wait import _replay_failure

from agent import Agent, Budget
from agent.durable.runner import Catalog
from agent.models.scripted import ScriptedModel, finish, reply
from agent.verify import evaluator

pytestmark = pytest.mark.slow


def judged(state: dict[str, Any]) -> Agent:
    """Finishes every turn; its judge refuses every time."""
    refusals = [reply(stop_reason="refusal") for _ in range(6)]
    return Agent(
        name="judged",
        model=ScriptedModel([[finish("done", f"done, take {i}")] for i in range(6)]),
        verifiers=[evaluator(ScriptedModel(refusals), "It works.")],
        budget=Budget(max_turns=6, max_seconds=120),
    )


def catalog() -> Catalog:
    found = Catalog()
    found.register("judged", judged)
    return found


temporal = temporal_fixture()


def test_a_judges_refusal_ends_a_temporal_run_as_gave_up_refusal(temporal: TemporalServer) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            result = await runs.start("judged", "Scan the host.")
            assert not isinstance(result, str)
            assert (result.reason, result.cause) == ("gave_up", "refusal"), result.note
            assert result.turns == 1
            assert "evaluator's model (scripted) refused to judge" in (result.note or ""), result.note
            assert await _replay_failure(runs, result.run_id) is None

    asyncio.run(scenario())
