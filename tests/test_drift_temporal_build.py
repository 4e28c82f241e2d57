"""drift on Temporal: a worker redeployed with a catalog entry whose build now raises (a dependency the
new release forgot, a key the state of older runs lacks) while a run waits for a person.

The reply is checked by the `endstate.ready` activity before it is taken. Before, a build that raised
anything but a `ConfigError` failed that activity as a plain error, which Temporal tried again for the
check's whole 20 s (a traceback in the worker's log each time), and the person was then told only the
exception's own words ("No module named 'billing_sdk', then reply again"), not that the worker could not
set up the run's agent. Now the check refuses at once, as the store's runner does, saying the agent could
not be set up and what its build raised; the run still waits and takes the reply once the worker is fixed.
The same check refuses a reply while the worker's agent calls a model the model table says is retired.
Runs against a real Temporal Server (the `temporal` dev server).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import pytest
from temporal_server import TemporalServer, temporal_fixture
from test_temporal50_not_deployed import WAIT_S, connected, deployed, payer, worker

from agent import Agent
from agent.durable.catalog import AgentUnavailable, Catalog
from agent.durable.store import RunStatus
from agent.models.anthropic import AnthropicModel
from agent.result import RunResult, StopReason

temporal = temporal_fixture()


def broken_payer(state: dict[str, Any]) -> Agent:
    """The payer as a redeploy left it: its build imports what the release forgot to install."""
    raise ImportError("No module named 'billing_sdk'")


def broken() -> Catalog:
    c = Catalog()
    c.register("payer", broken_payer)
    return c


@pytest.mark.slow
def test_an_approval_a_worker_cannot_build_the_agent_for_is_refused_at_once_saying_so(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        runs = await connected(temporal)
        async with worker(runs, deployed()):
            asked = await asyncio.wait_for(runs.start("payer", "Pay."), WAIT_S)
        assert isinstance(asked, RunResult) and asked.reason is StopReason.NEED_HELP
        async with worker(runs, broken()):
            began = time.monotonic()
            with pytest.raises(AgentUnavailable) as refused:
                await asyncio.wait_for(runs.approve(asked.run_id), WAIT_S)
            took = time.monotonic() - began
            said = str(refused.value)
            assert "agent 'payer' could not be set up" in said and "ImportError" in said, said
            assert "billing_sdk" in said and "still waits" in said, said
            assert took < 15, f"refused after {took:.1f} s: the build's failure was tried again"
            record = await runs.record(asked.run_id)
            assert record is not None and record.status is RunStatus.WAITING
        async with worker(runs, deployed()):  # fixed: the same approval is taken
            done = await asyncio.wait_for(runs.approve(asked.run_id), WAIT_S)
        assert (done.reason, done.output) == (StopReason.SUCCESS, "paid")

    asyncio.run(scenario())


def payer_on_a_retired_model(state: dict[str, Any]) -> Agent:
    """The payer as deployed once its model's retirement date came: the Claude API refuses every call."""
    model = AnthropicModel("claude-sonnet-4-5", api_key="sk-ant-test", base_url="http://127.0.0.1:9")
    return dataclasses.replace(payer(state), model=model)


@pytest.mark.slow
def test_an_approval_on_a_worker_whose_agent_calls_a_retired_model_is_refused_before_it_is_taken(
    temporal: TemporalServer,
) -> None:
    """Before, the approval was taken and the first model call failed (404): the run ended `error` for
    good, the approval spent. As over a store, it is refused and the run waits for a served model."""

    async def scenario() -> None:
        runs = await connected(temporal)
        async with worker(runs, deployed()):
            asked = await asyncio.wait_for(runs.start("payer", "Pay."), WAIT_S)
        assert isinstance(asked, RunResult) and asked.reason is StopReason.NEED_HELP
        retired = Catalog()
        retired.register("payer", payer_on_a_retired_model)
        async with worker(runs, retired):
            with pytest.raises(AgentUnavailable, match=r"claude-sonnet-4-5 is retired.*still waits"):
                await asyncio.wait_for(runs.approve(asked.run_id), WAIT_S)
            record = await runs.record(asked.run_id)
            assert record is not None and record.status is RunStatus.WAITING
        async with worker(runs, deployed()):  # a served model deployed: the same approval is taken
            done = await asyncio.wait_for(runs.approve(asked.run_id), WAIT_S)
        assert (done.reason, done.output) == (StopReason.SUCCESS, "paid")

    asyncio.run(scenario())
