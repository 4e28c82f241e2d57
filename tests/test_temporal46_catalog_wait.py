"""temporal46: Temporal hands a run's calls to whichever worker polls its task queue. In a rolling deploy
that adds an agent (or a task type), a call of a new run can reach a worker whose catalog lacks it: that
worker ended the run `error` at once, though a worker that has the agent polled the same queue. Now the
lacking worker refuses the call as retryable, Temporal tries it again with backoff (on whichever worker
takes it) until the worker's `catalog_wait` is spent, and only then does the run end `error`, saying
what is missing and how to fix it. Against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporal_agents import catalog
from temporal_audit_agents import catalog as other_catalog
from temporal_server import TemporalServer, cli_env, endstate, serving, temporal_fixture
from temporalio.client import WorkflowExecutionStatus, WorkflowHistory
from temporalio.worker import Replayer

from agent.cli.temporal import CATALOG_WAIT_S
from agent.durable.catalog import Catalog
from agent.result import RunResult, StopReason
from agent.temporal import TemporalRuns, build_worker
from agent.temporal import _wire as w
from agent.temporal import workflow as run_workflow
from agent.temporal.worker import EndstateWorker, workflow_runner
from agent.temporal.workflow import EndstateRun

pytestmark = pytest.mark.slow

temporal = temporal_fixture()
LACKS = "no agent named 'counter' in the catalog; known: builder, deployer"


async def connected(server: TemporalServer) -> TemporalRuns:
    return await TemporalRuns.connect(server.address, task_queue=f"test-{uuid.uuid4().hex[:8]}")


async def worker(runs: TemporalRuns, cat: Catalog, catalog_wait: float) -> EndstateWorker:
    return await build_worker(
        runs.client, cat, task_queue=runs.task_queue, heartbeat_seconds=2.0, catalog_wait=catalog_wait
    )


@contextlib.contextmanager
def worker_process(server: TemporalServer, queue: str, catalog_wait: float) -> Iterator[None]:
    """`endstate worker` for the tests' catalog (it has `counter`) in a process of its own, once it polls;
    stopped after."""
    argv = endstate(
        "worker", "--temporal", server.address, "--task-queue", queue, "--catalog", "temporal_agents:catalog",
        "--heartbeat", "2", "--catalog-wait", str(catalog_wait),
    )  # fmt: skip
    log = Path(tempfile.mkstemp(prefix="endstate-worker-", suffix=".log")[1])
    with log.open("w") as out:
        proc = subprocess.Popen(argv, env=cli_env(), stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(1200):
            if "endstate worker: polling task queue" in log.read_text() or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, log.read_text()
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.unlink(missing_ok=True)


async def refused_once(runs: TemporalRuns, run_id: str, says: str, unless: Any = None) -> None:
    """Until one of the run's calls was refused and waits to be tried again (or the run has ended, or the
    task `unless` has: the refusal was final), 60 s at most."""
    handle = runs.client.get_workflow_handle(run_id)
    for _ in range(600):
        described = await handle.describe()
        if described.status is not WorkflowExecutionStatus.RUNNING or (unless is not None and unless.done()):
            return
        if any(says in p.last_failure.message for p in described.raw_description.pending_activities):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no call of run {run_id} was refused")


@contextlib.asynccontextmanager
async def rolling_deploy(
    server: TemporalServer, runs: TemporalRuns, state: dict[str, Any]
) -> AsyncIterator[str]:
    """A rolling deploy, deterministic: only the old worker (its catalog lacks `counter`) polls when a run
    of it starts; once it has refused the run's first call (seen in Temporal's pending activity, not slept
    for), a new worker process that has the agent starts, both poll the queue, and the old one stops.
    Yields the run's id while the new worker process runs."""
    with contextlib.ExitStack() as deployed:
        async with await worker(runs, other_catalog(), catalog_wait=120.0):
            run_id = await runs.start("counter", "count", state=state, wait=False)
            assert isinstance(run_id, str)
            await refused_once(runs, run_id, LACKS)
            deployed.enter_context(worker_process(server, runs.task_queue, catalog_wait=120.0))
        yield run_id


async def attempts_of(runs: TemporalRuns, run_id: str, activity: str) -> list[int]:
    """The attempt at which each of the run's `activity` calls last started, from its history."""
    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    ours = {
        e.event_id
        for e in history.events
        if e.activity_task_scheduled_event_attributes.activity_type.name == activity
    }
    return [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
        and e.activity_task_started_event_attributes.scheduled_event_id in ours
    ]


def test_a_run_a_worker_lacks_the_agent_of_ends_on_the_worker_of_the_queue_that_has_it(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    # A rolling deploy (`rolling_deploy`). Before, the refusal was final: the run ended `error` at once.
    async def scenario() -> tuple[RunResult, list[int], WorkflowHistory]:
        runs = await connected(temporal)
        state = {"script": "success", "dir": str(tmp_path)}
        async with rolling_deploy(temporal, runs, state) as run_id:
            result = await asyncio.wait_for(runs.result(run_id), 120)
        history = await runs.client.get_workflow_handle(run_id).fetch_history()
        return result, await attempts_of(runs, run_id, w.PREPARE), history

    result, attempts, history = asyncio.run(scenario())
    assert (result.reason, result.error_type) == (StopReason.SUCCESS, None), result.note
    assert attempts[0] >= 2  # prepared past its first attempt, which the old worker refused
    assert replay_failure(history) is None  # and the run's history replays under this code


def test_a_reply_whose_check_an_old_worker_refuses_is_checked_by_a_new_one_and_taken(
    temporal: TemporalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reply to a waiting run is taken once a worker has checked it can go on (`endstate.ready`). Part-way
    # through a deploy an old worker that lacks the agent refused the check for good: the reply was
    # refused, though a new worker had the agent. Now its refusal is tried again within the check's window
    # (two minutes here, so that a loaded machine does not decide the outcome), and the new worker takes it.
    monkeypatch.setattr(run_workflow, "READY_TIMEOUT", timedelta(minutes=2))

    async def scenario() -> RunResult:
        runs = await connected(temporal)
        q = runs.task_queue
        async with serving(temporal, catalog(), q):
            asked = await runs.start("counter", "count", state={"script": "question", "dir": str(tmp_path)})
        assert isinstance(asked, RunResult) and asked.reason is StopReason.NEED_HELP
        async with contextlib.AsyncExitStack() as deployed:
            async with serving(temporal, other_catalog(), q, catalog_wait=120.0):  # only the old worker
                answering = asyncio.create_task(runs.answer(asked.run_id, "3"))
                await refused_once(runs, asked.run_id, LACKS, unless=answering)
                await deployed.enter_async_context(serving(temporal, catalog(), q))  # the new one arrives
            return await asyncio.wait_for(answering, 120)  # the old one has stopped

    done = asyncio.run(scenario())
    assert (done.reason, done.turns) == (StopReason.SUCCESS, 4)


@pytest.mark.parametrize(
    ("agent", "task_type", "says", "what"),
    [
        ("counter", None, LACKS, "this worker's catalog has no agent 'counter'"),
        ("counter", "ad-hoc", "does not run task type 'ad-hoc'", "does not run task type 'ad-hoc'"),
    ],
)
def test_a_run_no_worker_can_build_ends_error_saying_why_once_the_wait_is_spent(
    temporal: TemporalServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    agent: str,
    task_type: str | None,
    says: str,
    what: str,
) -> None:
    # 6 s: tried at once, after 1 s and 2 s more, then refused for good (the next try, 4 s later, would pass
    # 6 s); fewer tries when a loaded machine took a try late.
    async def scenario() -> tuple[RunResult, list[int]]:
        runs = await connected(temporal)
        lacking = other_catalog() if task_type is None else catalog()
        async with await worker(runs, lacking, catalog_wait=6.0):
            state = {"script": "success", "dir": str(tmp_path)}
            result = await asyncio.wait_for(runs.start(agent, "count", state=state, task_type=task_type), 120)
        assert isinstance(result, RunResult)
        return result, await attempts_of(runs, result.run_id, w.PREPARE)

    with caplog.at_level(logging.DEBUG):
        result, attempts = asyncio.run(scenario())
    assert (result.reason, result.error_type) == (StopReason.ERROR, "ConfigError")
    assert says in result.note
    assert "any worker polling its task queue, so every one of them needs the same catalog" in result.note
    [tries] = attempts
    assert 2 <= tries <= 3  # before, refused for good at the first
    assert (
        f"It was tried {tries} times, by any worker of the queue, within 6 s (--catalog-wait)" in result.note
    )
    said = [r for r in caplog.records if r.levelno >= logging.WARNING and what in r.getMessage()]
    assert len(said) == tries  # one line a try
    assert "tries its endstate.prepare call again in 1 s (attempt 2)" in said[0].getMessage()
    assert "its endstate.prepare call is refused for good" in said[-1].getMessage()
    tracebacks = [r for r in caplog.records if r.levelno >= logging.WARNING and r.exc_info]
    assert tracebacks == []  # one line a try, no traceback


def test_the_clis_default_wait_is_the_workers() -> None:
    assert CATALOG_WAIT_S == w.CATALOG_WAIT
    assert w.refusals_within(0) == 0 and w.refusals_within(3) == 2 and w.refusals_within(300) == 32


@pytest.mark.parametrize(
    "fixture",
    [
        # counter, `success` script: prepare, model calls, tool calls, the check, cleanup
        "temporal_v12_before_catalog_wait_success_history.json.gz",
        # a run of an agent the worker lacked: refused at prepare, for good at once
        "temporal_v12_before_catalog_wait_refused_history.json.gz",
    ],
)
def test_a_history_recorded_before_the_catalog_wait_still_replays(fixture: str) -> None:
    """Runs started by the code before `_remote.CATALOG_ROOM` (`fetch_history().to_json()`) replay under
    this code: their calls keep the retry policies they were scheduled with."""
    path = Path(__file__).parent / "fixtures" / fixture
    assert (
        replay_failure(WorkflowHistory.from_json(fixture, gzip.decompress(path.read_bytes()).decode()))
        is None
    )


def replay_failure(history: WorkflowHistory) -> Exception | None:
    """Why `history` does not replay under this code, or None."""
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure
