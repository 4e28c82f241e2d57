"""probe40b: a run whose snapshot is too large for a payload continues as new with it packed (zlib).

A long run continues as new past its history bound from its snapshot (probe39a); a snapshot over a payload
(1.5 MB) could not be carried, and the run stayed in its execution, its history growing towards
`history_too_large`. Tool results are text: packed (zlib, base64) the snapshot fits, and the run hands over
(gated by `workflow.patched(PACKED_HAND_OVER)`). An older worker that takes such an execution reads the
snapshot left in place as one of a version it does not know and fails its workflow task (tried again),
never starting the task anew. Against a real Temporal Server.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import random
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from temporal_server import TemporalServer, serving
from temporalio.client import Client
from temporalio.worker import Replayer
from test_probe39a_continue_as_new import LOW, executions
from test_temporal import calls_log, queue, temporal  # noqa: F401  (temporal: the server fixture)

from agent import Agent, Budget, RunContext, SnapshotError, tool
from agent.durable.catalog import Catalog
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult, StopReason
from agent.snapshot import Snapshot
from agent.temporal import TemporalRuns, _registry
from agent.temporal import _wire as w
from agent.temporal import client as temporal_client
from agent.temporal import workflow as run_workflow
from agent.temporal._registry import WorkerSetup
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import PACKED_HAND_OVER, EndstateRun

PAGES = 20  # tool calls of `size` characters each, then a count, then the answer: 22 turns


@tool
def page(n: int, size: int, noise: bool = False) -> str:
    """Page n: `size` characters of one letter (text that packs well), or of noise (that packs badly)."""
    if noise:
        return base64.b64encode(random.Random(n).randbytes(size * 3 // 4)).decode()
    return f"page {n}: " + "x" * size


@tool
def count(ctx: RunContext, n: int) -> str:
    """Count to n (writes when it starts and when it is done, once a call)."""
    with (Path(ctx.state["dir"]) / f"{ctx.run_id}.log").open("a") as f:
        f.write(f"start {n}\nend {n}\n")
    return f"counted {n}"


def build(state: dict[str, Any]) -> Agent:
    size, noise = int(state["size"]), bool(state.get("noise"))
    steps = [[call("page", n=i, size=size, noise=noise)] for i in range(1, PAGES + 1)]
    return Agent(
        name="reader",
        model=ScriptedModel([*steps, [call("count", n=1)], [finish("done", "Read and counted.")]]),
        instructions="Read every page, then count.",
        tools=[page, count],
        budget=Budget(max_turns=PAGES + 5, max_seconds=600),
        task_type="reading",
    )


def catalog() -> Catalog:
    c = Catalog()
    c.register("reader", build)
    return c


async def starts(client: Client, run_id: str, chain: list[str]) -> list[dict[str, Any]]:
    """Each execution's start as Temporal holds it, first to latest."""
    out = []
    for execution in chain:
        history = await client.get_workflow_handle(run_id, run_id=execution).fetch_history()
        given = history.events[0].workflow_execution_started_event_attributes.input.payloads
        [start] = await client.data_converter.decode(given)
        out.append(start)
    return out


async def replay_failures(
    client: Client, run_id: str, chain: list[str], bound: int | None
) -> list[Exception]:
    """Why each execution of the run does not replay under this code, on a replayer bound as its worker."""
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    failures = []
    with mock.patch.object(_registry, "_DEFAULT", WorkerSetup(continue_after_events=bound)):
        for execution in chain:
            history = await client.get_workflow_handle(run_id, run_id=execution).fetch_history()
            replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            failures += [replayed.replay_failure] if replayed.replay_failure else []
    return failures


async def read(
    server: TemporalServer, folder: Path, bound: int | None, **state: Any
) -> tuple[RunResult, Any]:
    """A run of `state` on a worker with `bound`: its result, and its executions' starts."""
    async with serving(
        server, catalog(), queue(), continue_after_events=bound, heartbeat_seconds=30.0
    ) as runs:
        result = await runs.start("reader", "Read", state={"dir": str(folder), **state})
        assert isinstance(result, RunResult)
        chain = await executions(runs, result.run_id)
        assert await replay_failures(runs.client, result.run_id, chain, bound) == []
        return result, await starts(runs.client, result.run_id, chain)


def same_end(a: RunResult, b: RunResult) -> None:
    assert (a.reason, a.turns, a.output) == (b.reason, b.turns, b.output), (a.note, b.note)
    assert (a.usage.input_tokens, a.usage.output_tokens) == (b.usage.input_tokens, b.usage.output_tokens)


@pytest.mark.slow
def test_a_snapshot_over_a_payload_is_carried_packed_and_the_run_ends_as_in_one_execution(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        bounded, given = await read(temporal, tmp_path, LOW, size=100_000)
        whole, [_only] = await read(temporal, tmp_path, None, size=100_000)
        assert bounded.reason is StopReason.SUCCESS and bounded.turns == PAGES + 2, bounded.note
        same_end(bounded, whole)
        packed = [s for s in given if w.PACKED in s]
        assert packed, [sorted(s) for s in given]  # was: the run stayed in its execution from there
        carried = w.unpacked(packed[0])["snapshot"]
        assert w.payload_size(carried) > w.MAX_PAYLOAD_BYTES >= w.payload_size(packed[0])
        assert Snapshot.from_json(carried).usage.turns >= PAGES // 2
        assert packed[0]["snapshot"] == w.PACKED_IN_PLACE
        assert calls_log(tmp_path, bounded.run_id) == ["start 1", "end 1"]  # each call once

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_snapshot_too_large_even_packed_goes_on_in_its_execution_with_a_warning(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        bounded, given = await read(temporal, tmp_path, LOW, size=150_000, noise=True)
        whole, _ = await read(temporal, tmp_path, None, size=150_000, noise=True)
        same_end(bounded, whole)
        assert bounded.reason is StopReason.SUCCESS, bounded.note
        assert not [s for s in given if w.PACKED in s]
        assert all(w.payload_size(s) <= w.MAX_PAYLOAD_BYTES for s in given)

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    said = [r.getMessage() for r in caplog.records if "too large to continue as new" in r.getMessage()]
    assert len(said) == 1 and "packed" in said[0], said


@pytest.mark.slow
def test_an_older_worker_fails_the_task_of_a_packed_execution_and_a_newer_one_carries_the_run_on(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker before packing read a start as this code does, less the unpacking: it is this code with
    `unpacked` a no-op. It takes the snapshot left in place for a snapshot and fails on it (a version it
    does not know): its workflow task fails, tried again, and no call is made again. The stall README
    states: the older worker takes the retry at once and holds it (the SDK reports a task's failure once)
    the whole task timeout, stopped meanwhile or not; a newer worker takes the next attempt."""
    name = queue()
    # 120 s for a run, a packed execution's too (README); 10 s here, so that the newer worker takes it soon
    timeout = timedelta(seconds=10)
    monkeypatch.setattr(temporal_client, "WORKFLOW_TASK_TIMEOUT", timeout)

    async def held(runs: TemporalRuns, run_id: str) -> datetime:
        """When the older worker took the failed task again (its second attempt)."""
        for _ in range(300):
            task = (await runs.client.get_workflow_handle(run_id).describe()).raw_description
            pending = task.pending_workflow_task
            if pending.attempt == 2 and pending.HasField("started_time"):
                return pending.started_time.ToDatetime(tzinfo=UTC)
            await asyncio.sleep(0.1)
        raise AssertionError("the older worker did not take the failed task again")

    async def older() -> tuple[str, str, datetime]:
        with monkeypatch.context() as before:
            before.setattr(w, "unpacked", lambda start: start)
            async with serving(
                temporal, catalog(), name, continue_after_events=LOW, heartbeat_seconds=30.0
            ) as runs:
                run_id = str(
                    await runs.start(
                        "reader", "Read", state={"dir": str(tmp_path), "size": 100_000}, wait=False
                    )
                )
                for _ in range(600):
                    chain = await executions(runs, run_id)
                    history = await runs.client.get_workflow_handle(run_id, run_id=chain[-1]).fetch_history()
                    failed = [
                        e.workflow_task_failed_event_attributes
                        for e in history.events
                        if e.HasField("workflow_task_failed_event_attributes")
                    ]
                    if failed:
                        scheduled = [
                            e
                            for e in history.events
                            if e.HasField("activity_task_scheduled_event_attributes")
                        ]
                        assert scheduled == []  # the older worker ran nothing of the run again
                        return run_id, failed[0].failure.message, await held(runs, run_id)
                    await asyncio.sleep(0.1)
        raise AssertionError("the older worker never took the packed execution")

    async def newer(run_id: str) -> tuple[RunResult, Any]:
        async with serving(
            temporal, catalog(), name, continue_after_events=LOW, heartbeat_seconds=30.0
        ) as runs:
            done = await asyncio.wait_for(runs.result(run_id), 120)
            histories = [
                await runs.client.get_workflow_handle(run_id, run_id=e).fetch_history()
                for e in await executions(runs, run_id)
            ]
            # the packed execution (the run may hand over again after it: its history is counted in events)
            return done, next(
                h
                for h in histories
                if any(e.HasField("workflow_task_failed_event_attributes") for e in h.events)
            )

    run_id, failure, taken = asyncio.run(older())
    assert "snapshot version 'packed' is not supported" in failure, failure
    done, history = asyncio.run(newer(run_id))
    assert done.reason is StopReason.SUCCESS and done.turns == PAGES + 2, done.note
    assert calls_log(tmp_path, run_id) == ["start 1", "end 1"]
    [retried, *_] = [
        (e.workflow_task_scheduled_event_attributes.attempt, e.event_time.ToDatetime(tzinfo=UTC))
        for e in history.events
        if e.HasField("workflow_task_scheduled_event_attributes") and e.event_id > 2  # the first's retries
    ]
    assert retried[0] == 3 and retried[1] - taken >= timeout - timedelta(seconds=1), (retried, taken)


@pytest.mark.slow
def test_a_run_whose_snapshot_was_too_large_to_hand_over_before_packing_replays_as_it_ran(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    patched = run_workflow.workflow.patched

    async def scenario() -> None:
        with monkeypatch.context() as before:  # the code before: the hand-over refused, no marker
            before.setattr(run_workflow.workflow, "patched", lambda p: p != PACKED_HAND_OVER and patched(p))
            async with serving(temporal, catalog(), queue(), continue_after_events=LOW) as runs:
                result = await runs.start("reader", "Read", state={"dir": str(tmp_path), "size": 100_000})
                assert isinstance(result, RunResult) and result.reason is StopReason.SUCCESS
                chain = await executions(runs, result.run_id)
        assert not [s for s in await starts(runs.client, result.run_id, chain) if w.PACKED in s]
        assert await replay_failures(runs.client, result.run_id, chain, LOW) == []  # by this code: as it ran
        with monkeypatch.context() as ungated:
            ungated.setattr(run_workflow.workflow, "patched", lambda p: p == PACKED_HAND_OVER or patched(p))
            failures = await replay_failures(runs.client, result.run_id, chain, LOW)
        assert len(failures) == 1 and "Nondeterminism" in str(failures[0]), failures  # the gate matters

    asyncio.run(scenario())


def test_the_snapshot_left_in_place_is_one_an_older_reader_refuses_and_a_bad_pack_is_said() -> None:
    with pytest.raises(SnapshotError, match="version 'packed' is not supported"):
        Snapshot.from_json(w.PACKED_IN_PLACE)  # what the code before does with it: never a fresh start
    text = json.dumps({"journal": ["x" * 10_000]})
    start = {"agent": "a", "snapshot": w.PACKED_IN_PLACE, w.PACKED: w.packed(text)}
    assert w.unpacked(start) == {"agent": "a", "snapshot": text}
    assert w.unpacked({"agent": "a", "snapshot": text}) == {"agent": "a", "snapshot": text}
    problem = run_workflow._unpacked({**start, w.PACKED: "not base64!"}, None)
    assert problem[0] is None and "packed snapshot (snapshot_zlib) could not be read" in str(problem[1])
    with pytest.raises(ValueError, match="cut short"):
        w.unpacked({**start, w.PACKED: w.packed(text)[:-40]})
    bomb = base64.b64encode(zlib.compress(b" " * (w.MAX_UNPACKED_BYTES + 1))).decode()
    with pytest.raises(ValueError, match="unpacks to over 80,000,000 bytes"):
        w.unpacked({**start, w.PACKED: bomb})
