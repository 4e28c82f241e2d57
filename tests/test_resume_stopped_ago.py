"""`agent_runs_resumed_total{stopped_ago}`: every resume says how long before it its segment stopped,
in the share rules' windows, so that a window subtracts only resumes of stops it may hold (a limit
stop resumed a day later no longer cancels a current one)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from integrations_support import FakeCLI, Rig, assistant, result, tool_result, tool_use
from test_integrations_counts import TASK, suspended

from agent import Agent, Budget, Extension, StopReason, observe_run, tool
from agent.clock import SystemClock
from agent.durable.runner import Catalog, Runner
from agent.durable.store import open_store
from agent.hooks import RunInfo
from agent.integrations import claude_agent_sdk as claude
from agent.journal import Stopped
from agent.models import ScriptedModel, call, finish
from agent.snapshot import Snapshot, SnapshotKind
from telemetry import MetricsHooks
from telemetry import names as n
from telemetry.metrics import stopped_ago

AGENT, TASK_TYPE = "ager", "probe"
HOUR = 3600.0
T0 = 1_800_000_000.0  # when the first segment runs, by the test's clock


class Clock(SystemClock):
    """Wall time set by the test (deadlines, stops, resumes); the system's monotonic time (budgets)."""

    def __init__(self, at: float = T0) -> None:
        self.at = at

    def time(self) -> float:
        return self.at


@tool
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def resumed(metrics: MetricsHooks, reason: str, ago: str) -> float:
    labels = {"agent": AGENT, "task_type": TASK_TYPE, "stop_reason": reason, "stopped_ago": ago}
    return metrics.registry.get_sample_value("agent_runs_resumed_total", labels) or 0.0


def agent(metrics: MetricsHooks, clock: Clock, steps: list[Any], **kwargs: Any) -> Agent:
    return Agent(
        AGENT, ScriptedModel(steps), tools=[look], task_type=TASK_TYPE, hooks=metrics, clock=clock, **kwargs
    )


LOOK_THEN_DONE = [[call("look", path="a")], [call("look", path="b")], [finish("done", "read")]]


@pytest.mark.parametrize(
    ("after", "ago"),
    [
        (0.0, "1h"),
        (HOUR, "1h"),
        (HOUR + 1, "6h"),
        (6 * HOUR, "6h"),
        (6 * HOUR + 1, "1d"),
        (24 * HOUR, "1d"),
        (24 * HOUR + 1, "7d"),
        (3 * 24 * HOUR, "7d"),
        (7 * 24 * HOUR, "7d"),
        (7 * 24 * HOUR + 1, "older"),
        (30 * 24 * HOUR, "older"),
    ],
)
def test_a_limit_stop_given_more_budget_is_counted_by_how_long_ago_it_stopped(after: float, ago: str) -> None:
    """A host that gives a limit stop more turns weeks later counts an `older` resume, which no share's
    window subtracts; within the hour, `1h`; within the day, `1d`; within the week (which only the
    week's window subtracts), `7d` (the bounds are "at most")."""
    metrics, clock = MetricsHooks(), Clock()
    limited = agent(metrics, clock, LOOK_THEN_DONE, budget=Budget(max_turns=1))
    first = limited.run("read")
    assert first.reason is StopReason.LIMIT and first.snapshot is not None
    assert first.snapshot.stopped_at == T0
    clock.at = T0 + after
    assert limited.resume(first.snapshot, more=Extension(turns=5)).reason is StopReason.SUCCESS
    assert resumed(metrics, "limit", ago) == 1
    others = [v for v in n.STOPPED_AGO_VALUES if v != ago]
    assert [resumed(metrics, "limit", v) for v in others] == [0] * len(others)


def test_a_cancelled_run_resumed_is_counted_by_how_long_ago_it_was_cancelled() -> None:
    metrics, clock, cancel = MetricsHooks(), Clock(), threading.Event()

    @tool
    def pull_the_plug() -> str:
        """The process begins to shut down."""
        cancel.set()
        return "shutting down"

    steps = [[call("pull_the_plug")], [finish("done", "ok")]]
    model = Agent(
        AGENT, ScriptedModel(steps), tools=[pull_the_plug], task_type=TASK_TYPE, hooks=metrics, clock=clock
    )
    first = model.run("go", cancel=cancel)
    assert first.reason is StopReason.CANCELLED and first.snapshot is not None
    clock.at = T0 + 5 * 60  # a deploy: the next process takes it back minutes later
    assert model.resume(first.snapshot).reason is StopReason.SUCCESS
    assert resumed(metrics, "cancelled", "1h") == 1


def test_an_answer_hours_later_is_counted_by_when_the_run_suspended() -> None:
    metrics, clock = MetricsHooks(), Clock()
    asking = agent(metrics, clock, [[finish("need_help", "Which file?")], [finish("done", "read")]])
    first = asking.run("read")
    assert first.reason is StopReason.NEED_HELP and first.snapshot is not None
    assert first.snapshot.stopped_at == T0
    clock.at = T0 + 2 * HOUR
    assert asking.resume(first.snapshot, "a.txt").reason is StopReason.SUCCESS
    assert resumed(metrics, "need_help", "6h") == 1


def test_a_snapshot_saved_before_stops_kept_their_time_resumes_as_unknown() -> None:
    """An old snapshot (its stop entry has no `at`) still reads and resumes; its resume is `unknown`,
    which the rules subtract as they always did."""
    metrics, clock = MetricsHooks(), Clock()
    limited = agent(metrics, clock, LOOK_THEN_DONE, budget=Budget(max_turns=1))
    first = limited.run("read")
    assert first.snapshot is not None
    data = json.loads(first.snapshot.to_json())
    stops = [e for e in data["journal"] if e["type"] == "stopped"]
    assert [s.pop("at") for s in stops] == [T0]  # written when known
    old = Snapshot.from_json(json.dumps(data))
    assert old.stopped_at is None and old.version == first.snapshot.version
    clock.at = T0 + 3 * 24 * HOUR
    assert limited.resume(old, more=Extension(turns=5)).reason is StopReason.SUCCESS
    assert resumed(metrics, "limit", "unknown") == 1 and resumed(metrics, "limit", "older") == 0


def test_a_stop_keeps_its_time_through_the_codec_and_a_checkpoint_says_none() -> None:
    metrics, clock = MetricsHooks(), Clock()
    first = agent(metrics, clock, LOOK_THEN_DONE, budget=Budget(max_turns=1)).run("read")
    assert first.snapshot is not None
    again = Snapshot.from_json(first.snapshot.to_json())
    assert again.journal[-1] == Stopped(StopReason.LIMIT, first.limit, first.note, False, T0)
    assert again.stopped_at == T0
    assert dataclasses.replace(again, kind=SnapshotKind.CHECKPOINT).stopped_at is None  # it never stopped
    unknown = Stopped(StopReason.LIMIT)
    assert "at" not in json.loads(Snapshot(**{**vars(again), "journal": [unknown]}).to_json())["journal"][0]


@pytest.mark.parametrize(
    ("stopped_at", "started_at", "ago"),
    [
        (None, T0, "unknown"),
        (0.0, T0, "unknown"),
        (T0, 0.0, "unknown"),  # a RunInfo that does not say when its segment starts
        (T0 + 30, T0, "1h"),  # a resuming host's clock behind the one that stopped it: just now
        (float("nan"), T0, "unknown"),
        (T0 - 7 * HOUR, T0, "1d"),  # past 6 hours, within the day
        (T0 - 24 * HOUR, T0, "1d"),
        (T0 - 24 * HOUR - 1, T0, "7d"),  # past a day, within the week
        (T0 - 7 * 24 * HOUR, T0, "7d"),
        (T0 - 7 * 24 * HOUR - 1, T0, "older"),
        (T0 - 10 * 24 * HOUR, T0, "older"),
    ],
)
def test_odd_times_give_a_bounded_value(stopped_at: float | None, started_at: float, ago: str) -> None:
    info = RunInfo("r", AGENT, TASK_TYPE, "m", "p", "t", segment=2, resumed_from="limit")
    assert stopped_ago(dataclasses.replace(info, started_at=started_at, resumed_stopped_at=stopped_at)) == ago


def test_the_label_takes_only_its_few_values_whatever_the_ages() -> None:
    """No raw seconds: a thousand resumes at a thousand ages make at most the six values."""
    metrics = MetricsHooks()
    info = RunInfo("r", AGENT, TASK_TYPE, "m", "p", "t", segment=2, resumed_from="cancelled", started_at=T0)
    for i in range(1000):
        metrics.run_started(dataclasses.replace(info, run_id=f"r{i}", resumed_stopped_at=T0 - i * 700.0))
    family = next(f for f in metrics.registry.collect() if f.name == n.METRIC_RUNS_RESUMED)
    seen = {s.labels[n.LABEL_STOPPED_AGO] for s in family.samples if s.name.endswith("_total")}
    assert seen == set(n.STOPPED_AGO_VALUES)
    counted = {
        s.labels[n.LABEL_STOPPED_AGO]: s.value
        for s in family.samples
        if s.name.endswith("_total")
        and s.labels[n.LABEL_STOPPED_AGO] != "unknown"
        and s.labels["stop_reason"] == "cancelled"
    }
    # 0..3500 s, 4200..21000 s, 21700..86100 s, 86800..604100 s, past 604800 s
    assert counted == {"1h": 6, "6h": 25, "1d": 93, "7d": 741, "older": 135}


# -- the store runner: a resume with more budget, an answer, and recovery after a shutdown ------------


def _limited(state: dict[str, Any]) -> Agent:
    steps = [[call("look", path="a")], [finish("need_help", "Which file?")], [finish("done", "read")]]
    return Agent(AGENT, ScriptedModel(steps), tools=[look], task_type=TASK_TYPE, budget=Budget(max_turns=1))


def test_the_store_runner_resumes_count_by_the_stored_stop_time(tmp_path: Path) -> None:
    """A limit stop kept in the store, given more turns by another worker three days later (`7d`);
    then its question, answered at a third worker half an hour later (`1h`)."""
    url, metrics = f"sqlite:///{tmp_path / 'runs.db'}", MetricsHooks()
    catalog = Catalog()
    catalog.register(AGENT, _limited)
    clocks = [Clock(T0), Clock(T0 + 3 * 24 * HOUR), Clock(T0 + 3 * 24 * HOUR + HOUR / 2)]
    stores = [open_store(url) for _ in clocks]
    try:
        first, second, third = (
            Runner(s, catalog, hooks=metrics, clock=c) for s, c in zip(stores, clocks, strict=True)
        )
        stopped = asyncio.run(first.start(AGENT, "read"))
        assert stopped.reason is StopReason.LIMIT
        asked = asyncio.run(second.resume(stopped.run_id, more=Extension(turns=5)))
        assert asked.reason is StopReason.NEED_HELP
        assert resumed(metrics, "limit", "7d") == 1
        done = asyncio.run(third.resume(stopped.run_id, "a.txt"))
        assert done.reason is StopReason.SUCCESS
        assert resumed(metrics, "need_help", "1h") == 1
    finally:
        for s in stores:
            s.close()
        catalog.close()


# -- runs Endstate observes: every integration's resume, through the shared recorder ------------------


@pytest.mark.parametrize("framework", ["openai_agents", "pydantic_ai", "langgraph"])
def test_an_observed_run_answered_hours_later_is_counted_by_when_it_asked(rig: Rig, framework: str) -> None:
    """The state a caller kept of a waiting run says when it asked: two hours before, `6h`."""
    module, asked, resume = suspended(framework, rig)
    saved = json.loads(module.state_of(asked))
    assert _age(saved, 2 * HOUR) == 1  # the wait began two hours earlier
    done = resume(json.dumps(saved))
    assert done.reason is StopReason.SUCCESS
    labels = {"task_type": TASK, "stop_reason": "need_help"}
    values = {ago: _sum(rig, labels | {"stopped_ago": ago}) for ago in n.STOPPED_AGO_VALUES}
    assert values == {"1h": 0, "6h": 1, "1d": 0, "7d": 0, "older": 0, "unknown": 0}


def test_a_home_grown_run_answered_hours_later_is_counted_by_when_it_asked(rig: Rig) -> None:
    with observe_run(rig.hooks, agent="raw_loop", task_type=TASK) as first:
        first.need_help("May I delete it?")
    asked = first.result
    assert asked is not None and asked.suspension is not None
    old = dataclasses.replace(asked.suspension, suspended_at=asked.suspension.suspended_at - 2 * HOUR)
    with observe_run(
        rig.hooks, agent="raw_loop", task_type=TASK, resumed=dataclasses.replace(asked, suspension=old)
    ) as then:
        then.succeed("deleted")
    labels = {"agent": "raw_loop", "task_type": TASK, "stop_reason": "need_help"}
    assert rig.value(f"{n.METRIC_RUNS_RESUMED}_total", **labels, stopped_ago="6h") == 1


def test_a_claude_agent_sdk_deferred_call_approved_hours_later_is_counted_by_when_it_asked(rig: Rig) -> None:
    deferred = {"id": "t9", "name": "Bash", "input": {"command": "rm a"}}
    lines = [assistant("m1", tool_use("t9", "Bash", {"command": "rm a"})), result(deferred_tool_use=deferred)]
    asked = claude.run("clean up", transport=FakeCLI(lines), hooks=rig.hooks, task_type=TASK)
    assert asked.reason is StopReason.NEED_HELP and asked.suspension is not None
    old = dataclasses.replace(asked.suspension, suspended_at=asked.suspension.suspended_at - 7 * HOUR)
    cli = FakeCLI([tool_result("t9", "removed a"), result(result="ok")], unprompted=True)
    options = {"transport": cli, "hooks": rig.hooks, "task_type": TASK}
    done = claude.resume(dataclasses.replace(asked, suspension=old), True, **options)
    assert done.reason is StopReason.SUCCESS
    labels = {"task_type": TASK, "stop_reason": "need_help"}
    values = {ago: _sum(rig, labels | {"stopped_ago": ago}) for ago in n.STOPPED_AGO_VALUES}
    assert values == {"1h": 0, "6h": 0, "1d": 1, "7d": 0, "older": 0, "unknown": 0}


def _sum(rig: Rig, labels: dict[str, str]) -> float:
    family = next(f for f in rig.registry.collect() if f.name == n.METRIC_RUNS_RESUMED)
    rows = [s for s in family.samples if s.name.endswith("_total")]
    return sum(s.value for s in rows if all(s.labels.get(k) == v for k, v in labels.items()))


def _age(saved: Any, seconds: float) -> int:
    """Every `suspended_at` in a saved state moved `seconds` earlier (the wait began then); how many."""
    if isinstance(saved, list):
        return sum(_age(item, seconds) for item in saved)
    if not isinstance(saved, dict):
        return 0
    moved = 0
    for key, value in saved.items():
        if key == "suspended_at" and isinstance(value, int | float):
            saved[key], moved = value - seconds, moved + 1
        else:
            moved += _age(value, seconds)
    return moved
