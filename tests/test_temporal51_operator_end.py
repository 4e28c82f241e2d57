"""temporal51: an operator ends a run over Temporal as over a store (`TemporalRuns.end`, `endstate end
--temporal`). There was no such command: `temporal workflow terminate` ended the workflow with no Endstate
stop (none counted, no span, no cleanup). Now a run waiting for a person (the `end` update) or a cancelled
one (its workflow closed: a new execution of it) ends `error` (`ended_by_operator`) in the store's words,
its stop counted and traced by the worker, its snapshot kept in its result, its catalog `cleanup` run. A
running run (a worker holds it), one that has ended and an unknown id are refused, nothing changed.

Against a real Temporal Server (the `temporal` dev server).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from cleanup_counts import Stop, cleanups, count_cleanup
from load_bounds import FLUSH_S
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from temporal_server import (
    TemporalServer,
    cli_env,
    completed_activities,
    endstate,
    serving,
    temporal_fixture,
    waiting,
)
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowHistory
from temporalio.worker import Replayer

from agent import Agent, Budget, HelpPolicy, tool
from agent.durable.catalog import Catalog
from agent.durable.runner import ENDED_BY_OPERATOR, Runner
from agent.durable.store import NotClaimable, RunStatus, UnknownRun, open_store
from agent.models.scripted import ScriptedModel, call, finish
from agent.result import RunResult, StopReason
from agent.temporal import _wire as w
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import EndstateRun
from telemetry import Telemetry
from telemetry import names as n

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
WAIT_S = 60.0  # generous: a loaded CI machine
NOTE = "agent retired"
SAID = f"Ended by an operator: {NOTE}. Its journal is kept for review; it is not resumed."


def asker(state: dict[str, Any]) -> Agent:
    """Asks a person, then finishes once answered."""
    script = [[finish("need_help", "Retire me?")], [finish("done", "answered")]]
    return Agent(
        "asker", ScriptedModel(script), budget=Budget(max_turns=3), help=HelpPolicy(wait_seconds=3600)
    )


@tool(timeout=None)
def hold(flag: str) -> str:
    """Says it has begun (the file `begun` beside `flag`), then waits while `flag` exists (the test
    holds the run running), at most `WAIT_S`."""
    (Path(flag).parent / "begun").touch()
    until = time.monotonic() + WAIT_S
    while Path(flag).exists() and time.monotonic() < until:
        time.sleep(0.05)
    return "let go"


def holder(state: dict[str, Any]) -> Agent:
    script = [[call("hold", flag=str(Path(state["dir"]) / "hold"))], [finish("done", "held")]]
    return Agent("holder", ScriptedModel(script), tools=[hold], budget=Budget(max_turns=3))


def catalog() -> Catalog:
    c = Catalog()
    c.register("asker", asker, cancel=Stop, cleanup=count_cleanup)
    c.register("holder", holder, cleanup=count_cleanup)
    return c


def stops(telemetry: Telemetry, agent: str, reason: str) -> float:
    labels = {
        "agent": agent,
        "task_type": "default",
        "stop_reason": reason,
        "stop_limit": n.NO_LIMIT,
        n.LABEL_STOP_CAUSE: "",
    }
    return telemetry.registry.get_sample_value(n.METRIC_STOPS + "_total", labels) or 0.0


def replay_failure(history: WorkflowHistory) -> Exception | None:
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


async def ended_so(
    server: TemporalServer, folder: Path, telemetry: Telemetry, cancelled: bool, **options: Any
) -> tuple[RunResult, RunResult, Any, WorkflowHistory, int]:
    """A run of `asker` waiting for a person (or, `cancelled`, cancelled by its own signal: its workflow
    closed) ended by an operator: what `end` returned, the run's result as read after, its record, its
    history, and its cleanups until `end` returned."""
    if cancelled:
        (folder / "stop").touch()
    async with serving(server, catalog(), hooks=telemetry.hooks, **options) as runs:
        run_id = await runs.start("asker", "Work.", state={"dir": str(folder)}, wait=False)
        if cancelled:
            stopped = await asyncio.wait_for(runs.result(run_id), WAIT_S)
            assert stopped.reason is StopReason.CANCELLED
        else:
            await waiting(runs, run_id)
        ended = await asyncio.wait_for(runs.end(run_id, NOTE), WAIT_S)
        done = cleanups(folder)
        result = await asyncio.wait_for(runs.result(run_id), WAIT_S)
        record = await runs.record(run_id)
        history = await runs.client.get_workflow_handle(run_id).fetch_history()
    return ended, result, record, history, done


@pytest.mark.parametrize(
    ("cancelled", "options"),
    [(False, {}), (False, {"max_cached_workflows": 0}), (True, {})],
    ids=["waiting", "waiting-replayed-each-task", "cancelled"],
)
def test_an_operator_ends_a_run_no_worker_holds_with_its_stop_counted_traced_and_cleaned_up(
    temporal: TemporalServer, tmp_path: Path, cancelled: bool, options: dict[str, Any]
) -> None:
    spans = InMemorySpanExporter()
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=spans)
    try:
        ended, result, record, history, done = asyncio.run(
            ended_so(temporal, tmp_path, telemetry, cancelled, **options)
        )
        assert telemetry.force_flush(FLUSH_S), "the spans were not exported"
        for got in (ended, result):
            assert (got.reason, got.error_type, got.note) == (StopReason.ERROR, ENDED_BY_OPERATOR, SAID)
        assert done == 1, "the run's cleanup did not run before `end` returned"
        assert result.snapshot is not None and result.snapshot.run_id == result.run_id  # its journal kept
        assert record is not None and record.status is RunStatus.FINISHED
        assert record.error_type == ENDED_BY_OPERATOR
        assert stops(telemetry, "asker", "error") == 1  # counted once, whatever was replayed
        errors = [
            s
            for s in spans.get_finished_spans()
            if (s.attributes or {}).get("error.type") == ENDED_BY_OPERATOR
        ]
        assert [s.name for s in errors] == ["invoke_agent asker"]
        assert replay_failure(history) is None  # the history with an end replays
        if cancelled:  # a worker from before `end` fails such a start's task (`_wire.ENDED`), never runs it
            [start] = [
                json.loads(p.data)
                for p in history.events[0].workflow_execution_started_event_attributes.input.payloads
            ]
            assert start["plan"] == {} and start[w.ENDED]["plan"]["agent"] == "asker"
    finally:
        telemetry.shutdown()
    assert cleanups(tmp_path) == 1  # once, never again


def test_the_note_is_the_stores_words(tmp_path: Path) -> None:
    """The words `end` gives over Temporal are the store's runner's (this test pins `SAID` to them)."""
    store = open_store(str(tmp_path / "runs.db"))
    try:
        runner = Runner(store, catalog())
        asked = asyncio.run(runner.start("asker", "Work.", state={"dir": str(tmp_path)}))
        assert asked.reason is StopReason.NEED_HELP
        assert runner.end(asked.run_id, NOTE).note == SAID
    finally:
        store.close()


def test_an_ended_run_is_not_resumed_or_answered(temporal: TemporalServer, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            run_id = await runs.start("asker", "Work.", state={"dir": str(tmp_path)}, wait=False)
            await waiting(runs, run_id)
            await asyncio.wait_for(runs.end(run_id), WAIT_S)
            with pytest.raises(NotClaimable, match="ended as error"):
                await runs.answer(run_id, "yes")
            with pytest.raises(NotClaimable, match="ended as error"):
                await runs.resume(run_id)
            with pytest.raises(NotClaimable, match=rf"run {run_id} has ended already \(error\)"):
                await runs.end(run_id)

    asyncio.run(scenario())


def test_a_running_run_a_finished_one_and_an_unknown_id_are_refused(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    flag = tmp_path / "hold"
    flag.touch()

    async def until_held() -> None:
        for _ in range(int(WAIT_S * 10)):  # its tool has begun: the run runs
            if (tmp_path / "begun").exists():
                return
            await asyncio.sleep(0.1)
        raise AssertionError("the run's tool never began")

    async def scenario() -> None:
        async with serving(temporal, catalog()) as runs:
            run_id = await runs.start("holder", "Hold.", state={"dir": str(tmp_path)}, wait=False)
            await until_held()
            with pytest.raises(NotClaimable, match=rf"run {run_id} is running, held by a live worker"):
                await runs.end(run_id, NOTE)
            flag.unlink()
            assert (await asyncio.wait_for(runs.result(run_id), WAIT_S)).reason is StopReason.SUCCESS
            with pytest.raises(NotClaimable, match=rf"run {run_id} has ended already \(success\)"):
                await runs.end(run_id, NOTE)
            with pytest.raises(UnknownRun):
                await runs.end("no-such-run", NOTE)
        assert cleanups(tmp_path) == 1  # its own end's cleanup, none for a refused `end`

    asyncio.run(scenario())


def test_endstate_end_over_temporal_prints_the_runs_end(temporal: TemporalServer, tmp_path: Path) -> None:
    async def scenario() -> tuple[int, str, str]:
        async with serving(temporal, catalog()) as runs:
            run_id = await runs.start("asker", "Work.", state={"dir": str(tmp_path)}, wait=False)
            await waiting(runs, run_id)
            argv = ["end", run_id, "--note", NOTE, "--json", "--temporal", temporal.address]
            proc = await asyncio.create_subprocess_exec(
                *endstate(*argv, "--task-queue", runs.task_queue),
                env=cli_env(),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(proc.communicate(), WAIT_S)
            assert proc.returncode is not None
            return proc.returncode, out.decode(), err.decode()

    code, out, err = asyncio.run(scenario())
    assert code == 0, err
    printed = json.loads(out)
    assert (printed["reason"], printed["error_type"], printed["note"]) == ("error", ENDED_BY_OPERATOR, SAID)
    assert cleanups(tmp_path) == 1


def test_a_run_whose_agent_no_worker_has_any_more_is_ended(temporal: TemporalServer, tmp_path: Path) -> None:
    """`end`'s first use: a run whose agent a redeploy dropped would wait for ever. It ends, with no
    cleanup (no worker knows it: the store's runner runs none for an agent its catalog lacks)."""
    queue = f"test-{uuid.uuid4().hex[:8]}"

    async def scenario() -> RunResult:
        async with serving(temporal, catalog(), queue) as runs:
            run_id = await runs.start("asker", "Work.", state={"dir": str(tmp_path)}, wait=False)
            await waiting(runs, run_id)
        async with serving(temporal, Catalog(), queue) as runs:
            return await asyncio.wait_for(runs.end(run_id, NOTE), WAIT_S)

    ended = asyncio.run(scenario())
    assert (ended.reason, ended.error_type, ended.note) == (StopReason.ERROR, ENDED_BY_OPERATOR, SAID)
    assert cleanups(tmp_path) == 0


async def cancel_taken(handle: Any) -> None:
    """Until the workflow has run a workflow task past its cancel request (it has seen the cancel)."""
    asked, done = (
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
        EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    )
    for _ in range(int(WAIT_S * 10)):
        kinds = [e.event_type for e in (await handle.fetch_history()).events]
        if asked in kinds and done in kinds[kinds.index(asked) :]:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the workflow never took its cancel")


def test_a_cancel_while_the_ended_runs_cleanup_runs_does_not_stop_it(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    """The end's cleanup outlasts a cancel that comes meanwhile (`CLEANUP_OUTLASTS_CANCEL`), as any end's."""
    begun, let_go = threading.Event(), threading.Event()

    def held_cleanup(state: dict[str, Any]) -> None:
        begun.set()
        if let_go.wait(WAIT_S):
            count_cleanup(state)

    held = Catalog()
    held.register("asker", asker, cleanup=held_cleanup)

    async def scenario() -> RunResult:
        async with serving(temporal, held) as runs:
            run_id = await runs.start("asker", "Work.", state={"dir": str(tmp_path)}, wait=False)
            await waiting(runs, run_id)
            ending = asyncio.ensure_future(runs.end(run_id, NOTE))
            assert await asyncio.to_thread(begun.wait, WAIT_S), "the cleanup never began"
            handle = runs.client.get_workflow_handle(run_id)
            await handle.cancel()
            await cancel_taken(handle)
            status = (await handle.describe()).status
            let_go.set()
            ended = await asyncio.wait_for(ending, WAIT_S)
            # was it shielded: the workflow open while the cleanup ran, and its activity completed
            assert status is WorkflowExecutionStatus.RUNNING, "the run closed while its cleanup ran"
            assert await completed_activities(runs.client, run_id, w.CLEANUP) == 1
            return ended

    try:
        ended = asyncio.run(scenario())
    finally:
        let_go.set()
    assert (ended.reason, ended.error_type) == (StopReason.ERROR, ENDED_BY_OPERATOR)
    assert cleanups(tmp_path) == 1
