"""probe40b: a reply's update is sent first without retries through the SDK's public API only.

`PromptCaps` overrode temporalio's private `ServiceClient._rpc_call` to send an update once without retries
(a reply refused by Temporal's cap of 10 updates in flight is told so at once, not after ~14 s of the SDK's
retries): an SDK upgrade could break that silently. It now sends the update's first attempt on a second
connection to the same server made with `RetryConfig` (one attempt), and any failure but the cap again on
the client's own connection, under the same update id. The rule call by call (handles that record what
they are sent), and the connection against a real Temporal Server: one per client, kept for its life.
The refusal's time against the real cap: tests/test_probe39c_update_cap_prompt.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import temporal_agents
from temporal_server import TemporalServer, serving, temporal_fixture, waiting
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode
from test_probe38d_update_caps import question

from agent.result import StopReason
from agent.temporal.client import ONE_ATTEMPT, _sent_promptly

CAP = RPCError(
    "limit on number of concurrent in-flight updates has been reached (10)",
    RPCStatusCode.RESOURCE_EXHAUSTED,
    b"",
)


class Handle:
    """A workflow handle whose updates fail with `failures` in turn, then answer: each one's id kept."""

    def __init__(self, *failures: Exception) -> None:
        self.failures, self.sent = list(failures), list[tuple[str, list[Any], str]]()

    async def execute_update(self, update: str, *, args: list[Any], id: str) -> str:
        self.sent.append((update, args, id))
        if self.failures:
            raise self.failures.pop(0)
        return "answered"


def sent(once: Handle, retried: Handle) -> str:
    return asyncio.run(_sent_promptly(once, retried, "answer", ["3", False]))  # type: ignore[arg-type]


def test_an_update_the_cap_refuses_is_sent_once_and_raised() -> None:
    once, retried = Handle(CAP), Handle()
    with pytest.raises(RPCError, match="in-flight updates"):
        sent(once, retried)
    assert len(once.sent) == 1 and retried.sent == []


@pytest.mark.parametrize(
    "failure",
    [
        RPCError("connection refused", RPCStatusCode.UNAVAILABLE, b""),
        RPCError("namespace rate limit exceeded", RPCStatusCode.RESOURCE_EXHAUSTED, b""),  # not the cap
        RuntimeError("Failed client connect: Server connection error"),  # the connection, down at first
    ],
)
def test_an_update_that_fails_otherwise_is_sent_again_with_retries_under_the_same_id(
    failure: RPCError,
) -> None:
    once, retried = Handle(failure), Handle()
    assert sent(once, retried) == "answered"
    assert once.sent == retried.sent and len(retried.sent) == 1  # the same update, the same id: taken once


def test_an_update_taken_at_once_is_sent_once() -> None:
    once, retried = Handle(), Handle()
    assert sent(once, retried) == "answered" and len(once.sent) == 1 and retried.sent == []


temporal = temporal_fixture()


@pytest.mark.slow
def test_one_connection_without_retries_serves_every_reply_of_a_client(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with serving(temporal, temporal_agents.catalog()) as runs:
            first = await runs.prompt.connection()
            assert first is not runs.client and isinstance(first, Client)
            config = first.service_client.config
            assert config.retry_config == ONE_ATTEMPT  # one attempt: in Temporal's core 0 would be no limit
            assert config.target_host == runs.client.service_client.config.target_host
            assert first.namespace == runs.client.namespace
            for n in range(3):  # three runs, each asked and answered: the same connection each time
                run_id = str(await runs.start("counter", f"Count {n}", state=question(tmp_path), wait=False))
                await waiting(runs, run_id)
                result = await asyncio.wait_for(runs.answer(run_id, "3"), 60)
                assert result.reason is StopReason.SUCCESS, result.note
            assert await runs.prompt.connection() is first
            runs.client.api_key = "rotated"  # set on the client since: the connection takes it too
            assert (await runs.prompt.connection()).api_key == "rotated"

    asyncio.run(scenario())
