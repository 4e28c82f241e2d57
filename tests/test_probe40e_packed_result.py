"""probe40e: a stopped run whose snapshot is over a payload can still be resumed or extended on Temporal.

A workflow's result carried its snapshot only when it fit in a payload (1.5 MB): a long run with big tool
results that stopped `cancelled` or at a limit could never go on ("cannot be resumed or extended"). Now the
result keeps such a snapshot zlib-compressed under `_wire.PACKED`, `snapshot` None (what a client from
before reads: a result without one), gated by `workflow.patched(PACKED_RESULT)`; the client unpacks it and
starts the resumed execution with it packed (as a hand-over does). Against a real Temporal Server.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from temporal_server import TemporalServer, serving
from temporalio.client import Client
from temporalio.worker import Replayer
from test_probe40b_packed_hand_over import PAGES, count, page, starts
from test_temporal import calls_log, queue, temporal  # noqa: F401  (temporal: the server fixture)

from agent import Agent, Budget, RunContext, tool
from agent.budget import Extension
from agent.durable.catalog import Catalog
from agent.durable.store import NotClaimable
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import LimitKind, RunResult, StopCause, StopReason
from agent.snapshot import Snapshot
from agent.temporal import _wire as w
from agent.temporal import workflow as run_workflow
from agent.temporal.client import TemporalRuns
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import PACKED_RESULT, EndstateRun
from agent.usage import Usage

BIG = 120_000  # characters a page: 20 pages are a snapshot over Temporal's 2 MiB blob limit
GATES: dict[str, tuple[asyncio.Event, asyncio.Event]] = {}  # a run's held call: (held, let go)
HELD: list[str] = []  # the runs whose held call began, once a call


@tool
async def hold(ctx: RunContext) -> str:
    """Say it is held, then wait until the test lets it go (the run is cancelled meanwhile)."""
    held, go = GATES[ctx.run_id]
    HELD.append(ctx.run_id)
    held.set()
    await go.wait()
    return "held"


def build(state: dict[str, Any]) -> Agent:
    """PAGES pages of `size` characters, then (with `hold`) a held call, then a count and the answer; at
    most PAGES turns unless `turns` says otherwise."""
    size, noise = int(state["size"]), bool(state.get("noise"))
    steps = [[call("page", n=i, size=size, noise=noise)] for i in range(1, PAGES + 1)]
    held = [[call("hold")]] if state.get("hold") else []
    return Agent(
        name="reader",
        model=ScriptedModel([*steps, *held, [call("count", n=1)], [finish("done", "Read and counted.")]]),
        instructions="Read every page, then count.",
        tools=[page, count, hold],
        budget=Budget(max_turns=int(state.get("turns", PAGES)), max_seconds=600),
        task_type="reading",
    )


def catalog() -> Catalog:
    c = Catalog()
    c.register("reader", build)
    return c


async def raw_result(client: Client, run_id: str, execution: str) -> dict[str, Any]:
    """An execution's result as Temporal holds it (what any client of any release decodes)."""
    out: dict[str, Any] = await client.get_workflow_handle(run_id, run_id=execution).result()
    return out


async def replays(client: Client, run_id: str, execution: str) -> Exception | None:
    """Why the execution does not replay under this code, or None."""
    history = await client.get_workflow_handle(run_id, run_id=execution).fetch_history()
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


async def cancel_taken(client: Client, run_id: str) -> None:
    """Return once the workflow has taken the run's cancel (a workflow task completed after it), so that
    the held call ends after it."""
    while True:
        events = (await client.get_workflow_handle(run_id).fetch_history()).events
        asked = [
            i
            for i, e in enumerate(events)
            if e.HasField("workflow_execution_cancel_requested_event_attributes")
        ]
        if asked and any(e.HasField("workflow_task_completed_event_attributes") for e in events[asked[0] :]):
            return
        await asyncio.sleep(0.05)


async def first_execution(runs: TemporalRuns, run_id: str) -> str:
    described = await runs.client.get_workflow_handle(run_id).describe()
    return described.raw_description.workflow_execution_info.first_run_id


def older_result_from_json(data: dict[str, Any]) -> RunResult:
    """`_wire.result_from_json` as it was before this change (main at f49e752), verbatim."""
    fields = {f.name for f in dataclasses.fields(RunResult)}
    values = {k: v for k, v in data.items() if k in fields}
    values["usage"] = Usage.from_flat(data)
    values["reason"] = StopReason(data["reason"])
    values["limit"] = LimitKind(data["limit"]) if data.get("limit") else None
    values["cause"] = StopCause(data["cause"]) if data.get("cause") else None
    values["verifier_failures"] = tuple(data.get("verifier_failures") or ())
    values["suspension"] = w.suspension_from_json(data.get("suspension"))
    values["snapshot"] = Snapshot.from_json(data["snapshot"]) if data.get("snapshot") else None
    return RunResult(**values)


@pytest.mark.slow
def test_a_limit_stop_over_a_payload_is_kept_packed_and_extended_to_success(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog(), queue(), heartbeat_seconds=30.0) as runs:
            stopped = await runs.start("reader", "Read", state={"dir": str(tmp_path), "size": BIG})
            assert isinstance(stopped, RunResult)
            run_id = stopped.run_id
            assert (stopped.reason, stopped.limit, stopped.turns) == (
                StopReason.LIMIT,
                LimitKind.TURNS,
                PAGES,
            )
            first = await first_execution(runs, run_id)
            raw = (await raw_result(runs.client, run_id, first))["result"]
            assert raw["snapshot"] is None and w.PACKED in raw  # an older client reads no snapshot, as before
            ended = await runs.result(run_id)
            assert ended.snapshot is not None and ended.snapshot.usage.turns == PAGES
            assert w.payload_size(ended.snapshot.to_json()) > w.MAX_PAYLOAD_BYTES
            assert "cannot be resumed" not in ended.note and "kept zlib-compressed" in ended.note

            with monkeypatch.context() as older:  # a client of the release before: no crash, no snapshot
                older.setattr(w, "result_from_json", older_result_from_json)
                assert (await runs.result(run_id)).snapshot is None
                with pytest.raises(NotClaimable, match="kept no snapshot to resume from"):
                    await runs.resume(run_id, more=Extension(turns=5))

            done = await asyncio.wait_for(runs.resume(run_id, more=Extension(turns=5)), 120)
            assert done.reason is StopReason.SUCCESS and done.turns == PAGES + 2, done.note
            final = await runs.result(run_id)
            assert final.reason is StopReason.SUCCESS and final.output == "Read and counted."
            resumed = await first_execution(runs, run_id)  # the resumed execution (it may hand over since)
            [start] = await starts(runs.client, run_id, [resumed])
            assert start["snapshot"] == w.PACKED_IN_PLACE and w.payload_size(start) <= w.MAX_PAYLOAD_BYTES
            assert calls_log(tmp_path, run_id) == ["start 1", "end 1"]  # each call once
            assert await replays(runs.client, run_id, first) is None
            assert await replays(runs.client, run_id, resumed) is None

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_cancelled_run_over_a_payload_is_resumed_to_success_each_call_once(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        state = {"dir": str(tmp_path), "size": BIG, "hold": True, "turns": PAGES + 5}
        async with serving(temporal, catalog(), queue(), heartbeat_seconds=30.0) as runs:
            run_id = f"held-{queue()}"
            held, go = GATES[run_id] = (asyncio.Event(), asyncio.Event())
            await runs.start("reader", "Read", state=state, run_id=run_id, wait=False)
            await asyncio.wait_for(held.wait(), 120)  # the run reads every page, then is held
            await runs.cancel(run_id)
            await asyncio.wait_for(cancel_taken(runs.client, run_id), 60)
            go.set()  # the call in flight ends; the run stops before its next turn
            cancelled = await asyncio.wait_for(runs.result(run_id), 60)
            assert cancelled.reason is StopReason.CANCELLED and cancelled.turns == PAGES + 1, cancelled.note
            assert cancelled.snapshot is not None
            assert w.payload_size(cancelled.snapshot.to_json()) > w.MAX_PAYLOAD_BYTES
            done = await asyncio.wait_for(runs.resume(run_id), 120)
            assert done.reason is StopReason.SUCCESS and done.turns == PAGES + 3, done.note
            [start] = await starts(runs.client, run_id, [await first_execution(runs, run_id)])
            assert start["snapshot"] == w.PACKED_IN_PLACE and w.PACKED in start  # the resume's start
            assert calls_log(tmp_path, run_id) == ["start 1", "end 1"]
            assert HELD.count(run_id) == 1

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_snapshot_too_large_even_packed_is_left_out_and_says_it_cannot_be_resumed(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        state = {"dir": str(tmp_path), "size": 150_000, "noise": True}
        async with serving(temporal, catalog(), queue(), heartbeat_seconds=30.0) as runs:
            stopped = await runs.start("reader", "Read", state=state)
            assert isinstance(stopped, RunResult) and stopped.reason is StopReason.LIMIT, stopped.note
            ended = await runs.result(stopped.run_id)
            assert ended.snapshot is None and "cannot be resumed or extended" in ended.note, ended.note
            raw = await raw_result(runs.client, stopped.run_id, await first_execution(runs, stopped.run_id))
            assert w.PACKED not in raw["result"]
            with pytest.raises(NotClaimable, match="kept no snapshot to resume from"):
                await runs.resume(stopped.run_id, more=Extension(turns=5))

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_run_that_left_its_snapshot_out_before_packing_replays_as_it_ran(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    patched = run_workflow.workflow.patched

    async def scenario() -> None:
        with monkeypatch.context() as before:  # the code before: the snapshot left out, no marker
            before.setattr(run_workflow.workflow, "patched", lambda p: p != PACKED_RESULT and patched(p))
            async with serving(temporal, catalog(), queue(), heartbeat_seconds=30.0) as runs:
                stopped = await runs.start("reader", "Read", state={"dir": str(tmp_path), "size": BIG})
                assert isinstance(stopped, RunResult) and stopped.reason is StopReason.LIMIT
                first = await first_execution(runs, stopped.run_id)
                raw = (await raw_result(runs.client, stopped.run_id, first))["result"]
        assert raw["snapshot"] is None and w.PACKED not in raw and "cannot be resumed" in raw["note"]
        assert await replays(runs.client, stopped.run_id, first) is None  # by this code: as it ran

    asyncio.run(scenario())


def test_a_result_decodes_its_packed_snapshot_and_says_when_it_cannot(tmp_path: Path) -> None:
    result = build({"dir": str(tmp_path), "size": 10, "turns": 1}).run("Read")
    assert result.reason is StopReason.LIMIT and result.snapshot is not None
    data = {**w.result_json(result), "snapshot": None, w.PACKED: w.packed(result.snapshot.to_json())}
    unpacked = w.result_from_json(data).snapshot
    assert unpacked is not None and unpacked.to_json() == result.snapshot.to_json()
    assert older_result_from_json(data).snapshot is None  # what a client from before reads
    bad = w.result_from_json({**data, w.PACKED: "not base64!"})
    assert bad.snapshot is None and "packed snapshot (snapshot_zlib) could not be read" in bad.note
