"""DESIGN.md as an acceptance test: promises that had no test of their own, checked through the
public surface (the library API, its spans and its /metrics exposition)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics
from test_telemetry import Rig, build, look, rigged

from agent import Approval, Budget, LimitKind, StopReason, predicate, tool
from agent.models import call, finish, say
from telemetry import names as n


@pytest.fixture
def rig() -> Iterator[Rig]:
    with rigged() as rig:
        yield rig


@tool(needs_approval=True)
def deploy(env: str) -> str:
    """Deploy to an environment."""
    return f"deployed {env}"


def test_a_limit_says_which_budget_and_returns_the_last_text_and_the_failed_checks(rig: Rig) -> None:
    """DESIGN.md: "A limit is an exit like the others: it returns what was done (a summary of the state, the
    last model text, the failed checks) and says which budget ran out." """
    never = predicate(lambda ctx: False, "the file is fixed")
    steps = [[say("I think it is done"), finish("done")]] * 2
    result = build(rig, steps, verifiers=[never], budget=Budget(max_turns=2)).run("fix it")
    assert (result.reason, result.limit) == (StopReason.LIMIT, LimitKind.TURNS)
    assert result.last_text == "I think it is done"
    assert result.verifier_failures and "the file is fixed" in result.verifier_failures[0]
    assert "limit" in result.summary


def test_stop_cause_is_empty_unless_the_run_gave_up(rig: Rig) -> None:
    """`agent_stops_total{...,stop_cause}`: `stop_cause` only for `gave_up`, else empty."""
    build(rig, [[finish("done")]]).run("a")
    build(rig, [[finish("give_up", "cannot")]]).run("b")
    assert rig.value("agent_stops_total", stop_reason="success", stop_limit="none", stop_cause="") == 1
    assert rig.value("agent_stops_total", stop_reason="gave_up", stop_limit="none", stop_cause="agent") == 1
    stops = [s for f in rig.registry.collect() if f.name == "agent_stops" for s in f.samples]
    assert all((s.labels["stop_cause"] != "") == (s.labels["stop_reason"] == "gave_up") for s in stops)


def test_the_budget_limit_gauge_shows_each_configured_ceiling(rig: Rig) -> None:
    """`agent_budget_limit` (the configured ceilings): turns, seconds, tokens and cost."""
    budget = Budget(max_turns=7, max_seconds=30, max_tokens=1000, max_cost_usd=2.5)
    build(rig, [[finish("done")]], budget=budget).run("a")
    ceilings = {
        kind: rig.value("agent_budget_limit", limit=kind) for kind in ("turns", "seconds", "tokens", "cost")
    }
    assert ceilings == {"turns": 7, "seconds": 30, "tokens": 1000, "cost": 2.5}


def test_a_turn_split_by_an_approval_continues_with_its_index_and_is_counted_once(rig: Rig) -> None:
    """DESIGN.md: "A turn that a suspension split continues in the resumed segment's trace with the same index
    and `agent.turn.continued=true`, so turns counted from spans are never counted twice." """
    steps = [[call("look", path="a")], [call("deploy", env="prod")], [finish("done")]]
    agent = build(rig, steps, tools=[deploy, look])
    first = agent.run("ship it")
    assert first.reason is StopReason.NEED_HELP and first.suspension and first.suspension.pending
    second = agent.resume(first.snapshot, Approval())
    assert (second.reason, second.turns) == (StopReason.SUCCESS, 3)
    turns = [(s.attributes or {}) for s in rig.spans() if s.name == n.SPAN_TURN]
    marks = sorted((t[n.AGENT_TURN_INDEX], bool(t.get(n.AGENT_TURN_CONTINUED))) for t in turns)
    assert marks == [(1, False), (2, False), (2, True), (3, False)]


def test_run_active_seconds_carries_the_trace_id_exemplar(rig: Rig) -> None:
    """`agent_run_active_seconds` (histogram, exemplar `trace_id`), served in OpenMetrics."""
    result = build(rig, [[finish("done")]]).run("go")
    text = openmetrics(rig.registry).decode()
    buckets = [line for line in text.splitlines() if line.startswith("agent_run_active_seconds_bucket")]
    assert any(f'# {{trace_id="{result.trace_id}"}}' in line for line in buckets), buckets


def test_ten_turns_with_nothing_new_stop_as_no_progress_by_default(rig: Rig) -> None:
    """DESIGN.md: "or K turns with no new observation" (default 10): the first turn's result is new, the next
    ten bring nothing, and the run stops after the eleventh."""
    steps = [[call("look", path="a")], *[[say("hmm")]] * 20]
    result = build(rig, steps, budget=Budget(max_turns=50)).run("go")
    assert (result.reason, result.turns) == (StopReason.NO_PROGRESS, 11)


def test_resume_goes_on_with_the_budget_left_and_the_wait_is_not_active_time(rig: Rig) -> None:
    """DESIGN.md: "`resume` ... continues in the same run with the budget it had left. Human wait time never
    counts as active time." The wait is its own span and metric."""
    steps = [[call("look", path="a")], [finish("need_help", "which?")], *[[call("look", path="b")]] * 3]
    agent = build(rig, steps, budget=Budget(max_turns=3, max_seconds=60))
    first = agent.run("go")
    assert (first.reason, first.turns) == (StopReason.NEED_HELP, 2) and first.suspension
    asked_at = first.suspension.deadline - agent.help.wait_seconds
    second = agent.resume(first.snapshot, "the left one", now=asked_at + 3000)
    assert (second.reason, second.limit, second.turns) == (StopReason.LIMIT, LimitKind.TURNS, 3)
    assert second.waiting_seconds == pytest.approx(3000, abs=5)
    assert second.active_seconds < 60
    (wait,) = [s for s in rig.spans() if s.name == n.SPAN_HUMAN_WAIT]
    assert wait.end_time and wait.start_time
    assert (wait.end_time - wait.start_time) / 1e9 == pytest.approx(3000, abs=5)
    assert rig.value("agent_human_wait_seconds_count", outcome="answered") == 1
