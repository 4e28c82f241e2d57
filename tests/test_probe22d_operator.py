"""probe22d: an Endstate run on Temporal as an operator meets it with Temporal's own tools (`temporal
workflow terminate`): the run reads as what it is everywhere, never as its last segment's stop, and
every command on it says so in one line, against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import threading
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.testclient import TestClient
from temporal_server import (
    TemporalServer,
    cli_env,
    endstate,
    serving,
    temporal_cli,
    temporal_fixture,
    waiting,
)

from agent import Agent, Budget, tool
from agent.durable.runner import Catalog
from agent.durable.store import NotClaimable, RunStatus
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import StopReason
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.temporal import TemporalRuns
from agent.temporal.service import Bridge, TemporalRunner

pytestmark = pytest.mark.slow

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOCAL = "http://127.0.0.1:8000"
GO = threading.Event()  # `slow` waits for it: the test acts on the run while the tool is in flight
IN_FLIGHT = threading.Event()  # set once `slow` runs


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay `amount` (a person approves each payment)."""
    return f"paid {amount}"


@tool(timeout=None)
def slow(n: int) -> str:
    """A tool still working when the operator acts."""
    IN_FLIGHT.set()
    GO.wait(timeout=120)
    return f"done {n}"


def payer(state: dict[str, Any]) -> Agent:
    script = [[call("pay", amount=7)], [finish("done", "paid")]]
    return Agent(name="payer", model=ScriptedModel(script), tools=[pay], budget=Budget(max_turns=6))


def worker_agent(state: dict[str, Any]) -> Agent:
    script = [[call("slow", n=1)], [finish("done", "worked")]]
    return Agent(name="worker", model=ScriptedModel(script), tools=[slow], budget=Budget(max_turns=6))


temporal = temporal_fixture()


@contextlib.asynccontextmanager
async def worker(server: TemporalServer) -> AsyncIterator[TemporalRuns]:
    catalog = Catalog()
    catalog.register("payer", payer)
    catalog.register("worker", worker_agent)
    async with serving(server, catalog) as runs:
        yield runs


def terminate(server: TemporalServer, run_id: str, reason: str) -> None:
    """What an operator types: `temporal workflow terminate -w RUN_ID --reason ...`."""
    argv = [temporal_cli(), "workflow", "terminate", "-w", run_id, "--reason", reason]
    subprocess.run([*argv, "--address", server.address], check=True, capture_output=True, timeout=60)


def cli(server: TemporalServer, runs: TemporalRuns, *argv: str) -> subprocess.CompletedProcess[str]:
    where = ["--temporal", server.address, "--task-queue", runs.task_queue]
    return subprocess.run(endstate(*argv, *where), capture_output=True, text=True, env=cli_env(), timeout=120)


def test_a_waiting_run_an_operator_terminates_reads_as_terminated_and_every_reply_says_so(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        async with worker(temporal) as runs:
            run_id = await runs.start("payer", "Pay the invoice", wait=False)
            assert isinstance(run_id, str)
            await waiting(runs, run_id)
            terminate(temporal, run_id, "stuck vendor")

            record = await runs.record(run_id)
            assert record is not None
            # was: `finished`, stopped by `need_help` (the last segment's end, which is no end at all)
            assert (record.status, record.stop_reason) == (RunStatus.FINISHED, StopReason.ERROR)
            assert "terminated" in record.note
            result = await runs.result(run_id)  # was: WorkflowFailureError out of the client
            assert (result.reason, result.error_type) == ("error", "workflow_terminated")
            assert "stuck vendor" in result.note and "cannot be resumed" in result.note
            assert result.turns == 1 and result.agent == "payer"
            for reply in (runs.approve(run_id), runs.answer(run_id, "yes"), runs.resume(run_id)):
                with pytest.raises(NotClaimable, match="ended as error"):
                    await reply

            for argv in (["approve", run_id], ["resume", run_id]):
                done = cli(temporal, runs, *argv)
                assert done.returncode == 2, done.stderr  # was: a traceback, exit 1
                assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
                assert "ended as error" in done.stderr
            listed = cli(temporal, runs, "runs")
            [line] = [line for line in listed.stdout.splitlines() if line.startswith(run_id)]
            assert "error" in line and "need_help" not in line

            bridge = Bridge()
            here = bridge.call(TemporalRuns.connect(temporal.address, task_queue=runs.task_queue))
            service = Service(TemporalRunner(here, bridge), Token(TOKEN), sweep_interval=3600)  # type: ignore[arg-type]
            try:
                with TestClient(create_app(service), base_url=LOCAL) as api:
                    shown = api.get(f"/runs/{run_id}", headers=AUTH).json()
                    assert (shown["status"], shown["stop_reason"]) == ("finished", "error")
                    approved = api.post(f"/runs/{run_id}/approve", headers=AUTH)
                    assert approved.status_code == 409, approved.text  # was: a bare 500
                    assert "ended as error" in approved.json()["error"]
            finally:
                bridge.close()
                bridge.loop.close()

    asyncio.run(scenario())


def test_a_start_waiting_on_a_run_an_operator_terminates_ends_named_not_with_an_exception(
    temporal: TemporalServer,
) -> None:
    async def scenario() -> None:
        GO.clear()
        IN_FLIGHT.clear()
        try:
            async with worker(temporal) as runs:
                run_id = uuid.uuid4().hex
                started = asyncio.ensure_future(runs.start("worker", "Work", run_id=run_id))
                assert await asyncio.to_thread(IN_FLIGHT.wait, 60)
                terminate(temporal, run_id, "deploy rollback")
                result = await asyncio.wait_for(started, 60)  # was: WorkflowFailureError
                assert (result.reason, result.error_type) == ("error", "workflow_terminated")
                assert "deploy rollback" in result.note
        finally:
            GO.set()

    asyncio.run(scenario())
