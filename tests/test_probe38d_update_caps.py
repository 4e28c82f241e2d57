"""probe38d: Temporal's caps on a run's updates, against a real Temporal Server (the `temporal` dev server).

Temporal takes at most 10 updates in flight on one execution, and 2,000 in all (lowered to 40 here, so the
test is quick). A reply refused for either was "Temporal did not answer ... it is down" (a 503, after the
SDK's 14 s of retries) or "Temporal refused the call" (a 400): it is now `NotClaimable` (HTTP 409) naming the
cap and what to do. And ten reads waiting on a segment that only a reply can begin (a run waiting for a
person) kept every reply out: the workflow now refuses the read that would leave the reply no room.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
import temporal_agents
from temporal_server import TemporalServer, serving, temporal_fixture, waiting
from temporalio.client import (
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer
from test_probe20a_temporal_down import AUTH, Served, _status, _worker_on

from agent.durable.store import NotClaimable
from agent.result import StopReason
from agent.temporal import TemporalRuns
from agent.temporal import workflow as run_workflow
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import MAX_IN_FLIGHT_UPDATES, READS_MAKE_ROOM, EndstateRun

pytestmark = pytest.mark.slow

TOTAL = 40  # the server's `history.maxTotalUpdates` here (2,000 by default)


class CappedServer(TemporalServer):
    extra_args = ("--dynamic-config-value", f"history.maxTotalUpdates={TOTAL}")


temporal = temporal_fixture(make=CappedServer)


def question(folder: Path, **more: Any) -> dict[str, Any]:
    return {"script": "question", "dir": str(folder), **more}


async def reads(runs: TemporalRuns, run_id: str, n: int, count: int) -> list[WorkflowUpdateHandle[Any] | str]:
    """`count` reads waiting on segment `n`, each its handle once accepted, or the refusal's type and text."""
    handle = runs.client.get_workflow_handle(run_id)
    out: list[WorkflowUpdateHandle[Any] | str] = []
    for _ in range(count):
        read = await handle.start_update("segment", n, wait_for_stage=WorkflowUpdateStage.ACCEPTED)
        try:  # a refusal is known with the start (no call is made); a read taken waits for its segment
            await asyncio.wait_for(read.result(), 0.2)
        except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):  # cut by the wait, as it waits
            out.append(read)
        except WorkflowUpdateFailedError as exc:
            assert isinstance(exc.cause, ApplicationError), exc
            out.append(f"{exc.cause.type}: {exc.cause.message}")
        else:
            raise AssertionError(f"segment {n} ended already")
    return out


def test_reads_waiting_on_a_reply_leave_room_for_the_reply(temporal: TemporalServer, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(temporal, temporal_agents.catalog()) as runs:
            run_id = str(await runs.start("counter", "Count", state=question(tmp_path), wait=False))
            await waiting(runs, run_id)
            read = await reads(runs, run_id, 2, MAX_IN_FLIGHT_UPDATES + 2)
            taken = [r for r in read if not isinstance(r, str)]
            refused = [r for r in read if isinstance(r, str)]
            assert len(taken) == MAX_IN_FLIGHT_UPDATES - 1, read  # was: 10 taken, every reply then refused
            assert len(refused) == 3 and all(
                r.startswith("NotClaimable: segment 2 begins only once") for r in refused
            )
            assert f"at most {MAX_IN_FLIGHT_UPDATES} updates in flight" in refused[0], refused[0]
            result = await asyncio.wait_for(runs.answer(run_id, "3"), 60)  # the room left
            assert result.reason is StopReason.SUCCESS, result.note
            ended = [await asyncio.wait_for(h.result(), 30) for h in taken]  # the reads end with the run
            assert {e["reason"] for e in ended} == {"success"}

    asyncio.run(scenario())


def test_reads_taken_while_the_run_ran_make_room_for_the_reply_once_it_asks(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    flag = tmp_path / "hold.flag"  # the first count waits while it exists: the run runs, reads are taken
    flag.write_text("hold")

    async def scenario() -> None:
        async with serving(temporal, temporal_agents.catalog()) as runs:
            state = question(tmp_path, hold=str(flag), hold_at=1)
            run_id = str(await runs.start("counter", "Count", state=state, wait=False))
            read = await reads(runs, run_id, 2, MAX_IN_FLIGHT_UPDATES)
            assert not [r for r in read if isinstance(r, str)], read  # all taken: the run was running
            flag.unlink()  # the run asks: its reads now wait for a reply, and leave it no room
            await waiting(runs, run_id)
            result = await asyncio.wait_for(runs.answer(run_id, "3"), 60)  # was: refused, Temporal's cap
            assert result.reason is StopReason.SUCCESS, result.note
            ended = await asyncio.gather(
                *(r.result() for r in read if not isinstance(r, str)), return_exceptions=True
            )
            refused = [e for e in ended if isinstance(e, WorkflowUpdateFailedError)]
            assert len(refused) == 1 and isinstance(refused[0].cause, ApplicationError), ended  # the newest
            assert (
                refused[0].cause.type == "NotClaimable" and "the reply needs one" in refused[0].cause.message
            )
            assert isinstance(ended[-1], WorkflowUpdateFailedError), ended
            assert [e["reason"] for e in ended[:-1]] == ["success"] * (MAX_IN_FLIGHT_UPDATES - 1)
            assert await replay_failure(runs, run_id) is None

    try:
        asyncio.run(scenario())
    finally:
        flag.unlink(missing_ok=True)


def test_a_run_whose_reads_kept_its_reply_out_before_they_made_room_replays_as_it_ran(
    temporal: TemporalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flag = tmp_path / "hold.flag"
    flag.write_text("hold")
    patched = run_workflow.workflow.patched

    async def scenario() -> None:
        async with serving(temporal, temporal_agents.catalog()) as runs:
            with monkeypatch.context() as before:  # the code before: its reads kept waiting, no marker
                before.setattr(
                    run_workflow.workflow, "patched", lambda p: p != READS_MAKE_ROOM and patched(p)
                )
                state = question(
                    tmp_path, hold=str(flag), hold_at=1, wait=2
                )  # no reply: the deadline ends it
                run_id = str(await runs.start("counter", "Count", state=state, wait=False))
                read = await reads(runs, run_id, 2, MAX_IN_FLIGHT_UPDATES)
                flag.unlink()
                result = await asyncio.wait_for(runs.result(run_id), 60)
                assert result.reason is not StopReason.SUCCESS and result.turns == 2, result
                ended = await asyncio.gather(*(r.result() for r in read if not isinstance(r, str)))
                assert len(ended) == MAX_IN_FLIGHT_UPDATES  # each waited to the run's end
            assert await replay_failure(runs, run_id) is None  # by this code: the reads wait as they did

    try:
        asyncio.run(scenario())
    finally:
        flag.unlink(missing_ok=True)


async def replay_failure(runs: TemporalRuns, run_id: str) -> Exception | None:
    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


def test_a_reply_past_the_in_flight_cap_is_a_409_naming_it(temporal: TemporalServer, tmp_path: Path) -> None:
    flag = tmp_path / "hold.flag"  # the first count waits while it exists: the run is running, not waiting
    flag.write_text("hold")
    served = Served(temporal.address, "capped")
    with served as http:
        stop = _worker_on(served, "capped")
        try:
            start = {
                "agent": "counter",
                "task": "Count",
                "state": question(tmp_path, hold=str(flag), hold_at=1),
            }
            run_id = http.post("/runs", json=start, headers=AUTH).json()["run_id"]
            read = served.bridge.call(reads(served.runs, run_id, 1, MAX_IN_FLIGHT_UPDATES))  # all taken
            assert not [r for r in read if isinstance(r, str)], read
            refused = http.post(f"/runs/{run_id}/answer", json={"answer": "3"}, headers=AUTH)
            assert refused.status_code == 409, refused.text  # was a 503 "Temporal ... is down"
            said = refused.json()["error"]
            assert "cap on updates in flight on one run is reached" in said and "nothing was changed" in said
            threading.Thread(target=flag.unlink).start()  # the count ends, and so do the reads
            asked = _status(http, run_id, "waiting")
            body = {"answer": "3", "segments": asked["segments"]}
            assert http.post(f"/runs/{run_id}/answer", json=body, headers=AUTH).status_code == 202
            assert _status(http, run_id, "finished")["stop_reason"] == "success"
        finally:
            flag.unlink(missing_ok=True)
            stop()


def test_a_reply_past_the_total_cap_is_a_409_and_a_resume_takes_it(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    served = Served(temporal.address, "spent")
    with served as http:
        stop = _worker_on(served, "spent")
        try:
            start = {"agent": "counter", "task": "Count", "state": question(tmp_path)}
            run_id = http.post("/runs", json=start, headers=AUTH).json()["run_id"]
            asked = _status(http, run_id, "waiting")
            handle = served.runs.client.get_workflow_handle(run_id)
            for _ in range(TOTAL):  # reads that end at once, each an update in the execution's count
                served.bridge.call(handle.execute_update("segment", 1))
            body = {"answer": "3", "segments": asked["segments"]}
            refused = http.post(f"/runs/{run_id}/answer", json=body, headers=AUTH)
            assert refused.status_code == 409, refused.text  # was a 400 "Temporal refused the call"
            said = refused.json()["error"]
            assert "cap on updates in one execution is reached" in said and "resume" in said, said
            with pytest.raises(NotClaimable, match="Cancel the run and resume it"):
                served.bridge.call(served.runs.answer(run_id, "3"))
            served.bridge.call(served.runs.cancel(run_id))  # as the refusal says
            _status(http, run_id, "cancelled")
            resumed = served.bridge.call(served.runs.resume(run_id))
            assert resumed.reason is StopReason.NEED_HELP, resumed.note  # the same question, waited for again
            result = served.bridge.call(served.runs.answer(run_id, "3"))
            assert result.reason is StopReason.SUCCESS, result.note
        finally:
            stop()
