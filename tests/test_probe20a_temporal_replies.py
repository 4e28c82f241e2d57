"""probe20a: a person's reply too large for a run on Temporal is refused, and the run still takes a real one.

`TemporalRuns.answer(run_id, text)` with a text over Temporal's blob size limit (2 MiB) was taken by
the workflow's update; the event recording it could not be written, so every workflow task after it
failed: 20 s later the call said "Workflow Task in failed state", and so did every later answer, at
once: the run could no longer be answered. (The HTTP API takes bodies of 64 KiB and the CLI an
argument of 128 KiB, so the library and `temporal workflow update` reach it.)
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest
import temporal_agents
from temporal_server import TemporalServer, serving, temporal_fixture
from temporalio.client import WorkflowUpdateFailedError

from agent.durable.runner import AnswerError
from agent.result import StopReason
from agent.temporal import _wire as w

pytestmark = pytest.mark.slow
HUGE = "3" + "x" * 2_500_000  # over Temporal's 2 MiB blob size limit
LARGE = "3" + "x" * 1_800_000  # under it, but over what one text of a run may be (1.5 MB)


temporal = temporal_fixture()


def test_an_answer_too_large_for_temporal_is_refused_and_the_run_still_takes_a_real_one(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    queue = f"big-{uuid.uuid4().hex[:8]}"

    async def scenario() -> None:
        async with serving(temporal, temporal_agents.catalog(), queue) as runs:
            state = {"script": "question", "dir": str(tmp_path)}
            asked = await runs.start("counter", "count", state=state)
            assert asked.reason is StopReason.NEED_HELP

            started = time.monotonic()
            with pytest.raises(AnswerError, match=r"the reply is 2,500,00\d bytes, over the 1,500,000"):
                await runs.answer(asked.run_id, HUGE)  # was a ConfigError after 20 s, the run wedged
            assert time.monotonic() - started < 12  # was: refused after 20 s

            # A client that does not check (an older one, `temporal workflow update`): the workflow's
            # validator refuses an answer no model call could be sent (it was taken, and the run ended
            # as error, payload_too_large). One over the blob size limit it cannot refuse: Temporal
            # echoes a refused update's input, which fails the workflow task as taking it did.
            handle = runs.client.get_workflow_handle(asked.run_id)
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await handle.execute_update(w.ANSWER, args=[LARGE, False])
            assert "an answer is 1,800,00" in str(refused.value.cause)

            answered = await asyncio.wait_for(runs.answer(asked.run_id, "3"), 60)
            assert (answered.reason, answered.turns) == (StopReason.SUCCESS, 4)  # was refused: wedged

    asyncio.run(scenario())
