"""probe39c: a reply that Temporal's cap on a run's updates in flight (10) refuses is told so at once.

The SDK sends an update with its retries, which take that refusal (RESOURCE_EXHAUSTED) for an overloaded
server: the reply was `NotClaimable` only after about 14 s of them. The update is now sent first without
retries, and only a failure other than the cap is sent again with them (the same update id: Temporal takes
it once). Against a real Temporal Server; the time is read off the clock around the call. The rule call by
call, and the connection without retries: tests/test_probe40b_prompt_caps.py.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import temporal_agents
from temporal_server import TemporalServer, serving, temporal_fixture, waiting
from test_probe38d_update_caps import question, reads

from agent.durable.store import NotClaimable
from agent.result import StopReason
from agent.temporal.workflow import MAX_IN_FLIGHT_UPDATES

pytestmark = pytest.mark.slow

temporal = temporal_fixture()

PROMPT_S = 8.0  # a refused reply's answer, on a loaded machine (the SDK's retries took about 14 s)


def test_a_reply_past_the_in_flight_cap_is_refused_at_once_and_taken_once_there_is_room(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    flag = tmp_path / "hold.flag"  # the first count waits while it exists: the run is running, not waiting
    flag.write_text("hold")

    async def scenario() -> None:
        async with serving(temporal, temporal_agents.catalog()) as runs:
            state = question(tmp_path, hold=str(flag), hold_at=1)
            run_id = str(await runs.start("counter", "Count", state=state, wait=False))
            read = await reads(runs, run_id, 1, MAX_IN_FLIGHT_UPDATES)
            assert not [r for r in read if isinstance(r, str)], read  # all taken: the cap is reached
            began = time.monotonic()
            with pytest.raises(NotClaimable, match="cap on updates in flight on one run is reached"):
                await runs.answer(run_id, "3")
            took = time.monotonic() - began
            assert took < PROMPT_S, took  # was about 14 s
            await asyncio.to_thread(flag.unlink)  # the count ends, and so do the reads
            await waiting(runs, run_id)
            result = await asyncio.wait_for(runs.answer(run_id, "3"), 60)  # nothing was lost
            assert result.reason is StopReason.SUCCESS, result.note

    try:
        asyncio.run(scenario())
    finally:
        flag.unlink(missing_ok=True)
