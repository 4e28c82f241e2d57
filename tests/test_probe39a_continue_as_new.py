"""A long run on Temporal continues as new past its history bound and goes on as if nothing happened."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import pytest
import temporal_agents
from prometheus_client import CollectorRegistry
from temporal_server import TemporalServer, serving, waiting
from test_temporal import calls_log, queue, replay_failure, state, temporal  # noqa: F401  (temporal: the server fixture)

from agent.cli.main import main
from agent.durable.catalog import Catalog
from agent.durable.store import RunStatus
from agent.errors import ConfigError
from agent.result import LimitKind, RunResult, StopReason
from agent.temporal import TemporalRuns, _registry, build_worker, workflow
from agent.temporal import _wire as w
from agent.temporal._registry import WorkerSetup
from telemetry import Telemetry
from telemetry import names as n

pytestmark = pytest.mark.slow

LOW = 150  # history events: a turn takes about a dozen, so a 40-turn run continues as new several times
LABELS = {"agent": "counter", "task_type": "counting"}


def samples(registry: CollectorRegistry, name: str) -> list[Any]:
    return [s for metric in registry.collect() for s in metric.samples if s.name == name]


def stops(registry: CollectorRegistry) -> dict[str, float]:
    """The run's segment ends counted, by stop reason (those counted at all)."""
    counted: dict[str, float] = {}
    for s in samples(registry, f"{n.METRIC_STOPS}_total"):
        if s.value:
            reason = s.labels[n.LABEL_STOP_REASON]
            counted[reason] = counted.get(reason, 0) + s.value
    return counted


async def executions(runs: TemporalRuns, run_id: str) -> list[str]:
    """The run's executions, first to latest, followed on the server from the first one's history."""
    latest = await runs.client.get_workflow_handle(run_id).describe()
    chain = [latest.raw_description.workflow_execution_info.first_run_id]
    while True:
        history = await runs.client.get_workflow_handle(run_id, run_id=chain[-1]).fetch_history()
        last = history.events[-1]
        if not last.HasField("workflow_execution_continued_as_new_event_attributes"):
            return chain
        chain.append(last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id)


async def waiting_record(runs: TemporalRuns, run_id: str, seconds: float = 60.0) -> Any:
    """The run's record once visibility shows it waiting (or the last one read after `seconds`):
    Temporal's visibility is updated after the workflow task that upserts it, so a read at once may
    still show the execution a hand-over began running."""
    record = await runs.record(run_id)
    deadline = asyncio.get_running_loop().time() + seconds
    while (
        record is None or record.status is not RunStatus.WAITING
    ) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)
        record = await runs.record(run_id)
    return record


async def run_once(
    tmp_path: Path, server: TemporalServer, bound: int | None, **more: Any
) -> tuple[RunResult, int]:
    """A run of `more` on a worker with `bound` (None: the default), its result and executions. Heartbeats
    30 s apart: a model call whose heartbeat a loaded machine delays past the tests' usual 2 s is tried
    again (CI once saw a run of 40 turns against 41, when a retried call played the scripted model's next
    step; since probe40a a retry on the same worker takes the call's reply: see
    test_probe40a_retried_model_temporal)."""
    options: dict[str, Any] = {"heartbeat_seconds": 30.0}
    if bound is not None:
        options["continue_after_events"] = bound
    async with serving(server, temporal_agents.catalog(), queue(), **options) as runs:
        result = await runs.start("counter", "count", state=state(tmp_path, "bench", **more))
        assert isinstance(result, RunResult)
        return result, len(await executions(runs, result.run_id))


def test_a_long_run_continues_as_new_and_ends_as_it_does_in_one_execution(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        for more in ({"k": 40, "max_turns": 60}, {"k": 40, "max_turns": 30}):
            bounded, moves = await run_once(tmp_path / "a", temporal, LOW, **more)
            whole, one = await run_once(tmp_path / "b", temporal, None, **more)
            assert moves >= 3 and one == 1  # continued as new at least twice
            for r in (bounded, whole):
                assert (r.reason, r.limit) in (
                    (StopReason.SUCCESS, None),
                    (StopReason.LIMIT, LimitKind.TURNS),
                )
            assert (bounded.reason, bounded.turns, bounded.verified) == (
                whole.reason,
                whole.turns,
                whole.verified,
            )
            assert bounded.usage.input_tokens == whole.usage.input_tokens
            assert bounded.usage.output_tokens == whole.usage.output_tokens
            if whole.snapshot is not None:  # the limit stop: the journal carried whole, entry for entry
                assert bounded.snapshot is not None
                kinds = [type(e).__name__ for e in bounded.snapshot.journal]
                assert kinds == [type(e).__name__ for e in whole.snapshot.journal]
                assert bounded.snapshot.segment == whole.snapshot.segment + moves - 1

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    asyncio.run(scenario())


def test_a_run_handed_over_is_answered_listed_once_and_counted_once(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        telemetry = Telemetry.from_env({}, registry=CollectorRegistry())
        try:
            async with serving(
                temporal, temporal_agents.catalog(), queue(), hooks=telemetry.hooks, continue_after_events=LOW
            ) as runs:
                asked = await runs.start(
                    "counter", "count", state=state(tmp_path, "bench-ask", k=30, max_turns=60)
                )
                assert isinstance(asked, RunResult) and asked.reason is StopReason.NEED_HELP
                assert len(await executions(runs, asked.run_id)) >= 3
                record = await waiting_record(runs, asked.run_id)
                assert record is not None and record.status is RunStatus.WAITING
                done = await runs.answer(asked.run_id, "yes")
                assert (done.reason, done.turns) == (StopReason.SUCCESS, 34)
                listed = [r for r in await runs.runs(limit=None) if r.run_id == asked.run_id]
                assert len(listed) == 1
            started = telemetry.registry.get_sample_value(f"{n.METRIC_RUNS_STARTED}_total", LABELS)
            assert started == 1
            assert stops(telemetry.registry) == {"need_help": 1, "success": 1}  # no stop for a hand-over
            resumed = [s for s in samples(telemetry.registry, f"{n.METRIC_RUNS_RESUMED}_total") if s.value]
            assert [s.labels[n.LABEL_STOP_REASON] for s in resumed] == ["need_help"]  # the answer only
        finally:
            telemetry.shutdown()

    asyncio.run(scenario())


def test_a_run_bound_to_one_event_moves_on_a_turn_an_execution_and_waits_in_one(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Past the bound at every boundary: each execution plays one turn and hands over at the next (never
    at its first), the question is asked and handed over before the run waits, and the execution that
    begins waiting waits there; the answer is taken and the run ends as it would in one execution."""

    async def scenario() -> None:
        async with serving(temporal, temporal_agents.catalog(), queue(), continue_after_events=1) as runs:
            asked = await runs.start("counter", "count", state=state(tmp_path, "bench-ask", k=3, max_turns=9))
            assert isinstance(asked, RunResult) and (asked.reason, asked.turns) == (StopReason.NEED_HELP, 4)
            await waiting(runs, asked.run_id)
            assert len(await executions(runs, asked.run_id)) == 5  # turns 1-3 and the ask, then the wait
            record = await runs.record(asked.run_id)
            assert record is not None and record.segments == 1  # the hand-overs counted no segment
            assert record.question == "Count on?"  # whichever execution visibility shows
            done = await runs.answer(asked.run_id, "yes")
            assert (done.reason, done.turns, done.verified) == (StopReason.SUCCESS, 7, True)
            assert len(await executions(runs, asked.run_id)) == 7  # turn 5 where it waited, then 6, then 7
            assert calls_log(tmp_path, asked.run_id) == [
                f"{e} {i}" for i in (1, 2, 3, 1, 2) for e in ("start", "end")
            ]

    asyncio.run(scenario())


def test_a_run_cancelled_after_a_hand_over_ends_cancelled_and_resumes(
    temporal: TemporalServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with serving(temporal, temporal_agents.catalog(), queue(), continue_after_events=LOW) as runs:
            asked = await runs.start(
                "counter", "count", state=state(tmp_path, "bench-ask", k=30, max_turns=60)
            )
            assert isinstance(asked, RunResult) and asked.reason is StopReason.NEED_HELP
            await waiting(runs, asked.run_id)
            await runs.cancel(asked.run_id)
            ended = await runs.result(asked.run_id)
            assert ended.reason is StopReason.CANCELLED
            again = await runs.resume(asked.run_id)
            assert again.reason is StopReason.NEED_HELP and again.turns == asked.turns

    asyncio.run(scenario())


def test_a_history_recorded_before_continue_as_new_still_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 41-turn run (706 events) started by the code before `CONTINUE_AS_NEW` replays under this code on
    a worker whose bound it passes; with the gate gone it would continue as new, and not replay."""
    fixture = "temporal_v10_before_continue_as_new_history.json.gz"
    monkeypatch.setattr(_registry, "_DEFAULT", WorkerSetup(continue_after_events=LOW))  # the replayer's setup
    assert replay_failure(fixture) is None
    patched = workflow.workflow.patched
    monkeypatch.setattr(
        workflow.workflow, "patched", lambda patch: patch == workflow.CONTINUE_AS_NEW or patched(patch)
    )
    assert "Nondeterminism" in str(replay_failure(fixture))


@pytest.mark.parametrize("given", ["0", "-5", "ten", "1.5"])
def test_a_workers_continue_after_that_is_no_count_of_events_is_a_usage_error_naming_it(
    given: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["worker", "--continue-after", given, "--temporal", "127.0.0.1:1"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "error: argument --continue-after: " in err.splitlines()[-1], err


@pytest.mark.parametrize("given", [0, w.MAX_HISTORY_EVENTS + 1, True, 10.5])
def test_build_worker_refuses_a_continue_after_past_the_runs_own_bound(given: Any) -> None:
    nothing_asked = cast(Any, None)  # refused before the client is used
    refused = r"continue_after_events must be None \(never\) or a whole number of history events"
    with pytest.raises(ConfigError, match=refused):
        asyncio.run(build_worker(nothing_asked, Catalog(), continue_after_events=given))
