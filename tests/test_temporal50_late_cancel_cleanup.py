"""temporal50: a cancel that reaches a run over Temporal once its last segment has ended (while its catalog
`cleanup` runs) cancelled the cleanup's activity, and the workflow closed at once: what the run's `prepare`
took was never let go when the cleanup had not begun yet (a busy queue, a retry), and, when it had, the
workflow no longer waited for it (a worker that died mid-cleanup left it undone, nobody retrying it). The
store's runner runs a finished run's cleanup whatever comes after its end. Now the workflow waits for the
cleanup whatever cancel comes, and its result is the run's own stop. A run that ended `cancelled` gets no
cleanup, as over a store: it is resumable, and its resume needs what `prepare` made.

Against a real Temporal Server (the `temporal` dev server); histories recorded before replay as they ran.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cleanup_counts import Stop, cleanups, count_cleanup
from temporal_server import TemporalServer, completed_activities, serving, temporal_fixture
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowHandle, WorkflowHistory
from temporalio.worker import Replayer

from agent import Agent, Budget
from agent.durable.catalog import Catalog
from agent.durable.runner import Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel, finish
from agent.result import StopReason
from agent.temporal import _wire as w
from agent.temporal import workflow as run_workflow
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import CLEANUP_OUTLASTS_CANCEL, EndstateRun

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
FIXTURE = Path(__file__).parent / "fixtures" / "temporal_v13_before_cleanup_outlasts_cancel_history.json.gz"
WAIT_S = 60.0  # generous: a loaded CI machine


class HeldCleanup:
    """A catalog entry's cleanup that waits, once begun, until the test lets it go, then writes `cleaned`
    in the run's folder (the effect a test can see)."""

    def __init__(self) -> None:
        self.begun, self.let_go = threading.Event(), threading.Event()

    def __call__(self, state: dict[str, Any]) -> None:
        self.begun.set()
        if not self.let_go.wait(WAIT_S):
            raise TimeoutError("the test never let the cleanup go")
        (Path(state["dir"]) / "cleaned").write_text("let go")


def tidy(state: dict[str, Any]) -> Agent:
    return Agent("tidy", ScriptedModel([[finish("done", "tidied")]]), budget=Budget(max_turns=3))


@pytest.fixture
def held() -> Iterator[HeldCleanup]:
    cleanup = HeldCleanup()
    yield cleanup
    cleanup.let_go.set()  # a failed test leaves no thread waiting


def catalog_of(cleanup: HeldCleanup) -> Catalog:
    catalog = Catalog()
    catalog.register("tidy", tidy, cleanup=cleanup)
    return catalog


CANCEL_ASKED = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED
TASK_DONE = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED


async def cancel_taken(handle: WorkflowHandle[Any, Any]) -> None:
    """Until the workflow has run a workflow task past its cancel request (it has seen the cancel)."""
    for _ in range(int(WAIT_S * 10)):
        kinds = [e.event_type for e in (await handle.fetch_history()).events]
        if CANCEL_ASKED in kinds and TASK_DONE in kinds[kinds.index(CANCEL_ASKED) :]:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the workflow never took its cancel")


async def cancelled_in_cleanup(
    server: TemporalServer, cleanup: HeldCleanup, folder: Path
) -> tuple[WorkflowExecutionStatus | None, Any, WorkflowHistory, int]:
    """A run whose cleanup is cancelled while it runs, then let go: the run's status once the workflow
    took the cancel (the cleanup still held), its result, its history, and its cleanups completed."""
    async with serving(server, catalog_of(cleanup)) as runs:
        run_id = await runs.start("tidy", "Tidy up.", state={"dir": str(folder)}, wait=False)
        assert await asyncio.to_thread(cleanup.begun.wait, WAIT_S), "the cleanup never began"
        handle = runs.client.get_workflow_handle(run_id)
        await handle.cancel()
        await cancel_taken(handle)
        status = (await handle.describe()).status
        cleanup.let_go.set()
        result = await asyncio.wait_for(runs.result(run_id), WAIT_S)
        history = await handle.fetch_history()
        return status, result, history, await completed_activities(runs.client, run_id, w.CLEANUP)


def test_a_cancel_that_comes_while_the_cleanup_runs_lets_it_end_and_the_run_keeps_its_stop(
    temporal: TemporalServer, held: HeldCleanup, tmp_path: Path
) -> None:
    status, result, _, completed = asyncio.run(cancelled_in_cleanup(temporal, held, tmp_path))
    # was: the cleanup's activity cancelled and the workflow closed at once, its cleanup not waited for
    assert status is WorkflowExecutionStatus.RUNNING, "the run closed while its cleanup ran"
    assert completed == 1, "the cleanup's activity did not complete"
    assert (tmp_path / "cleaned").read_text() == "let go"
    assert (result.reason, result.output) == (StopReason.SUCCESS, "tidied")


def replay_failure(history: WorkflowHistory) -> Exception | None:
    """Why `history` does not replay under this code, or None."""
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


def recorded_before() -> WorkflowHistory:
    """The scenario above run by the code before `CLEANUP_OUTLASTS_CANCEL` (main at a1aea2e): its cleanup
    cancelled, the workflow closed at once (`fetch_history().to_json()`)."""
    return WorkflowHistory.from_json("before", gzip.decompress(FIXTURE.read_bytes()).decode())


def test_a_history_recorded_before_replays_as_it_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    history = recorded_before()
    assert replay_failure(history) is None
    patched = run_workflow.workflow.patched  # without the gate, it would wait for the cleanup
    gated = CLEANUP_OUTLASTS_CANCEL
    monkeypatch.setattr(run_workflow.workflow, "patched", lambda p: p == gated or patched(p))
    assert "Nondeterminism" in str(replay_failure(history))


def test_a_history_with_a_cleanup_that_outlasted_a_cancel_replays(
    temporal: TemporalServer, held: HeldCleanup, tmp_path: Path
) -> None:
    _, result, history, _ = asyncio.run(cancelled_in_cleanup(temporal, held, tmp_path))
    assert result.reason is StopReason.SUCCESS
    assert replay_failure(history) is None


# -- a run that ended cancelled: no cleanup until its real end, over Temporal as over a store --------------


def stoppable() -> Catalog:
    catalog = Catalog()
    catalog.register("tidy", tidy, cancel=Stop, cleanup=count_cleanup)
    return catalog


def test_over_a_store_a_cancelled_run_keeps_its_world_until_its_resume_ends(tmp_path: Path) -> None:
    (tmp_path / "stop").touch()
    store = open_store(str(tmp_path / "runs.db"))
    try:
        runner = Runner(store, stoppable())
        stopped = asyncio.run(runner.start("tidy", "Tidy up.", state={"dir": str(tmp_path)}))
        assert stopped.reason is StopReason.CANCELLED and cleanups(tmp_path) == 0
        (tmp_path / "stop").unlink()
        done = asyncio.run(runner.resume(stopped.run_id))
        assert done.reason is StopReason.SUCCESS and cleanups(tmp_path) == 1
    finally:
        store.close()


def test_over_temporal_a_cancelled_run_keeps_its_world_until_its_resume_ends(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> tuple[int, int]:
        async with serving(temporal, stoppable()) as runs:
            run_id = await runs.start("tidy", "Tidy up.", state={"dir": str(tmp_path)}, wait=False)
            stopped = await asyncio.wait_for(runs.result(run_id), WAIT_S)  # its workflow closed
            assert stopped.reason is StopReason.CANCELLED
            before = cleanups(tmp_path)
            (tmp_path / "stop").unlink()
            assert (await asyncio.wait_for(runs.resume(run_id), WAIT_S)).reason is StopReason.SUCCESS
            assert (await asyncio.wait_for(runs.result(run_id), WAIT_S)).reason is StopReason.SUCCESS
            return before, cleanups(tmp_path)

    (tmp_path / "stop").touch()
    assert asyncio.run(scenario()) == (0, 1)
