"""Unusual paths: cancellation mid-call, failing adapters, calls after the end, approvals, odd labels.

Every test runs on the rig of test_telemetry, which fails a test that leaves a
span open or records a value OTLP backends drop.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import StatusCode
from prometheus_client import CollectorRegistry, generate_latest
from test_telemetry import AGENT, TASK_TYPE, Rig, build, look, rigged

from agent import Agent, HumanWait, ModelError, RunInfo, RunResult, StopReason, tool
from agent.models import ModelRequest, ScriptedModel, ToolCall, call, finish
from agent.tools import ToolOutcome
from telemetry import InProcessPending, MetricsHooks, metrics
from telemetry import names as n

GEN_AI = {
    "gen_ai_operation_name": "chat",
    "gen_ai_provider_name": "scripted",
    "gen_ai_request_model": "scripted",
}


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


HANGING = threading.Event()  # set where a test's model or tool starts hanging


class Hangs(ScriptedModel):
    """Plays its script, then hangs on the call after it."""

    async def complete(self, request: ModelRequest) -> Any:
        if sum(m["role"] == "assistant" for m in request.messages) >= len(self._steps):
            HANGING.set()
            await asyncio.sleep(60)
        return await super().complete(request)


def cancel_while_running(agent: Agent) -> RunResult:
    """Cancel the run once it hangs (not after a fixed time: a loaded machine may be slower)."""
    HANGING.clear()

    async def main() -> RunResult:
        task = asyncio.create_task(agent.arun("go"))
        while not HANGING.is_set():  # noqa: ASYNC110  (set by the model or tool, in this loop)
            await asyncio.sleep(0.01)
        task.cancel()
        return await task

    return asyncio.run(main())


def turn_signals(rig: Rig) -> list[str]:
    turns = sorted((s for s in rig.spans() if s.name == n.SPAN_TURN), key=lambda s: s.start_time or 0)
    return [str((t.attributes or {})[n.AGENT_TURN_SIGNAL]) for t in turns]


def test_cancelled_mid_model_call(rig: Rig) -> None:
    agent = Agent(
        AGENT, Hangs([[call("look", path="a")]]), tools=[look], task_type=TASK_TYPE, hooks=rig.hooks
    )
    result = cancel_while_running(agent)
    assert result.reason is StopReason.CANCELLED
    assert turn_signals(rig) == ["tool_use", "cancelled"]
    (cut,) = [
        s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT) and n.ERROR_TYPE in (s.attributes or {})
    ]
    assert (cut.attributes or {})[n.ERROR_TYPE] == n.ERROR_INTERRUPTED
    assert all(s.status.status_code is not StatusCode.ERROR for s in rig.spans())  # cancelled is no error
    assert rig.value("agent_stops_total", stop_reason="cancelled", stop_limit="none") == 1


def test_cancelled_mid_tool(rig: Rig) -> None:
    @tool
    async def hang() -> str:
        """Never returns."""
        HANGING.set()
        await asyncio.sleep(60)
        return ""

    result = cancel_while_running(build(rig, [[call("hang")]], tools=[hang]))
    assert result.reason is StopReason.CANCELLED
    assert turn_signals(rig) == ["cancelled"]
    (tool_span,) = [s for s in rig.spans() if s.name == f"{n.SPAN_EXECUTE_TOOL} hang"]
    assert (tool_span.attributes or {})[n.ERROR_TYPE] == n.ERROR_INTERRUPTED
    assert all(s.status.status_code is not StatusCode.ERROR for s in rig.spans())


def test_a_failing_adapter_is_named_on_its_call(rig: Rig) -> None:
    result = build(rig, [ValueError("adapter bug")]).run("go")
    assert result.reason is StopReason.ERROR and result.error_type == "ValueError"
    (chat,) = [s for s in rig.spans() if s.name.startswith(n.SPAN_CHAT)]
    assert (chat.attributes or {})[n.ERROR_TYPE] == "ValueError"
    assert chat.status.status_code is StatusCode.ERROR
    assert rig.value("gen_ai_client_operation_duration_seconds_count", **GEN_AI, error_type="ValueError") == 1


def test_free_text_error_types_neither_leak_nor_make_series(rig: Rig) -> None:
    said = "HTTP 400: your prompt 'call me at 555-0100' is bad"
    result = build(rig, [ModelError("bad", error_type=said)]).run("go")
    assert result.reason is StopReason.ERROR
    text = " ".join(str(v) for s in rig.spans() for v in (s.attributes or {}).values())
    text += " ".join(s.status.description or "" for s in rig.spans())
    assert "555-0100" not in text
    assert "555-0100" not in rig.scrape()
    observer = rig.hooks.run_started(RunInfo("r", AGENT, TASK_TYPE, "scripted", "scripted", "t"))
    for i in range(200):
        observer.model_started(ModelRequest("", [], [], 1), 1)
        observer.model_ended(None, ModelError("x", error_type=f"made_up_{i}"))
    observer.run_ended(RunResult("r", AGENT, TASK_TYPE, StopReason.ERROR))
    error_types = {
        s.labels["error_type"]
        for m in rig.registry.collect()
        for s in m.samples
        if s.name == "gen_ai_client_operation_duration_seconds_count"
    }
    assert len(error_types) <= 1 + 1 + 16 + 1  # success, the first error, the cap, and _OTHER
    assert n.ERROR_OTHER in error_types


def test_a_made_up_tool_name_makes_no_series(rig: Rig) -> None:
    observer = rig.hooks.run_started(RunInfo("r", AGENT, TASK_TYPE, "m", "p", "t", tools=("look",)))
    for i in range(100):
        made_up = ToolCall(f"c{i}", f"tool_{i}", {})
        observer.tool_started(made_up)
        observer.tool_ended(made_up, ToolOutcome("no such tool", True, "unknown_tool"))
    observer.run_ended(RunResult("r", AGENT, TASK_TYPE, StopReason.GAVE_UP))
    tools = {s.labels["tool"] for m in rig.registry.collect() for s in m.samples if "tool" in s.labels}
    assert tools == {"look", n.TOOL_OTHER}
    assert rig.value("agent_tool_calls_total", tool=n.TOOL_OTHER, outcome="error") == 100


def test_a_task_type_per_task_makes_no_series_past_the_cap(caplog: pytest.LogCaptureFixture) -> None:
    """A caller that names a task type after each task (an issue number, say) would add some 550
    series a run; past the cap a run is counted under its agent and task type "other" (agent "other"
    too for an agent never seen), every stop and pending request still counted."""
    hooks = MetricsHooks(
        CollectorRegistry(), pending=lambda: [("ci", f"fix-{i}", time.time()) for i in range(300)]
    )
    runs = [("ci", f"fix-{i}") for i in range(300)] + [(f"bot-{i}", "t") for i in range(50)]
    for i, (agent, task_type) in enumerate(runs):
        observer = hooks.run_started(RunInfo(f"r{i}", agent, task_type, "m", "p", "task", tools=("look",)))
        observer.run_ended(RunResult(f"r{i}", agent, task_type, StopReason.SUCCESS, turns=1))
        hooks.record_success_audit(agent, task_type, "confirmed")
    pairs = {
        (s.labels["agent"], s.labels["task_type"])
        for m in hooks.registry.collect()
        for s in m.samples
        if "task_type" in s.labels
    }
    assert len(pairs) == metrics.MAX_AGENT_TASK_TYPES + 2
    assert {("ci", n.RUN_LABEL_OTHER), (n.RUN_LABEL_OTHER, n.RUN_LABEL_OTHER)} <= pairs
    stops = [s.value for m in hooks.registry.collect() for s in m.samples if s.name == "agent_stops_total"]
    assert sum(stops) == len(runs)
    pending = [
        s.value for m in hooks.registry.collect() for s in m.samples if s.name == n.METRIC_HELP_PENDING
    ]
    assert sum(pending) == 300
    assert sum("task types must be a fixed set" in r.getMessage().lower() for r in caplog.records) == 1


def test_a_pair_kept_before_the_cap_keeps_its_labels_and_a_ceiling_set_back_is_set() -> None:
    """Past the cap, an agent and task type admitted earlier still count under their own labels (the
    run's kept series), a new one under "other"; a budget ceiling that changes and changes back is
    read as set last each time."""
    hooks = MetricsHooks(CollectorRegistry())
    limits = [10.0] * metrics.MAX_AGENT_TASK_TYPES + [20.0, 10.0, 10.0]
    runs = [("ci", f"fix-{i}") for i in range(metrics.MAX_AGENT_TASK_TYPES)]
    runs += [("ci", "fix-0"), ("ci", "fix-0"), ("ci", "new")]
    for i, ((agent, task_type), turns) in enumerate(zip(runs, limits, strict=True)):
        info = RunInfo(f"r{i}", agent, task_type, "m", "p", "task", tools=("look",), limits={"turns": turns})
        hooks.run_started(info).run_ended(RunResult(f"r{i}", agent, task_type, StopReason.SUCCESS, turns=1))
        if (agent, task_type) == ("ci", "fix-0"):
            gauge = hooks.registry.get_sample_value(
                n.METRIC_BUDGET_LIMIT, {"agent": "ci", "task_type": "fix-0", "limit": "turns"}
            )
            assert gauge == turns

    def started(task_type: str) -> float | None:
        return hooks.registry.get_sample_value(
            f"{n.METRIC_RUNS_STARTED}_total", {"agent": "ci", "task_type": task_type}
        )

    assert (started("fix-0"), started(n.RUN_LABEL_OTHER), started("new")) == (3.0, 1.0, None)
    other = {"agent": "ci", "task_type": n.RUN_LABEL_OTHER, "limit": "turns"}
    assert hooks.registry.get_sample_value(n.METRIC_BUDGET_LIMIT, other) == 10.0


RUNBOOKS = Path(__file__).resolve().parents[1] / "docs" / "runbooks"


def traceql_terms(query: str) -> list[tuple[str, str]]:
    """The `name="..."` and `span.<attribute>...` terms of a TraceQL query, as (field, value);
    resource attributes (the service, set by the deployment) are left out."""
    return re.findall(r'(?<![\w.])(name|span\.[\w.]+)\s*(?:=|=~|>=|>)\s*"?([^"&}]*)"?', query)


def test_a_hung_run_is_found_where_the_stops_vanishing_runbook_looks(rig: Rig) -> None:
    """While a run hangs in a tool, its invoke_agent span (the only one with the agent, task type
    and run id) and the hung turn's spans are not exported yet: only finished turns are. Every
    Tempo query the runbook gives for hung runs matches spans exported while the run hangs (the
    runbook said to search by task type, which found nothing)."""
    text = (RUNBOOKS / "EndstateStopsVanishing.md").read_text()
    queries = re.findall(r"```traceql\n(.*?)```", text, re.S)
    assert queries, "EndstateStopsVanishing.md gives no Tempo query for hung runs"

    @tool
    async def hang(path: str) -> str:
        """Hangs."""
        HANGING.set()
        await asyncio.sleep(60)
        return path

    steps = [[call("look", path="a")], [call("look", path="b")], [call("hang", path="c")]]
    agent = Agent(AGENT, ScriptedModel(steps), tools=[look, hang], task_type=TASK_TYPE, hooks=rig.hooks)
    spans_while_hung: list[Any] = []

    async def main() -> RunResult:
        HANGING.clear()
        task = asyncio.create_task(agent.arun("go"))
        while not HANGING.is_set():  # noqa: ASYNC110  (set by the tool, in this loop)
            await asyncio.sleep(0.01)
        spans_while_hung.extend(rig.spans())
        task.cancel()
        return await task

    assert asyncio.run(main()).reason is StopReason.CANCELLED
    assert not any(s.name.startswith(n.SPAN_INVOKE_AGENT) for s in spans_while_hung)
    assert not any(n.AGENT_TASK_TYPE in (s.attributes or {}) for s in spans_while_hung)
    turns = [s for s in spans_while_hung if s.name == n.SPAN_TURN]
    assert sorted((t.attributes or {})[n.AGENT_TURN_INDEX] for t in turns) == [1, 2]  # the hang is in 3
    for query in queries:
        terms = traceql_terms(query)
        assert terms, query
        found = [
            s
            for s in spans_while_hung
            if all(
                (s.name if field == "name" else str((s.attributes or {}).get(field[5:], ""))) == value
                for field, value in terms
            )
        ]
        assert found, f"{query.strip()} finds nothing exported while a run hangs"


def test_models_and_limit_names_from_a_caller_make_no_series_past_the_cap() -> None:
    """A home-grown loop passes its own model name and limits (`observe_run`): a model per request
    is counted under "other" past the cap, and limit names that are no budget make no series."""
    hooks = MetricsHooks(CollectorRegistry())
    for i in range(200):
        limits = {"turns": 10.0, f"user-{i}": 1.0}
        observer = hooks.run_started(RunInfo(f"r{i}", "a", "t", f"model-{i}", "p", "task", limits=limits))
        observer.model_started(ModelRequest("", [], [], 1), 1)
        observer.model_ended(None, ModelError("overloaded"))
        observer.run_ended(RunResult(f"r{i}", "a", "t", StopReason.ERROR, turns=1))
    samples = [s for m in hooks.registry.collect() for s in m.samples]
    models = {s.labels["gen_ai_request_model"] for s in samples if "gen_ai_request_model" in s.labels}
    assert len(models) == metrics.MAX_MODELS + 1 and n.RUN_LABEL_OTHER in models
    assert {s.labels["limit"] for s in samples if s.name == n.METRIC_BUDGET_LIMIT} == {"turns"}
    calls = [s.value for s in samples if s.name == "gen_ai_client_operation_duration_seconds_count"]
    assert sum(calls) == 200


def test_a_segment_observed_again_is_counted_as_started_once(rig: Rig) -> None:
    """A Temporal workflow replayed on another worker (or after leaving the cache) observes its
    segment again, told so (`replayed`): the run started (and was resumed) once, on any worker."""
    first = RunInfo("r", AGENT, TASK_TYPE, "m", "p", "t", tools=("look",))
    resumed = RunInfo("r", AGENT, TASK_TYPE, "m", "p", "t", segment=2, resumed_from="cancelled")
    elsewhere = MetricsHooks(CollectorRegistry())  # another worker's process
    for info in (first, resumed):
        rig.metrics.run_started(info)
        for hooks in (rig.metrics, elsewhere):
            hooks.run_started(replace(info, replayed=True))
    assert rig.value("agent_runs_started_total") == 1
    assert rig.value("agent_runs_resumed_total", stop_reason="cancelled", stopped_ago="unknown") == 1
    labels = {"agent": AGENT, "task_type": TASK_TYPE}
    assert elsewhere.registry.get_sample_value("agent_runs_started_total", labels) == 0
    resumed_labels = labels | {"stop_reason": "cancelled", "stopped_ago": "unknown"}
    assert elsewhere.registry.get_sample_value("agent_runs_resumed_total", resumed_labels) == 0
    # An observed run resumed again without a snapshot numbers its segment 2 again: a later start.
    rig.metrics.run_started(replace(resumed, started_at=5.0))
    assert rig.value("agent_runs_resumed_total", stop_reason="cancelled", stopped_ago="unknown") == 2


def test_prepared_runs_have_every_series_at_zero_before_a_run_and_a_scrape_is_known() -> None:
    """What a process may resume or recover at start is read at zero first (see the restart test)."""
    hooks = MetricsHooks(CollectorRegistry())
    hooks.prepare_runs([(AGENT, TASK_TYPE)])
    labels = {"agent": AGENT, "task_type": TASK_TYPE}
    for reason in ("need_help", "cancelled", "limit"):
        for ago in ("1h", "6h", "1d", "7d", "older", "unknown"):  # a first resume of any age is an increase
            resumed = labels | {"stop_reason": reason, "stopped_ago": ago}
            assert hooks.registry.get_sample_value("agent_runs_resumed_total", resumed) == 0
    assert hooks.registry.get_sample_value("agent_runs_started_total", labels) == 0
    assert hooks.known_agents() == [(AGENT, TASK_TYPE)] and not hooks.scraped()
    generate_latest(hooks.registry)
    assert hooks.scraped()


def test_calls_after_the_end_change_nothing(rig: Rig) -> None:
    observer = rig.hooks.run_started(RunInfo("r", AGENT, TASK_TYPE, "m", "p", "t", tools=("look",)))
    result = RunResult("r", AGENT, TASK_TYPE, StopReason.GAVE_UP, turns=1)
    observer.run_ended(result)
    late = ToolCall("c", "look", {})
    observer.turn_started(2)
    observer.model_started(ModelRequest("", [], [], 1), 1)
    observer.tool_started(late)
    observer.verified(["late"])
    observer.human_waited(HumanWait(1.0, 2.0, n.WAIT_ANSWERED))
    observer.run_ended(result)
    assert [s.name for s in rig.spans()] == [f"{n.SPAN_INVOKE_AGENT} {AGENT}"]
    assert rig.value("agent_stops_total", stop_reason="gave_up", stop_limit="none") == 1
    assert rig.value("agent_run_turns_count", stop_reason="gave_up") == 1


def test_an_approved_tool_belongs_to_the_turn_it_completes(rig: Rig) -> None:
    @tool(needs_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    agent = build(rig, [[call("delete", path="old.log")], [finish("done", "deleted")]], tools=[delete])
    first = agent.run("clean up")
    assert first.snapshot
    second = agent.resume(first.snapshot, approved=True)
    assert second.reason is StopReason.SUCCESS
    _, resumed = rig.runs()
    first_turn, *_ = rig.children(resumed, n.SPAN_TURN)
    (tool_span,) = rig.children(first_turn, n.SPAN_EXECUTE_TOOL)
    assert (first_turn.attributes or {})[n.AGENT_TURN_INDEX] == 1
    assert (first_turn.start_time or 0) <= (tool_span.start_time or 0)
    assert rig.children(resumed, n.SPAN_EXECUTE_TOOL) == []


def test_in_process_pending_stays_bounded_without_scrapes() -> None:
    pending = InProcessPending(max_pending=3)
    now = time.time()
    for i in range(5):
        pending.add(f"gone-{i}", "a", "t", now - 100, deadline=now - 1)  # past their deadline
    for i in range(5):
        pending.add(f"run-{i}", "a", "t", now - 5 + i, deadline=now + 3600)
    assert len(pending) == 3
    assert sorted(at for _, _, at in pending()) == [now - 3, now - 2, now - 1]  # the newest kept
    pending.remove("run-4")
    assert len(pending) == 2


def test_a_resume_in_another_process_counts_only_its_own_cost(rig: Rig) -> None:
    steps = [[call("look", path="a")], [finish("need_help", "a or b?")], [finish("done", "read a")]]
    first = build(rig, steps).run("read the right file")
    assert first.snapshot
    with rigged() as elsewhere:  # a fresh process: nothing remembered of the first segment
        second = build(elsewhere, steps).resume(first.snapshot, "a")
        spent = second.cost_usd - first.cost_usd
        assert elsewhere.value("agent_cost_usd_total", stop_reason="success") == pytest.approx(spent)
        assert elsewhere.value("agent_runs_started_total") == 0
    assert rig.value("agent_cost_usd_total", stop_reason="need_help") == pytest.approx(first.cost_usd)


def test_concurrent_runs_keep_their_own_trees_and_exact_counts(rig: Rig) -> None:
    @tool
    async def fetch(path: str) -> str:
        """Read slowly, so runs interleave."""
        await asyncio.sleep(0.001)
        return path

    def agent() -> Agent:
        steps = [[call("fetch", path="a")], [call("fetch", path="b")], [finish("give_up", "enough")]]
        return build(rig, steps, tools=[fetch])

    async def many(prefix: str) -> list[RunResult]:
        return list(await asyncio.gather(*(agent().arun("go", run_id=f"{prefix}-{i}") for i in range(20))))

    results: list[RunResult] = []
    threads = [threading.Thread(target=lambda p=p: results.extend(asyncio.run(many(p)))) for p in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 80 and {r.reason for r in results} == {StopReason.GAVE_UP}
    assert rig.value("agent_stops_total", stop_reason="gave_up", stop_limit="none") == 80
    assert rig.value("agent_tool_calls_total", tool="fetch", outcome="ok") == 160
    assert rig.value("agent_runs_started_total") == 80
    spans = {s.context.span_id: s for s in rig.spans()}
    runs = {s.context.trace_id: s for s in rig.runs()}
    assert len(runs) == 80
    for span in spans.values():
        if span.parent is None:
            continue
        parent = spans[span.parent.span_id]
        assert parent.context.trace_id == span.context.trace_id
        expected = n.SPAN_INVOKE_AGENT if span.name == n.SPAN_TURN else n.SPAN_TURN
        assert parent.name.startswith(expected), (span.name, parent.name)
    turns_per_run = Counter(s.context.trace_id for s in spans.values() if s.name == n.SPAN_TURN)
    assert set(turns_per_run.values()) == {3}


def test_a_turn_that_fails_after_its_calls_says_error(rig: Rig) -> None:
    def store_down(snapshot: Any) -> None:
        raise OSError("disk full")

    agent = build(rig, [[call("look", path="a")]], checkpoint=store_down)
    result = agent.run("go")
    assert result.reason is StopReason.ERROR and result.error_type == "OSError"
    assert turn_signals(rig) == ["error"]
    (run_span,) = rig.runs()
    assert (run_span.attributes or {})[n.ERROR_TYPE] == "OSError"
