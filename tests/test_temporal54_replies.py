"""temporal54: a reply or a resume that no worker would carry on is told so at once, and nothing is sent.

Before, over `serve --temporal`: an answer to a run whose queue no worker polls waited the service's 30 s,
then a 503 said only that no worker took it, while Temporal held an update nobody was told about (and the
command, `TemporalRuns.answer`, waited for ever); a resume (`POST /runs/{id}/resume`) of a run whose agent
no worker has was a 202, and only the run's note said later that it was not resumed. Over a store both are
a 503 at once ("no runner has this agent"). Now the client reads Temporal's record of the queue's pollers
first: with none (a worker not seen for 90 s by the client's clock, here set ten minutes ahead so the
worker that just stopped is long gone to it) the reply or resume is refused at once (`NotInCatalog`, HTTP
503), nothing sent; a resume waits for a worker to check it can go on, and one that cannot is a 503 saying
why, the run left cancelled. The same reply, sent once a worker polls, is taken.

Against a real Temporal Server (the `temporal` dev server).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cleanup_counts import Stop
from starlette.testclient import TestClient
from temporal_server import TemporalServer, serving, temporal_fixture, waiting

import agent.temporal.client as temporal_client
import agent.temporal.service as temporal_service
from agent import Agent, Budget, HelpPolicy
from agent.durable.catalog import Catalog
from agent.durable.runner import NotInCatalog
from agent.durable.store import RunStatus
from agent.models.scripted import ScriptedModel, finish
from agent.result import StopReason
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.temporal import TemporalRuns
from agent.temporal.service import Bridge, TemporalRunner

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WAIT_S = 60.0  # generous: a loaded CI machine
AHEAD_S = 600.0  # a clock this far ahead: every poller of the queue is long gone to it
NO_WORKER = "no worker polls task queue"


def asker(state: dict[str, Any]) -> Agent:
    """Asks a person, then finishes once answered."""
    script = [[finish("need_help", "Which one?")], [finish("done", "answered")]]
    return Agent(
        "asker", ScriptedModel(script), budget=Budget(max_turns=3), help=HelpPolicy(wait_seconds=3600)
    )


def deployed() -> Catalog:
    c = Catalog()
    c.register("asker", asker, cancel=Stop)
    return c


def without_asker() -> Catalog:
    c = Catalog()
    c.register("other", asker)
    return c


def served(address: str, queue: str, ahead: float, use: Callable[[TestClient], Any]) -> Any:
    """`use` the HTTP API of `endstate serve --temporal` over `queue`, its client's clock `ahead`."""
    bridge = Bridge()
    try:
        runs = bridge.call(TemporalRuns.connect(address, task_queue=queue))
        runs.clock = lambda: time.time() + ahead
        service = Service(TemporalRunner(runs, bridge), Token(TOKEN), sweep_interval=3600)
        app = create_app(service)
        with TestClient(app, base_url="http://127.0.0.1:8000", raise_server_exceptions=False) as api:
            return use(api)
    finally:
        bridge.close()
        bridge.loop.close()


def post(path: str, body: dict[str, Any]) -> Callable[[TestClient], tuple[int, dict[str, Any]]]:
    def use(api: TestClient) -> tuple[int, dict[str, Any]]:
        got = api.post(path, json=body, headers=AUTH)
        return got.status_code, got.json()

    return use


async def asked(server: TemporalServer, folder: Path, cancelled: bool = False) -> tuple[TemporalRuns, str]:
    """A run of `asker` waiting for a person (or cancelled while it waited), its worker stopped since."""
    queue = f"t54-{uuid.uuid4().hex[:8]}"
    async with serving(server, deployed(), queue) as runs:
        run_id = await runs.start("asker", "Pick.", state={"dir": str(folder)}, wait=False)
        await waiting(runs, run_id)
        if cancelled:
            await runs.cancel(run_id)
            assert (await asyncio.wait_for(runs.result(run_id), WAIT_S)).reason is StopReason.CANCELLED
    return runs, run_id


def test_an_answer_no_worker_would_take_is_a_503_at_once_not_sent_then_taken_once_one_polls(
    temporal: TemporalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(temporal_service, "CALL_TIMEOUT_S", 5.0)  # the wait before: short, to fail fast

    async def scenario() -> None:
        runs, run_id = await asked(temporal, tmp_path)
        before = await runs.record(run_id)
        assert before is not None
        body = {"answer": "the blue one", "segments": before.segments, "by": "ana"}
        path = f"/runs/{run_id}/answer"
        status, said = await asyncio.to_thread(
            served, temporal.address, runs.task_queue, AHEAD_S, post(path, body)
        )
        assert status == 503, said  # was a 503 only after the service's wait, saying no worker took it
        assert NO_WORKER in said["error"] and "was not sent" in said["error"], said
        assert runs.task_queue in said["error"] and "endstate worker" in said["error"], said
        record = await runs.record(run_id)
        assert record is not None and record.status is RunStatus.WAITING
        assert (record.segments, record.last_answer_by) == (before.segments, None)  # nothing was sent
        runs.clock = lambda: time.time() + AHEAD_S
        with pytest.raises(NotInCatalog, match=NO_WORKER):  # was: waited for ever
            await asyncio.wait_for(runs.answer(run_id, "the blue one"), WAIT_S)
        async with serving(temporal, deployed(), runs.task_queue):  # a worker polls again
            status, said = await asyncio.to_thread(
                served, temporal.address, runs.task_queue, 0.0, post(path, body)
            )
            assert status == 202, said
            done = await asyncio.wait_for(runs.result(run_id), WAIT_S)
        assert (done.reason, done.output) == (StopReason.SUCCESS, "answered")

    asyncio.run(scenario())


@pytest.mark.parametrize("workers", ["none", "without-the-agent"])
def test_a_resume_no_worker_can_carry_on_is_a_503_saying_why_the_run_left_cancelled(
    temporal: TemporalServer, tmp_path: Path, workers: str
) -> None:
    async def scenario() -> None:
        runs, run_id = await asked(temporal, tmp_path, cancelled=True)
        path = f"/runs/{run_id}/resume"
        if workers == "none":
            status, said = await asyncio.to_thread(
                served, temporal.address, runs.task_queue, AHEAD_S, post(path, {})
            )
            assert NO_WORKER in said.get("error", ""), said
        else:
            async with serving(temporal, without_asker(), runs.task_queue):
                status, said = await asyncio.to_thread(
                    served, temporal.address, runs.task_queue, 0.0, post(path, {})
                )
            assert "'asker'" in said.get("error", "") and "resume it again" in said["error"], said
        assert status == 503, said  # was a 202: only the run's note said, later, that it was not resumed
        record = await runs.record(run_id)
        assert record is not None and record.status is RunStatus.CANCELLED
        async with serving(temporal, deployed(), runs.task_queue):  # deployed: the same resume is taken
            status, said = await asyncio.to_thread(
                served, temporal.address, runs.task_queue, 0.0, post(path, {})
            )
            assert status == 202, said
            await waiting(runs, run_id)

    asyncio.run(scenario())


def test_a_resume_no_worker_takes_up_in_time_is_a_202_saying_it_waits_for_one(
    temporal: TemporalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the wait for a worker's check, short (raising=False: the code before had none)
    monkeypatch.setattr(temporal_client, "RESUME_CHECK_S", 3.0, raising=False)

    async def scenario() -> None:
        runs, run_id = await asked(temporal, tmp_path, cancelled=True)
        path = f"/runs/{run_id}/resume"
        behind = -AHEAD_S  # a clock behind: the worker that just stopped still looks as if it polls
        status, said = await asyncio.to_thread(
            served, temporal.address, runs.task_queue, behind, post(path, {})
        )
        assert status == 202, said
        note = said.get("note", "")  # was: no word that no worker had taken it up
        assert "no worker has taken it up yet" in note and runs.task_queue in note, said
        async with serving(temporal, deployed(), runs.task_queue):  # one comes: the resumed run goes on
            await waiting(runs, run_id)

    asyncio.run(scenario())


def test_a_worker_counts_from_its_start_and_none_on_a_queue_never_polled(temporal: TemporalServer) -> None:
    from agent.temporal._pollers import unpolled

    async def scenario() -> tuple[str | None, str | None, str | None]:
        queue = f"t54-p-{uuid.uuid4().hex[:8]}"
        runs = await TemporalRuns.connect(temporal.address, task_queue=queue)
        never = await unpolled(runs.client, queue, time.time)
        async with serving(temporal, deployed(), queue):
            started = await unpolled(runs.client, queue, time.time)  # its first poll: counted at once
        gone = await unpolled(runs.client, queue, lambda: time.time() + AHEAD_S)
        return never, started, gone

    never, started, gone = asyncio.run(scenario())
    assert never is not None and "none on record" in never, never
    assert started is None
    assert gone is not None and "the last one" in gone, gone
