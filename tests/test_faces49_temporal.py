"""faces49: a reply or a resume a store's runner refuses is refused over Temporal in the same words, and
a reply it takes leaves the same record, against a real Temporal Server (the `temporal` dev server).

Before: a resume of a run that waits for a person said it "is running" over Temporal (a person told to
wait for a run that waits for them), where a store says what it waits for; an approval sent with text was
taken and its text dropped unsaid; a denial's blank reason was kept and reached the model as "Denied by
a person: ." where a store keeps none and tells the model "no reason given".
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporal_server import TemporalServer, temporal_fixture
from test_who44_temporal_by import asked_to_pay, question, recorded, worker

from agent.durable.runner import AnswerError
from agent.durable.store import NotClaimable
from agent.errors import ConfigError
from agent.result import RunResult, StopReason

pytestmark = pytest.mark.slow

temporal = temporal_fixture()


def test_a_resume_of_a_run_that_waits_for_a_person_says_what_it_waits_for_as_over_a_store(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with worker(temporal) as runs:
            asked = await runs.start("counter", "Count", state=question(tmp_path))
            paying = await runs.start("payer", "Pay.")
            assert isinstance(asked, RunResult) and isinstance(paying, RunResult)
            with pytest.raises(AnswerError) as refused:
                await runs.resume(asked.run_id)
            assert str(refused.value) == (
                f"run {asked.run_id} waits for an answer to 'Count to 2 or 3?': give one; nothing was changed"
            )
            with pytest.raises(AnswerError, match="waits for approval of the call 'pay': approve or deny it"):
                await runs.resume(paying.run_id)
            from agent.budget import Extension

            with pytest.raises(NotClaimable, match="is waiting for a person, not stopped at a limit"):
                await runs.resume(asked.run_id, Extension(turns=3))
            assert (await recorded(runs, asked.run_id))["status"] == "waiting"
            assert (await runs.answer(asked.run_id, "3")).reason is StopReason.SUCCESS

    asyncio.run(scenario())


def test_an_approval_with_text_is_refused_and_a_blank_denial_reason_is_none_as_over_a_store(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        async with worker(temporal) as runs:
            paying = await runs.start("payer", "Pay.")
            assert isinstance(paying, RunResult)
            with pytest.raises(AnswerError, match="an approval carries no text"):
                await runs.submit(paying.run_id, "yes, pay it", approved=True)
            assert (await recorded(runs, paying.run_id))["last_answer_at"] is None
            await runs.submit(paying.run_id, approved=True)
            await asked_to_pay(runs, paying.run_id, 700)
            denied = await runs.deny(paying.run_id, "   ")
            assert denied.reason is StopReason.SUCCESS
            shown = await recorded(runs, paying.run_id)
            assert (shown["last_answer_kind"], shown["last_answer"]) == ("denied", None)

    asyncio.run(scenario())


def test_an_empty_run_id_is_refused_as_a_store_runner_refuses_it(temporal: TemporalServer) -> None:
    async def scenario() -> None:
        async with worker(temporal) as runs:
            with pytest.raises(ConfigError, match="run_id must not be empty"):
                await runs.start("payer", "Pay.", run_id="", wait=False)
            assert await runs.runs() == []

    asyncio.run(scenario())
