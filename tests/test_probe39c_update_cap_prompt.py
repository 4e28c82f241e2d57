"""probe39c: a reply that Temporal's cap on a run's updates in flight (10) refuses is told so at once.

The SDK sends an update with its retries, which take that refusal (RESOURCE_EXHAUSTED) for an overloaded
server: the reply was `NotClaimable` only after about 14 s of them. The update is now sent first without
retries, and only a failure other than the cap is sent again with them (the same update id: Temporal takes
it once). Against a real Temporal Server; the time is read off the clock around the call.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import temporal_agents
from temporal_server import TemporalServer, serving, temporal_fixture, waiting
from temporalio.service import ConnectConfig, RPCError, RPCStatusCode
from test_probe38d_update_caps import question, reads

from agent.durable.store import NotClaimable
from agent.result import StopReason
from agent.temporal.client import UPDATE_RPC, PromptCaps
from agent.temporal.workflow import MAX_IN_FLIGHT_UPDATES

pytestmark = pytest.mark.slow

temporal = temporal_fixture()

PROMPT_S = 3.0  # a refused reply's answer, on a loaded machine (the SDK's retries took about 14 s)


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


class Answering:
    """A service client whose calls fail with `failures` in turn, then answer: each call's `retry` kept."""

    def __init__(self, *failures: RPCError) -> None:
        self.config = ConnectConfig(target_host="127.0.0.1:1")
        self.failures, self.retries = list(failures), list[bool]()

    async def _rpc_call(self, rpc: str, req: Any, resp_type: Any, *, retry: bool, **options: Any) -> str:
        self.retries.append(retry)
        if self.failures:
            raise self.failures.pop(0)
        return "answered"


def sent(inner: Answering, rpc: str = UPDATE_RPC, retry: bool = True) -> str:
    caps = PromptCaps(inner)  # type: ignore[arg-type]  # the calls PromptCaps makes, and nothing else
    return asyncio.run(
        caps._rpc_call(rpc, None, None, service="workflow", retry=retry, metadata={}, timeout=None)
    )


CAP = RPCError(
    "limit on number of concurrent in-flight updates has been reached (10)",
    RPCStatusCode.RESOURCE_EXHAUSTED,
    b"",
)


def test_an_update_the_cap_refuses_is_sent_once_without_retries() -> None:
    inner = Answering(CAP)
    with pytest.raises(RPCError, match="in-flight updates"):
        sent(inner)
    assert inner.retries == [False]


@pytest.mark.parametrize(
    "failure",
    [
        RPCError("connection refused", RPCStatusCode.UNAVAILABLE, b""),
        RPCError("namespace rate limit exceeded", RPCStatusCode.RESOURCE_EXHAUSTED, b""),  # not the cap
    ],
)
def test_an_update_that_fails_otherwise_is_sent_again_with_the_sdks_retries(failure: RPCError) -> None:
    inner = Answering(failure)
    assert sent(inner) == "answered" and inner.retries == [False, True]


def test_every_other_call_goes_through_as_it_is() -> None:
    inner = Answering()
    assert sent(inner, rpc="describe_workflow_execution") == "answered" and inner.retries == [True]
    assert sent(inner, retry=False) == "answered" and inner.retries == [True, False]
