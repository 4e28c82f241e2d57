"""audit12: a run on Temporal shows its state, and the inbox previews its pending call from it.

Before: every read over Temporal (`runs --json`, `pending --json`, `GET /runs`, `/pending`, the inbox) gave
a run's state as `{}` (visibility holds no state), where a store gives the run's own. The inbox builds the
run's agent from that state to preview a pending approval, so over Temporal an agent that needs its state
(the seed CI fixer: its scenario and work folder) showed "No preview: the agent could not be built here
(KeyError ...)" in place of what the call will do (the push's diff). Now the workflow publishes the run's
state in its memo as each segment ends with a snapshot (waiting, cancelled, at a limit; at most 64 KiB),
and the reads take it from there.

Against a real Temporal Server (the `temporal` dev server).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from starlette.testclient import TestClient
from temporal_server import TemporalServer, serving, temporal_fixture, waiting

from agent import Agent, Budget
from agent.durable.catalog import Catalog
from agent.durable.store import RunRecord, RunStatus
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import StopReason
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.temporal import TemporalRuns
from agent.temporal.service import Bridge, TemporalRunner
from agent.tools import tool

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
TOKEN = "test-token-0123456789abcdef"
STATE = {"repo": "/srv/repos/calc", "branch": "fix/add-cents"}
WAIT_S = 120.0  # generous: a loaded CI machine


def pusher(state: dict[str, Any]) -> Agent:
    """Asks to push the branch its state names; built without that state, it fails (as the seed agents)."""
    repo, branch = state["repo"], state["branch"]

    @tool(needs_approval=True, preview=lambda arguments: f"Push {arguments['branch']} of {repo}")
    def push(branch: str) -> str:
        """Push the branch."""
        return f"pushed {branch}"

    script = [[call("push", branch=branch)], [finish("done", "pushed")]]
    return Agent("pusher", ScriptedModel(script), tools=[push], budget=Budget(max_turns=4))


def catalog() -> Catalog:
    c = Catalog()
    c.register("pusher", pusher)
    return c


def test_a_waiting_run_shows_its_state_and_the_inbox_previews_its_pending_call(
    temporal: TemporalServer,
) -> None:
    queue = f"state-{uuid.uuid4().hex[:8]}"
    run_id = f"pusher-{uuid.uuid4().hex[:8]}"

    async def asks() -> None:
        async with serving(temporal, catalog(), queue) as runs:
            await runs.start("pusher", "push it", state=STATE, run_id=run_id, wait=False)
            await asyncio.wait_for(waiting(runs, run_id), WAIT_S)
            record = await runs.record(run_id)
            assert record is not None and record.status is RunStatus.WAITING
            assert record.state == STATE
            assert [r.state for r in await runs.pending()] == [STATE]

    asyncio.run(asks())
    bridge = Bridge()
    runs = bridge.call(TemporalRuns.connect(temporal.address, task_queue=queue))
    service = Service(TemporalRunner(runs, bridge, catalog()), Token(TOKEN), sweep_interval=3600)  # type: ignore[arg-type]
    try:
        with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as api:
            assert api.get(f"/runs/{run_id}").json()["state"] == STATE
            assert [r["state"] for r in api.get("/runs").json()["runs"]] == [STATE]
            signed = api.post(
                "/inbox/login", data={"token": TOKEN}, headers={"Origin": "http://127.0.0.1:8000"}
            )
            assert signed.status_code == 200, signed.text
            page = api.get("/inbox").text
            assert "Push fix/add-cents of /srv/repos/calc" in page, page
            assert "could not be built here" not in page
    finally:
        bridge.close()
        bridge.loop.close()


async def _finished(runs: TemporalRuns, run_id: str) -> RunRecord:
    """The run's record once visibility shows it finished (it lags the workflow's end a moment)."""
    while True:
        record = await runs.record(run_id)
        if record is not None and record.status is RunStatus.FINISHED:
            return record
        await asyncio.sleep(0.1)


def test_a_finished_run_keeps_no_state_of_an_earlier_segment(temporal: TemporalServer) -> None:
    """Its last segment kept no snapshot: the state published while it waited is taken back, not shown
    as if it were the run's last."""

    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            asked = await runs.start("pusher", "push it", state=STATE)
            assert asked.reason is StopReason.NEED_HELP
            assert (await runs.record(asked.run_id)).state == STATE  # type: ignore[union-attr]
            done = await runs.approve(asked.run_id)
            assert done.reason is StopReason.SUCCESS
            record = await asyncio.wait_for(_finished(runs, asked.run_id), WAIT_S)
            assert record.state == {}

    asyncio.run(scenario())
