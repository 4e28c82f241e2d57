"""auditU: where a run continues as new is read from its history, not from the worker that replays it.

`continue_after_events` is a worker setting, and workers of one task queue may not share it: a rolling
deploy that lowers it (or sets one where it was None), or a Replayer with the default. A run waiting for a
person past the new bound, taken up by a worker of the new setting, was replayed as handing over where
its history went on: a nondeterminism error, its workflow task failed again on every worker of that
setting, and the answer was never taken (the run lost). A history handed over at a bound other than the
default did not replay under `temporalio.worker.Replayer` either. Likewise a run cancelled mid-turn (a
timer of the worker's `cancel_grace`) did not replay on a worker of `cancel_grace=0` (no timer).
"""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import temporal_agents
from temporal_server import TemporalServer, serving
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from test_probe39a_continue_as_new import executions
from test_temporal import calls_log, queue, state, temporal, wait_for_line  # noqa: F401  (temporal: the server fixture)

from agent.result import RunResult, StopReason
from agent.temporal import TemporalRuns, _registry
from agent.temporal import workflow as run_workflow
from agent.temporal._registry import WorkerSetup
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import EndstateRun

pytestmark = pytest.mark.slow

LOW = 60  # history events: a run of 12 turns is past it before it asks
SLOW = {"heartbeat_seconds": 30.0}  # a loaded machine's late heartbeat never retries a scripted call


async def task_failures(runs: TemporalRuns, run_id: str) -> list[str]:
    """The causes of the workflow tasks that failed in the run's executions."""
    failed = []
    for execution in await executions(runs, run_id):
        history = await runs.client.get_workflow_handle(run_id, run_id=execution).fetch_history()
        for event in history.events:
            if event.HasField("workflow_task_failed_event_attributes"):
                failed.append(event.workflow_task_failed_event_attributes.failure.message[:300])
    return failed


async def answered(runs: TemporalRuns, run_id: str) -> RunResult | list[str]:
    """The answered run's next segment, or why its workflow tasks failed (once one has: it would never
    end, the task failing again on every worker of this setting)."""
    answer = asyncio.ensure_future(runs.answer(run_id, "Count on."))
    while not answer.done():
        if failed := await task_failures(runs, run_id):
            answer.cancel()
            await asyncio.gather(answer, return_exceptions=True)
            return failed
        await asyncio.wait({answer}, timeout=0.5)
    return answer.result()


def test_a_waiting_run_is_answered_on_a_worker_with_a_lower_bound(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> tuple[RunResult | list[str], int]:
        q = queue()
        asks = state(tmp_path, "bench-ask", k=12, max_turns=30)
        async with serving(
            temporal, temporal_agents.catalog(), q, continue_after_events=None, **SLOW
        ) as runs:
            asked = await runs.start("counter", "count", state=asks)
            assert isinstance(asked, RunResult) and asked.reason is StopReason.NEED_HELP, asked
        # the deploy: the worker before is gone, the new one continues runs past LOW events
        async with serving(temporal, temporal_agents.catalog(), q, continue_after_events=LOW, **SLOW) as runs:
            result = await answered(runs, asked.run_id)
            return result, len(await executions(runs, asked.run_id))

    result, moves = asyncio.run(scenario())
    assert isinstance(result, RunResult), f"the answer was never taken: {result}"
    assert (result.reason, result.turns) == (StopReason.SUCCESS, 12 + 1 + 2 + 1), result.note
    assert moves == 1  # the execution keeps the bound it began with (None): the next would take LOW


def replay_failures(histories: list[Any]) -> list[str]:
    async def replayed() -> list[str]:
        replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
        results = [await replayer.replay_workflow(h, raise_on_replay_failure=False) for h in histories]
        return [str(r.replay_failure)[:300] for r in results if r.replay_failure is not None]

    return asyncio.run(replayed())


def test_a_run_handed_over_at_a_worker_bound_replays_under_a_replayer(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> tuple[RunResult, list[WorkflowHistory]]:
        counts = state(tmp_path, "bench", k=12, max_turns=30)
        async with serving(
            temporal, temporal_agents.catalog(), queue(), continue_after_events=LOW, **SLOW
        ) as runs:
            result = await runs.start("counter", "count", state=counts)
            assert isinstance(result, RunResult)
            handles = [
                runs.client.get_workflow_handle(result.run_id, run_id=e)
                for e in await executions(runs, result.run_id)
            ]
            return result, [await handle.fetch_history() for handle in handles]

    result, histories = asyncio.run(scenario())
    assert result.reason is StopReason.SUCCESS, result.note
    assert len(histories) >= 2  # it continued as new
    assert replay_failures(histories) == []  # a replayer has no worker's setting: the default, 10,000


FIXTURE = Path(__file__).parent / "fixtures" / "temporal_v15_before_worker_setup_recorded_histories.json.gz"


def recorded_before() -> dict[str, WorkflowHistory]:
    """A 30-count run of the code before `SETUP_RECORDED` (main at 1b6877b) on a worker of
    `continue_after_events=60`: its `first` execution and the one it `handed` over to, each of which
    continued as new at that bound."""
    histories = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    return {kind: WorkflowHistory.from_json(kind, text) for kind, text in histories.items()}


@pytest.mark.parametrize("kind", ["first", "handed"])
def test_an_execution_begun_before_the_setup_was_recorded_replays_on_a_worker_of_its_bound(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_registry, "_DEFAULT", WorkerSetup(continue_after_events=LOW))  # a replayer's setup
    assert replay_failures([recorded_before()[kind]]) == []
    patched = run_workflow.workflow.patched
    monkeypatch.setattr(  # without the gate it would ask for a bound its history never recorded
        run_workflow.workflow, "patched", lambda p: p == run_workflow.SETUP_RECORDED or patched(p)
    )
    assert "Nondeterminism" in replay_failures([recorded_before()[kind]])[0]


def test_a_run_cancelled_mid_turn_replays_on_a_worker_that_waits_for_no_turn(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cancel waits for the turn in flight with a timer of the worker's `cancel_grace`; a worker of
    `cancel_grace=0` waits with none. Replayed there, the history's timer was a nondeterminism error."""
    hold = tmp_path / "hold.flag"  # count(2) waits until the cancel was asked for
    hold.write_text("hold")

    async def scenario() -> tuple[RunResult, WorkflowHistory]:
        held = state(tmp_path, "slow", max_turns=10, hold=str(hold), hold_at=2)
        async with serving(temporal, temporal_agents.catalog(), queue(), cancel_grace=30.0, **SLOW) as runs:
            run_id = await runs.start("counter", "count", state=held, wait=False)
            assert isinstance(run_id, str)
            await wait_for_line(tmp_path, run_id, "start 2")
            await runs.cancel(run_id)
            hold.unlink()
            return await runs.result(run_id), await runs.client.get_workflow_handle(run_id).fetch_history()

    result, history = asyncio.run(scenario())
    assert result.reason is StopReason.CANCELLED and result.turns == 2, result.note
    assert "end 2" in calls_log(tmp_path, result.run_id)  # the turn in flight ended: its timer was set
    monkeypatch.setattr(_registry, "_DEFAULT", WorkerSetup(cancel_grace=0.0))
    assert replay_failures([history]) == []
