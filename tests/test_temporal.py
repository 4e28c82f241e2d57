"""Endstate runs as Temporal workflows, against a real Temporal Server (the `temporal` dev server)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import temporal_agents
from load_bounds import FLUSH_S
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer, serving, temporal_fixture
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError
from temporalio.worker import Replayer

from agent import CompositeHooks, HistoryPolicy, Image, RunInfo, RunObserver, SearchResult
from agent.budget import Extension
from agent.content import text_of
from agent.durable.runner import AnswerError, Catalog
from agent.durable.store import NotClaimable, RunRecord, RunStatus, UnknownRun
from agent.journal import Reply, Result, Text
from agent.models.base import ModelReply, StopKind
from agent.result import LimitKind, RunResult, StopReason
from agent.temporal import TemporalRuns, _activities, _remote, build_worker, ensure_search_attributes
from agent.temporal import _wire as w
from agent.temporal._activities import KeptResults
from agent.temporal._wire import SEARCH_ATTRIBUTES, journal_from_json, journal_json, result_digest
from agent.temporal.pending import TemporalPending
from agent.temporal.worker import workflow_runner
from agent.temporal.workflow import EndstateRun
from telemetry import MetricsHooks, Telemetry, TelemetryHooks, TracingHooks
from telemetry import names as n

pytestmark = pytest.mark.slow


temporal = temporal_fixture("session")


@contextlib.asynccontextmanager
async def worker(
    server: TemporalServer, queue: str, catalog: Catalog | None = None, **options: Any
) -> AsyncIterator[TemporalRuns]:
    """A worker on `queue` in this process, and a client for it."""
    async with serving(server, catalog or temporal_agents.catalog(), queue, **options) as runs:
        yield runs


def queue() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


def calls_log(folder: Path, run_id: str) -> list[str]:
    path = folder / f"{run_id}.log"
    return path.read_text().splitlines() if path.exists() else []


async def listed_as(runs: TemporalRuns, run_id: str, status: RunStatus) -> list[RunRecord]:
    """The run as `runs` lists it, once visibility (eventually consistent) shows `status`."""
    for _ in range(600):  # a minute at least: visibility lags far behind on a loaded machine
        listed = [r for r in await runs.runs() if r.run_id == run_id]
        if [r.status for r in listed] == [status]:
            break
        await asyncio.sleep(0.1)
    return listed


def state(tmp_path: Path, script: str, **more: Any) -> dict[str, Any]:
    return {"script": script, "dir": str(tmp_path), **more}


@pytest.mark.parametrize(
    ("script", "reason", "limit"),
    [
        ("success", StopReason.SUCCESS, None),
        ("rejected-then-success", StopReason.SUCCESS, None),
        ("turns", StopReason.LIMIT, LimitKind.TURNS),
        ("gave_up", StopReason.GAVE_UP, None),
        ("no_progress", StopReason.NO_PROGRESS, None),
        ("api_down", StopReason.ERROR, None),
        ("bad_request", StopReason.ERROR, None),
        ("question", StopReason.NEED_HELP, None),
    ],
)
def test_each_stop_reason_is_the_workflows_result(
    temporal: TemporalServer, tmp_path: Path, script: str, reason: StopReason, limit: LimitKind | None
) -> None:
    async def scenario() -> None:
        async with worker(temporal, queue()) as runs:
            result = await runs.start("counter", "count", state=state(tmp_path, script))
            assert (result.reason, result.limit) == (reason, limit)
            if reason is StopReason.NEED_HELP:
                assert result.suspension is not None and result.suspension.question == "Count to 2 or 3?"
                return
            ended = await runs.result(result.run_id)  # the workflow's own result says the same
            assert (ended.reason, ended.turns, ended.verified) == (reason, result.turns, result.verified)
            listed = await listed_as(runs, result.run_id, RunStatus.FINISHED)
            assert [(r.status, r.stop_reason) for r in listed] == [(RunStatus.FINISHED, reason)]

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("agent", "task_type", "says"),
    [
        ("nobody", None, "no agent named 'nobody' in the catalog"),
        ("counter", "ad-hoc", "does not run task type"),
    ],
)
def test_a_run_the_catalog_cannot_build_ends_as_error_saying_why(
    temporal: TemporalServer, tmp_path: Path, agent: str, task_type: str | None, says: str
) -> None:
    async def scenario() -> None:
        async with worker(temporal, queue()) as runs:  # the default wait (0): refused for good at once
            began = time.monotonic()
            result = await runs.start(agent, "count", state=state(tmp_path, "success"), task_type=task_type)
            took = time.monotonic() - began
        assert (result.reason, result.error_type) == (StopReason.ERROR, "ConfigError")
        assert took < 60, f"refused after {took:.0f} s: a mistyped agent is said at once by default"
        assert says in result.note

    asyncio.run(scenario())


def test_a_verifier_rejection_goes_back_to_the_model_and_success_is_verified(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with worker(temporal, queue()) as runs:
            result = await runs.start("counter", "count", state=state(tmp_path, "rejected-then-success"))
        assert result.reason is StopReason.SUCCESS and result.verified
        assert result.verifier_failures == ("nothing was counted",)
        assert calls_log(tmp_path, result.run_id) == ["start 1", "end 1"]

    asyncio.run(scenario())


def test_a_question_is_answered_and_the_run_goes_on_in_the_same_workflow(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with worker(temporal, queue()) as runs:
            asked = await runs.start("counter", "count", state=state(tmp_path, "question"))
            with pytest.raises(AnswerError, match="waits for an answer"):
                await runs.answer(asked.run_id, "  ")
            with pytest.raises(AnswerError, match="not for an approval"):
                await runs.approve(asked.run_id)
            done = await runs.answer(asked.run_id, "3")
            assert done.reason is StopReason.SUCCESS and done.run_id == asked.run_id
            assert done.waiting_seconds > 0 and done.turns == 4
            with pytest.raises(NotClaimable, match="not waiting"):
                await runs.answer(asked.run_id, "again")
        assert calls_log(tmp_path, asked.run_id) == ["start 1", "end 1", "start 3", "end 3"]

    asyncio.run(scenario())


@pytest.mark.parametrize("approved", [True, False])
def test_a_tool_needing_approval_runs_only_when_approved(
    temporal: TemporalServer, tmp_path: Path, approved: bool
) -> None:
    async def scenario() -> None:
        async with worker(temporal, queue()) as runs:
            asked = await runs.start("counter", "push", state=state(tmp_path, "approval"))
            assert asked.reason is StopReason.NEED_HELP
            assert asked.suspension is not None and asked.suspension.pending is not None
            assert asked.suspension.pending.name == "push"
            with pytest.raises(AnswerError, match="approval of the call 'push'"):
                await runs.answer(asked.run_id, "yes")
            done = await (runs.approve(asked.run_id) if approved else runs.deny(asked.run_id, "not today"))
            assert done.reason is StopReason.SUCCESS
        pushed = "push fix" in calls_log(tmp_path, asked.run_id)
        assert pushed is approved

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("on_timeout", "reason", "log"),
    [
        ("end", StopReason.HELP_TIMEOUT, ["start 1", "end 1"]),
        ("resume", StopReason.SUCCESS, ["start 1", "end 1", "start 3", "end 3"]),
    ],
)
def test_a_deadline_passing_applies_the_help_policy(
    temporal: TemporalServer, tmp_path: Path, on_timeout: str, reason: StopReason, log: list[str]
) -> None:
    async def scenario() -> None:
        async with worker(temporal, queue()) as runs:
            asked = await runs.start(
                "counter", "count", state=state(tmp_path, "question", wait=1.0, on_timeout=on_timeout)
            )
            assert asked.reason is StopReason.NEED_HELP
            ended = await runs.result(asked.run_id)  # the timer fires; nobody answers
            assert ended.reason is reason
            assert ended.waiting_seconds >= 1.0
            with pytest.raises(NotClaimable):
                await runs.answer(asked.run_id, "too late")
        assert calls_log(tmp_path, asked.run_id) == log

    asyncio.run(scenario())


async def wait_for_line(folder: Path, run_id: str, line: str) -> None:
    for _ in range(1200):
        if line in calls_log(folder, run_id):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{line!r} never appeared in run {run_id}'s log")


def test_a_cancelled_run_ends_cancelled_and_resumes_to_success(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    hold = tmp_path / "hold.flag"  # count(3) waits until the cancel was asked for (the run cannot end first)
    hold.write_text("hold")

    async def scenario() -> None:
        async with worker(temporal, queue()) as runs:
            slow = state(tmp_path, "slow", sleep=0.3, max_turns=10, hold=str(hold), hold_at=3)
            run_id = await runs.start("counter", "count", state=slow, wait=False)
            assert isinstance(run_id, str)
            await wait_for_line(tmp_path, run_id, "start 3")
            finished = {line for line in calls_log(tmp_path, run_id) if line.startswith("end")}
            await runs.cancel(run_id)
            hold.unlink()
            cancelled = await runs.result(run_id)
            assert cancelled.reason is StopReason.CANCELLED and cancelled.snapshot is not None
            assert [r.status for r in await listed_as(runs, run_id, RunStatus.CANCELLED)] == [
                RunStatus.CANCELLED
            ]
            done = await runs.resume(run_id)
            assert done.reason is StopReason.SUCCESS and done.run_id == run_id
            with pytest.raises(NotClaimable, match="not cancelled"):
                await runs.resume(run_id)
            await listed_as(runs, run_id, RunStatus.FINISHED)
            # `endstate runs --status cancelled` listed it still, by its older (cancelled) execution
            assert run_id not in [r.run_id for r in await runs.runs(RunStatus.CANCELLED)]
        ended = [line for line in calls_log(tmp_path, run_id) if line.startswith("end")]
        assert finished <= set(ended) and "end 6" in ended
        assert all(
            ended.count(line) == 1 for line in finished
        )  # a call done before the cancel never ran again

    asyncio.run(scenario())


def test_a_run_its_catalogs_cancel_stopped_resumes_on_the_same_worker(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    """The seed's `csv/shutdown` (its world's cancel signal set mid-run) resumed over Temporal ended
    cancelled again at once on the worker that had played it: the worker kept the run's agent and
    cancel signal from before the cancel. A resume (a new execution) asks the catalog for both again,
    as the store's runner does for each segment, and `endstate demo --list`'s "cancelled then resume
    -> success" holds on Temporal too."""
    from agent.examples.scenarios import example_catalog

    async def scenario() -> None:
        async with worker(temporal, queue(), example_catalog(tmp_path / "worlds")) as runs:
            shutdown = {"scenario": "csv/shutdown"}
            first = await runs.start("csv-cleaner", "Clean the export", state=shutdown)
            assert isinstance(first, RunResult) and first.reason is StopReason.CANCELLED
            done = await runs.resume(first.run_id)
            assert (done.reason, done.output) == (StopReason.SUCCESS, "Cleaned after the restart.")

    asyncio.run(scenario())


def test_a_run_cancelled_while_waiting_resumes_into_the_same_wait(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with worker(temporal, queue()) as runs:
            asked = await runs.start("counter", "count", state=state(tmp_path, "question"))
            await runs.cancel(asked.run_id)
            assert (await runs.result(asked.run_id)).reason is StopReason.CANCELLED
            again = await runs.resume(asked.run_id)
            assert again.reason is StopReason.NEED_HELP and again.suspension == asked.suspension
            done = await runs.answer(asked.run_id, "3")
            assert done.reason is StopReason.SUCCESS

    asyncio.run(scenario())


def test_a_run_on_another_task_queue_is_not_found_naming_its_queue_and_left_as_it_was(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    """Two deployments share a namespace: a client acts on its own queue's runs only, as it lists only
    those. Every call by run id refuses the other queue's run, saying which queue it is on."""

    async def scenario() -> None:
        async with worker(temporal, queue()) as theirs:
            asked = await theirs.start("counter", "count", state=state(tmp_path, "question"))
            mine = await TemporalRuns.connect(temporal.address, task_queue=queue())
            run_id, more = asked.run_id, Extension(turns=5)
            calls = {
                "answer": lambda: mine.answer(run_id, "3"),
                "approve": lambda: mine.approve(run_id),
                "deny": lambda: mine.deny(run_id, "no"),
                "submit": lambda: mine.submit(run_id, "3"),
                "cancel": lambda: mine.cancel(run_id),
                "resume": lambda: mine.resume(run_id),
                "resume with more": lambda: mine.resume(run_id, more),
                "submit_resume": lambda: mine.submit_resume(run_id),
                "record": lambda: mine.record(run_id),
                "result": lambda: mine.result(run_id),
                "ended": lambda: mine.ended(run_id),
            }
            for name, call in calls.items():
                with pytest.raises(UnknownRun, match=f"it is on task queue '{theirs.task_queue}'") as refused:
                    await call()
                assert f"on task queue '{mine.task_queue}'" in str(refused.value), name
            assert await mine.record("no-such-run") is None  # a run of no queue: none, as before
            record = await theirs.record(run_id)
            assert record is not None and record.status is RunStatus.WAITING
            done = await theirs.answer(run_id, "3")  # its own queue's client (named explicitly) acts on it
            assert done.reason is StopReason.SUCCESS
        assert calls_log(tmp_path, run_id) == ["start 1", "end 1", "start 3", "end 3"]

    asyncio.run(scenario())


async def ready_attempts(runs: TemporalRuns, run_id: str, at_least: int, unless: asyncio.Task[Any]) -> None:
    """Until the run's `endstate.ready` check is on its `at_least`-th attempt (a minute at least), or
    `unless` ends first (then its outcome is raised, or a failure saying so)."""
    handle = runs.client.get_workflow_handle(run_id)
    for _ in range(600):
        if unless.done():
            raise AssertionError(f"taken or refused at once: {unless.result()!r}")
        pending = (await handle.describe()).raw_description.pending_activities
        if any(a.activity_type.name == w.READY and a.attempt >= at_least for a in pending):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the check never reached attempt {at_least}")


def test_a_reply_sent_while_only_old_workers_poll_waits_for_a_new_one_to_check_it(
    temporal: TemporalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rolling deploy: a person answers while only workers from before `endstate.ready` poll the run's
    queue (they fail the check as an unregistered activity). The check is tried again, about a second
    apart, for as long as `READY_TIMEOUT` allows: a new worker arriving meanwhile checks it and the
    answer is taken, rather than refused after three quick attempts (here the window is two minutes, so
    that a loaded machine starting the new worker late does not decide the outcome)."""
    from datetime import timedelta

    from agent.temporal import workflow as run_workflow

    monkeypatch.setattr(run_workflow, "READY_TIMEOUT", timedelta(minutes=2))
    every = _activities.EndstateActivities.all

    def before_ready(self: _activities.EndstateActivities) -> list[Any]:
        return [a for a in every(self) if a != self.ready]

    async def scenario() -> RunResult:
        q = queue()
        async with worker(temporal, q) as runs:
            asked = await runs.start("counter", "count", state=state(tmp_path, "question"))
        with monkeypatch.context() as old_release:
            old_release.setattr(_activities.EndstateActivities, "all", before_ready)
            old = await build_worker(runs.client, temporal_agents.catalog(), task_queue=q)
        async with old:
            answering = asyncio.create_task(runs.answer(asked.run_id, "3"))
            await ready_attempts(runs, asked.run_id, at_least=4, unless=answering)
            async with worker(temporal, q):  # the new release arrives
                return await asyncio.wait_for(answering, 120)

    done = asyncio.run(scenario())
    assert (done.reason, done.turns) == (StopReason.SUCCESS, 4)


def test_pending_help_comes_from_temporal_visibility(temporal: TemporalServer, tmp_path: Path) -> None:
    async def scenario() -> None:
        q = queue()
        async with worker(temporal, q) as runs:
            asked = await runs.start("counter", "count", state=state(tmp_path, "question"), task_type="batch")
            pending = TemporalPending(temporal.address)
            metrics = Telemetry.from_env({}, registry=CollectorRegistry(), pending=pending)
            labels = {"agent": "counter", "task_type": "batch"}
            try:
                for _ in range(600):  # visibility is eventually consistent (a minute at least)
                    count = await asyncio.to_thread(
                        metrics.registry.get_sample_value, n.METRIC_HELP_PENDING, labels
                    )
                    if count:
                        break
                    await asyncio.sleep(0.1)
                assert count == 1
                oldest = metrics.registry.get_sample_value(n.METRIC_HELP_OLDEST_PENDING_SECONDS, labels)
                assert oldest is not None and oldest >= 0
                assert [r.run_id for r in await runs.pending() if r.run_id == asked.run_id] == [asked.run_id]
                await runs.answer(asked.run_id, "3")
                for _ in range(600):
                    count = await asyncio.to_thread(
                        metrics.registry.get_sample_value, n.METRIC_HELP_PENDING, labels
                    )
                    if not count:
                        break
                    await asyncio.sleep(0.1)
                assert not count  # no series (this registry saw no run of it) or zero
            finally:
                pending.close()
                metrics.shutdown()

    asyncio.run(scenario())


class SeenRuns:
    """A user's own hooks: the `RunInfo` of every segment observer they were asked for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._infos: list[RunInfo] = []

    def run_started(self, info: RunInfo) -> RunObserver:
        with self._lock:
            self._infos.append(info)
        return RunObserver()

    def infos(self) -> list[RunInfo]:
        with self._lock:
            return list(self._infos)


@pytest.mark.parametrize(("cached", "composite"), [(True, False), (False, False), (False, True)])
def test_replay_never_repeats_a_span_or_a_count(
    temporal: TemporalServer, tmp_path: Path, cached: bool, composite: bool
) -> None:
    """With the workflow cache the segment is traced whole; with none, every workflow task
    replays the run from its start, and what was replayed is not traced or counted again: one
    run span, which the result points at, and none begun that never ended (each workflow task
    began one, at its first live event). The same with the tracing hooks inside a user's
    `CompositeHooks`, whose other hooks are given the planned ids too."""

    async def scenario() -> None:
        spans = InMemorySpanExporter()
        telemetry = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=spans)
        opened = OpenSpans.on(telemetry)
        options = {} if cached else {"max_cached_workflows": 0}
        seen, tracing = SeenRuns(), telemetry.tracing
        assert tracing is not None
        hooks = CompositeHooks((seen, telemetry.metrics, tracing)) if composite else telemetry.hooks
        async with worker(temporal, queue(), hooks=hooks, **options) as runs:
            result = await runs.start("counter", "count", state=state(tmp_path, "success"))
        assert result.reason is StopReason.SUCCESS and result.turns == 3
        assert telemetry.force_flush(FLUSH_S), "the spans were not exported"
        names = [s.name for s in spans.get_finished_spans()]
        counts = (
            names.count("invoke_agent counter"),
            names.count("agent.turn"),
            names.count("execute_tool count"),
        )
        assert counts == (1, 3, 2) if cached else counts[0] == 1 and counts[1] <= 3 and counts[2] <= 2
        (run_span,) = [s for s in spans.get_finished_spans() if s.name == "invoke_agent counter"]
        assert result.trace_id == f"{run_span.context.trace_id:032x}"
        assert opened.names() == []
        labels = {
            "agent": "counter",
            "task_type": "counting",
            "stop_reason": "success",
            "stop_limit": n.NO_LIMIT,
            n.LABEL_STOP_CAUSE: "",
        }
        assert telemetry.registry.get_sample_value(n.METRIC_STOPS + "_total", labels) == 1
        if composite:  # every workflow task's live part observed, each knowing the planned trace
            infos = seen.infos()
            assert infos and {i.planned.trace_id if i.planned else None for i in infos} == {result.trace_id}
        telemetry.shutdown()

    asyncio.run(scenario())


def test_metrics_only_telemetry_beside_a_users_tracing_points_the_result_at_the_users_span(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    """Metrics-only Endstate telemetry plans span ids (it has no span to plan) but reports none; a
    user's own tracing beside it in a composite makes the run's span with random ids, and the result
    points at that span, not at nothing."""

    async def scenario() -> None:
        spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        metrics_only = TelemetryHooks(MetricsHooks(CollectorRegistry()))
        hooks = CompositeHooks((metrics_only, TracingHooks(provider)))
        assert hooks.plans_spans and metrics_only.planned_ids(RunInfo("r", "a", "t", "m", "p", "x")) is None
        async with worker(temporal, queue(), hooks=hooks) as runs:
            result = await runs.start("counter", "count", state=state(tmp_path, "success"))
        assert result.reason is StopReason.SUCCESS
        (run_span,) = [s for s in spans.get_finished_spans() if s.name == "invoke_agent counter"]
        assert result.trace_id == f"{run_span.context.trace_id:032x}"

    asyncio.run(scenario())


def test_a_workers_hooks_whose_planned_ids_exits_still_observe_the_run(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    """A worker's hooks whose `planned_ids` raises `SystemExit` (no `Exception`): the replay-safe
    observer let it by, the segment's whole observer was dropped, and the run went uncounted. It is
    logged as a hook's failure, as everywhere else, and the run is observed without planned ids."""

    class ExitingPlan(TelemetryHooks):
        def planned_ids(self, info: RunInfo) -> Any:
            raise SystemExit("a user's planner")

    async def scenario() -> None:
        registry = CollectorRegistry()
        async with worker(temporal, queue(), hooks=ExitingPlan(MetricsHooks(registry))) as runs:
            result = await runs.start("counter", "count", state=state(tmp_path, "success"))
        assert result.reason is StopReason.SUCCESS
        labels = {
            "agent": "counter",
            "task_type": "counting",
            "stop_reason": "success",
            "stop_limit": n.NO_LIMIT,
            n.LABEL_STOP_CAUSE: "",
        }
        assert registry.get_sample_value(n.METRIC_STOPS + "_total", labels) == 1

    asyncio.run(scenario())


def test_a_composite_plans_spans_when_one_of_its_hooks_does_and_reports_that_ones_ids() -> None:
    """The lookup `ReplaySafeHooks` makes on a worker's hooks: planning hooks inside a composite are
    found past others, one whose `planned_ids` raises is passed over, and a composite of hooks that
    cannot take planned ids does not plan."""
    from agent.hooks import SegmentLink
    from telemetry.tracing import PlannedIds

    class Raising(SeenRuns):
        plans_spans = True

        def planned_ids(self, info: RunInfo) -> SegmentLink | None:
            raise RuntimeError("a user's hooks failing")

    planned = SegmentLink("ab" * 16, "cd" * 8)
    info = RunInfo("run-1", "counter", "counting", "m", "p", "count", planned=planned)
    tracing = TracingHooks(TracerProvider(id_generator=PlannedIds()))
    composite = CompositeHooks((SeenRuns(), Raising(), tracing))
    assert composite.plans_spans and composite.planned_ids(info) == planned
    assert not CompositeHooks((SeenRuns(), TracingHooks(TracerProvider()))).plans_spans  # random ids


def test_a_worker_restarted_with_a_changed_agent_finishes_the_runs_in_flight(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    """Runs keep the plan they started with; new runs get the new agent."""

    async def scenario() -> None:
        q = queue()
        async with worker(temporal, q) as runs:
            asked = await runs.start("counter", "count", state=state(tmp_path, "question"))
            assert asked.reason is StopReason.NEED_HELP
        async with worker(temporal, q, catalog=temporal_agents.changed_catalog()) as runs:
            done = await runs.answer(asked.run_id, "3")  # replayed from history by a worker with no cache
            assert done.reason is StopReason.SUCCESS
            new = await runs.start("counter", "count", state=state(tmp_path, "turns"))
            assert new.reason is StopReason.ERROR  # the new budget (50 turns) outlives the script
            assert "no step for turn 11" in new.note

    asyncio.run(scenario())


def test_a_run_keeps_the_plan_it_started_with_and_its_history_replays_with_the_changed_agent(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        q = queue()
        async with worker(temporal, q) as runs:
            before = await runs.start("counter", "count", state=state(tmp_path, "ask-then-count"))
        async with worker(temporal, q, catalog=temporal_agents.changed_catalog()) as runs:
            after = await runs.start("counter", "count", state=state(tmp_path, "ask-then-count"))
            old, new = await runs.answer(before.run_id, "6"), await runs.answer(after.run_id, "6")
            assert (old.reason, old.limit, old.turns) == (
                StopReason.LIMIT,
                LimitKind.TURNS,
                4,
            )  # 4 turns, as planned
            assert (new.reason, new.turns) == (StopReason.SUCCESS, 8)  # the new agent's 50
            history = await runs.client.get_workflow_handle(before.run_id).fetch_history()
        replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None  # replayed under the changed agent without nondeterminism

    asyncio.run(scenario())


def replay_failure(fixture: str) -> Exception | None:
    """Why the workflow history recorded in `tests/fixtures/<fixture>` does not replay under this
    code (`fetch_history().to_json()` of a run of an earlier version), or None."""
    path = Path(__file__).parent / "fixtures" / fixture
    recorded = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    history = WorkflowHistory.from_json(fixture, recorded)
    replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
    return asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure


def test_a_history_recorded_before_cut_calls_were_charged_still_replays() -> None:
    """A run started by the code before `CUT_USAGE` (a tool call, then a model call the time budget cut,
    its activity cancelled; `fetch_history().to_json()`) replays under this code: `workflow.patched`."""
    assert replay_failure("temporal_v0_cut_history.json") is None


def test_a_history_recorded_before_the_model_input_went_by_digest_still_replays() -> None:
    """A run started by the code before `BY_DIGEST` (whole requests in the model activity's input: page,
    page, need_help, answer, tally, page, finish; `fetch_history().to_json()`) replays under this code."""
    assert replay_failure("temporal_v1_model_input_history.json") is None


@pytest.mark.parametrize(
    "fixture",
    [
        # counter, results of 400+ characters: count, need_help, a new worker (missing, sent), count,
        # finish checked by `endstate.verify` with the whole journal
        "temporal_v2_verify_history.json",
        # fetcher 'archives' on a worker that keeps no text: the texts it lacked passed 1.5 MB at turn 6,
        # and the run stopped payload_too_large (gzip: 2 MB of repeated characters)
        "temporal_v2_missing_texts_history.json.gz",
    ],
)
def test_a_history_recorded_before_verify_by_digest_and_texts_in_parts_still_replays(
    fixture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run started by the code before `VERIFY_BY_DIGEST` and `IN_PARTS` replays under this code; with
    those gates gone (the new path taken, no `workflow.patched` asked) it would not."""
    assert replay_failure(fixture) is None
    patched = _remote.workflow.patched
    gates = (_remote.VERIFY_BY_DIGEST, _remote.IN_PARTS)
    monkeypatch.setattr(_remote.workflow, "patched", lambda patch: patch in gates or patched(patch))
    assert "Nondeterminism" in str(replay_failure(fixture))


def test_a_history_recorded_before_finish_came_last_still_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run started by the code before `FINISH_LAST` (counter 'finish-first': count, then a reply of
    finish(done) and count(2), the finish accepted and the count never run) replays under this code;
    with the gate gone it would run the count first, and not replay."""
    fixture = "temporal_v3_finish_first_history.json"
    assert replay_failure(fixture) is None
    patched = _remote.workflow.patched
    monkeypatch.setattr(
        _remote.workflow, "patched", lambda patch: patch == _remote.FINISH_LAST or patched(patch)
    )
    assert "Nondeterminism" in str(replay_failure(fixture))


def test_a_replys_other_calls_run_before_its_finish_on_temporal_too(
    temporal: TemporalServer, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with worker(temporal, queue()) as runs:
            done = await runs.start("counter", "count", state=state(tmp_path, "finish-first"))
            assert (done.reason, done.turns) == (StopReason.SUCCESS, 2)
            assert calls_log(tmp_path, done.run_id) == ["start 1", "end 1", "start 2", "end 2"]
            asked = await runs.start(
                "counter", "count", state=state(tmp_path, "finish-first", finish_last=False)
            )
            assert (asked.reason, asked.turns) == (StopReason.SUCCESS, 2)
            assert calls_log(tmp_path, asked.run_id) == ["start 1", "end 1"]  # the agent's own order kept
            history = await runs.client.get_workflow_handle(done.run_id).fetch_history()
        replayer = Replayer(workflows=[EndstateRun], workflow_runner=workflow_runner())
        assert (await replayer.replay_workflow(history, raise_on_replay_failure=False)).replay_failure is None

    asyncio.run(scenario())


def test_a_worker_keeps_long_results_up_to_its_limit_dropping_the_least_recently_used_runs() -> None:
    kept = KeptResults(limit=2_500)
    short, first, second, third = "x" * 10, "a" * 1_000, "b" * 1_000, "c" * 1_000
    kept.keep("run-1", short)  # short results travel inline: not kept
    kept.keep("run-1", first)
    kept.keep("run-2", second)
    kept.keep("run-1", first)  # kept once; run-1 is now the most recently used
    kept.keep("run-3", third)  # over the limit: run-2's go
    assert kept.get("run-1", result_digest(short)) is None
    assert kept.get("run-1", result_digest(first)) == first
    assert kept.get("run-2", result_digest(second)) is None
    assert kept.get("run-3", result_digest(third)) == third
    kept.drop("run-1")
    assert kept.get("run-1", result_digest(first)) is None


def test_the_texts_a_worker_lacks_go_in_parts_that_fit_each_once_per_input() -> None:
    ref = _remote.RunRef("run-1", "counter", "count", "counting", {})
    a, b, c, huge = "a" * 600_000, "b" * 600_000, "c" * 600_000, "h" * 1_500_000
    sent = [ref.digested({"type": "result", "text": t}, "text", set()) for t in (a, b, c, huge)]
    da, db, dc, dh = (item["digest"] for item in sent)
    assert ref.part([da, db, dc], room=1_400_000) == {da, db}  # in order, as many as fit
    assert ref.part([dc, da], room=1_400_000) == {dc, da}
    assert ref.part([da, dh], room=1_400_000) == {dh}  # alone: its input is refused, naming its size
    once = _remote.Once({da})
    twice = [ref.digested({"type": "result", "text": a}, "text", once) for _ in range(2)]
    assert [item.get("digest") for item in twice] == [None, da]  # in full at its first place only


def test_a_reply_crosses_so_that_the_release_before_and_after_can_build_it() -> None:
    """A rolling deploy: a reply whose kind its word gives goes without `stop` (the release before it
    builds `ModelReply(**reply)`), a kind the word would not give goes, and a field a newer worker
    adds is left out rather than ending the run."""
    said = ModelReply([{"type": "text", "text": "Hi"}], stop_reason="pause_turn", stop=StopKind.PAUSED)
    sent = w.reply_json(said)
    assert "stop" not in sent and w.reply_from_json(sent).stop_reason == "pause_turn"
    other = ModelReply([{"type": "text", "text": "Hi"}], stop_reason="content_filter", stop=StopKind.REFUSED)
    assert w.reply_from_json(json.loads(json.dumps(w.reply_json(other)))).stop == StopKind.REFUSED
    newer = {**w.reply_json(said), "a_field_of_a_later_release": 1}
    assert w.reply_from_json(newer) == ModelReply(**sent)


def test_a_reply_crosses_back_with_its_kind_typed_and_a_later_releases_kind_as_its_words() -> None:
    other = ModelReply([{"type": "text", "text": "Hi"}], stop_reason="content_filter", stop=StopKind.REFUSED)
    assert w.reply_from_json(json.loads(json.dumps(w.reply_json(other)))).stop is StopKind.REFUSED
    later = {**w.reply_json(other), "stop_reason": "pause_turn", "stop": "a_kind_of_tomorrow"}
    assert w.reply_from_json(later).stop is None  # the loop reads the kind of `pause_turn`


def test_a_journal_reply_with_its_kind_crosses_a_rolling_deploy_both_ways() -> None:
    """A reply in a provider's own words crosses with its kind; the usual reply crosses without it,
    as the release before wrote it, and reads the same kind; what a release before reads is the rest
    (an entry's fields it does not know are passed by, as this release passes a later one's)."""
    own = Reply((Text("Searching."),), stop_reason="paused_here", stop=StopKind.PAUSED)
    usual = Reply((Text("Searching."),), stop_reason="pause_turn")
    crossed = json.loads(json.dumps(journal_json([own, usual])))
    assert crossed[0]["stop"] == "paused" and "stop" not in crossed[1]
    assert journal_from_json(crossed) == [own, usual]
    assert [e.stop for e in journal_from_json(crossed)] == [StopKind.PAUSED, StopKind.PAUSED]
    newer = [{**crossed[0], "a_field_of_a_later_release": 1}]
    assert journal_from_json(newer) == [own]
    before = [{k: v for k, v in crossed[0].items() if k != "stop"}]  # what a release before keeps of it
    assert journal_from_json(before) == [Reply((Text("Searching."),), stop_reason="paused_here")]


def test_a_state_a_tool_emptied_is_sent_empty_not_as_the_run_began() -> None:
    """The next tool and the verifiers see what the last tool left, as they do locally."""
    ref = _remote.RunRef("run-1", "counter", "count", "counting", {"todo": ["a"]})
    assert ref.wire({})["state"] == {}
    assert ref.wire({"todo": []})["state"] == {"todo": []}
    assert ref.wire()["state"] == {"todo": ["a"]}  # a call that carries no state: the run's first


def test_a_worker_keeps_a_result_of_blocks_as_the_workflow_names_it_whole_and_cut() -> None:
    """The blocks go by the digest of their JSON in the encoded journal: the worker that made them keeps
    that JSON, and the JSON of the blocks as the history policy cuts them, so no model call asks."""
    passages = SearchResult("https://kb/1", "Refunds", ("r" * 500,))
    photo = Image.from_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR" + bytes((0, 0, 1, 0)) * 2 + bytes(300))
    blocks = ("a photo", photo, passages)
    result = Result("toolu_1", text_of(blocks), blocks=blocks)
    ref = _remote.RunRef("run-1", "counter", "count", "counting", {})
    for cap in (None, 300):
        policy = HistoryPolicy(max_result_chars=cap)
        (shown,) = ref.journal_wire(policy.view([result]), set())
        assert shown["blocks"] is None and shown["json"] is True  # by digest
        assert shown["digest"] in {result_digest(t) for t in _activities._as_sent(result, 300)}


def test_a_result_of_blocks_crosses_without_its_text_which_the_blocks_make_again() -> None:
    """The stores write a result's text beside its blocks (for older readers); on the wire the blocks
    go by digest and the text, as long as a document's, would go whole."""
    blocks = ("a caption", SearchResult("https://kb/1", "Refunds", ("r" * 5_000,)))
    result = Result("toolu_1", text_of(blocks), blocks=blocks)
    crossed = journal_json([result])[0]
    assert "text" not in crossed and journal_from_json([crossed]) == [result]


def test_a_long_result_with_a_lone_surrogate_is_kept_and_named_like_any_other() -> None:
    """A tool may return text read with `surrogateescape`: keeping it must not fail the call after
    the tool ran (Temporal would run the tool again)."""
    kept = KeptResults(limit=10_000)
    odd, near = "path \udcff " + "z" * 300, "path \udcfe " + "z" * 300
    kept.keep("run-1", odd)
    kept.keep("run-1", near)
    assert kept.get("run-1", result_digest(odd)) == odd and kept.get("run-1", result_digest(near)) == near
    assert result_digest(odd) != result_digest(near)


def test_the_worker_registers_missing_search_attributes_once_and_says_so(
    temporal: TemporalServer, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        client = await Client.connect(temporal.address)
        namespace = f"ns-{uuid.uuid4().hex[:8]}"
        await client.workflow_service.register_namespace(
            RegisterNamespaceRequest(
                namespace=namespace, workflow_execution_retention_period={"seconds": 86400}
            )
        )
        for _ in range(600):  # a new namespace takes a moment to be served (a minute at least)
            try:
                first = await ensure_search_attributes(client, namespace)
                break
            except RPCError:
                await asyncio.sleep(0.1)
        assert first == sorted(key.name for key in SEARCH_ATTRIBUTES)
        assert await ensure_search_attributes(client, namespace) == []

    with caplog.at_level(logging.WARNING, logger="endstate.temporal"):
        asyncio.run(scenario())
    said = [r.getMessage() for r in caplog.records if "registered the search attributes" in r.getMessage()]
    assert len(said) == 1 and "EndstateWaiting" in said[0]


# The fields `Price` had before web search and US-only prices were added to it.
PRICE_FIELDS_BEFORE = {
    *("input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_5m_per_mtok"),
    *("cache_write_1h_per_mtok", "long_prompt_above", "long_prompt"),
}


@pytest.mark.parametrize(  # haiku-5-5: a long-prompt price; opus-4-6: a fast-mode price, planned apart
    "model", ["claude-haiku-4-5", "claude-haiku-5-5", "claude-opus-4-6"]
)
def test_a_plans_price_leaves_out_unset_fields_so_a_worker_from_before_them_reads_it(model: str) -> None:
    """A rolling deploy: a plan made by a new worker is read by an old one's workflow, whose `Price`
    refuses keywords it does not know. Unset fields are left out (nested prices too); set ones stay."""
    from agent import Agent, Price, PriceTable
    from agent.models.scripted import ScriptedModel
    from agent.temporal import _wire

    agent = Agent("a", ScriptedModel([], name=model))
    plan = _wire.plan_of(agent)["price"]
    assert set(plan) <= PRICE_FIELDS_BEFORE and set(plan.get("long_prompt") or {}) <= PRICE_FIELDS_BEFORE
    assert _wire.planned_price(_wire.plan_of(agent)) == agent.prices.price(model)
    priced = Price(1.0, 2.0, web_search_per_1k=5.0)
    given = Agent("a", ScriptedModel([], name=model), prices=PriceTable({model: priced}))
    assert _wire.price_of(_wire.plan_of(given)["price"]) == priced


def test_a_plans_fast_mode_price_is_read_back_with_its_long_prompt_tier() -> None:
    from agent import Agent
    from agent.models.scripted import ScriptedModel
    from agent.temporal import _wire

    agent = Agent("a", ScriptedModel([], name="claude-opus-4-6"))  # fast mode, dearer above 200K
    price = agent.prices.price("claude-opus-4-6")
    assert price is not None and price.fast is not None and price.fast.long_prompt is not None
    assert _wire.planned_price(_wire.plan_of(agent)) == price


class OpenSpans(SpanProcessor):
    """The spans a tracer provider began and has not ended (a processor: it sees every span begun)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[int, int], str] = {}

    @classmethod
    def on(cls, telemetry: Telemetry) -> OpenSpans:
        opened = cls()
        provider = telemetry.tracer_provider
        assert isinstance(provider, TracerProvider)
        provider.add_span_processor(opened)
        return opened

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        with self._lock:
            self._open[_key(span)] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self._open.pop(_key(span), None)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._open.values())


def _key(span: ReadableSpan) -> tuple[int, int]:
    context = span.get_span_context()
    assert context is not None
    return context.trace_id, context.span_id


def test_a_history_recorded_before_media_counted_in_context_still_replays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run started by the code before `MEDIA_IN_CONTEXT` (a 20,000-token window, keep_last=2; look
    returned 1, 1 and 11 screenshots, then finish; the test model counts 1,600 tokens an image and
    refuses a prompt past the window): judged by the last reply alone, the fourth request went out with
    13 images, was refused, a clear let it through. It replays under this code; with the gate gone the
    11 screenshots count at once, the older turns are compacted before that request, and the refusal
    then leaves nothing to shrink: the run stops where it went on (no replay)."""
    fixture = "temporal_v7_media_priced_history.json"
    assert replay_failure(fixture) is None
    patched = _remote.workflow.patched
    monkeypatch.setattr(
        _remote.workflow, "patched", lambda patch: patch == _remote.MEDIA_IN_CONTEXT or patched(patch)
    )
    assert "Nondeterminism" in str(replay_failure(fixture))


def test_a_plan_leaves_out_media_in_context_so_a_worker_from_before_it_reads_it() -> None:
    """A rolling deploy: the workflow sets `media_in_context` (`MEDIA_IN_CONTEXT`); planned, a worker
    whose `HistoryPolicy` lacks it would refuse the plan."""
    planned = w.history_plan(HistoryPolicy(keep_last=1, media_in_context=False))
    assert "media_in_context" not in planned and planned["keep_last"] == 1
    assert w.history_of({"history": planned}).media_in_context  # the workflow then asks `patched`


def test_a_catalog_cancel_that_returns_no_signal_is_named_on_the_worker_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As the store's runner names it (a `ConfigError`), a worker logs what is wrong, once, in words, and
    runs the run without a cancel signal (no traceback, no `AttributeError` at every activity after)."""
    from agent.durable.catalog import AgentEntry

    event = threading.Event()
    catalog = Catalog(
        {
            "flag": AgentEntry(build=lambda state: None, cancel=lambda state: True),  # type: ignore[arg-type,return-value]
            "event": AgentEntry(build=lambda state: None, cancel=lambda state: event),  # type: ignore[arg-type,return-value]
        }
    )
    with caplog.at_level(logging.WARNING, logger=_activities.log.name):
        assert _activities._cancel_signal(catalog, "flag", {}, "r-1") is None
    assert "must have is_set()" in caplog.text and "'flag'" in caplog.text and "not bool" in caplog.text
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)
    assert _activities._cancel_signal(catalog, "event", {}, "r-2") is event


def test_a_start_whose_id_is_taken_stays_run_exists_when_its_queue_cannot_be_looked_up() -> None:
    """The service answers a retried start (`RunExists`) with the run it started: a failed look-up of
    the taken id's task queue (Temporal unavailable a moment) must not turn that into a 500, and a
    start without a `run_id` of its own is no `KeyError`."""
    from agent.durable.store import RunExists
    from agent.temporal.service import Bridge, TemporalRunner

    looked_up: list[str] = []

    class Runs:
        shown = None  # what the inbox shows of a run's state: not read here

        async def start(self, agent: str, task: str, **options: object) -> str:
            raise RunExists("taken")

        async def record(self, run_id: str) -> None:
            looked_up.append(run_id)
            raise RuntimeError("Temporal is unavailable")

    bridge = Bridge()
    try:
        runner = TemporalRunner(Runs(), bridge)  # type: ignore[arg-type]
        with pytest.raises(RunExists):
            runner.begin("counter", "count", run_id="r-1")
        with pytest.raises(RunExists):
            runner.begin("counter", "count")
        assert looked_up == ["r-1"]
    finally:
        bridge.close()
        bridge.loop.close()
