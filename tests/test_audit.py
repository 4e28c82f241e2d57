"""Success audits: a share of successes is re-checked later by an independent check, and counted."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pg
import pytest
from prometheus_client import CollectorRegistry

from agent import Agent, Budget, ConfigError, RunContext, StopReason, within
from agent.audit import AuditOutcome, SuccessAudit
from agent.durable.runner import Catalog, Runner
from agent.durable.store import StoreError, open_store
from agent.models.scripted import ScriptedModel, finish
from telemetry import MetricsHooks

pytestmark = pytest.mark.slow
SHIPPED: set[str] = set()  # what the outside world says was really shipped


def shipped(ctx: RunContext) -> list[str]:
    """The independent check: the outside world, looked at later, not the run's own verifier."""
    return [] if ctx.note in SHIPPED else [f"{ctx.note!r} was never shipped"]


def shipper(state: dict[str, Any]) -> Agent:
    model = ScriptedModel([[finish("done", state["item"])]])
    audit = SuccessAudit(check=shipped, share=1.0, after=60)
    return Agent("shipper", model, budget=Budget(max_turns=3), task_type="ship", audit=audit)


@pytest.fixture(params=pg.BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return pg.url_for(request.param, tmp_path)


def test_successes_are_audited_later_and_a_false_success_is_counted(store_url: str) -> None:
    catalog = Catalog()
    catalog.register("shipper", shipper)
    metrics = MetricsHooks(CollectorRegistry())
    store = open_store(store_url)
    try:
        runner = Runner(store, catalog, on_audit=metrics.record_success_audit)
        SHIPPED.clear()
        SHIPPED.add("box-1")
        ok = asyncio.run(runner.start("shipper", "ship box 1", state={"item": "box-1"}))
        fake = asyncio.run(runner.start("shipper", "ship box 2", state={"item": "box-2"}))
        assert ok.reason is fake.reason is StopReason.SUCCESS
        assert asyncio.run(runner.audit_due()) == []  # not due yet: audits look once the world settled
        later = store.due_audits(now=10**10)
        assert sorted(a.run_id for a in later) == sorted([ok.run_id, fake.run_id])

        done = asyncio.run(runner.audit_due(now=10**10))
        outcomes = {a.run_id: a.outcome for a in done}
        assert outcomes == {ok.run_id: AuditOutcome.CONFIRMED, fake.run_id: AuditOutcome.FALSE_SUCCESS}
        audit = store.audit_of(fake.run_id)
        assert audit is not None and "'box-2' was never shipped" in audit.note
        assert asyncio.run(runner.audit_due(now=10**10)) == []  # each audit is made once
        labels = {"agent": "shipper", "task_type": "ship"}
        get = metrics.registry.get_sample_value
        assert get("agent_success_audits_total", {**labels, "outcome": "false_success"}) == 1
        assert get("agent_success_audits_total", {**labels, "outcome": "confirmed"}) == 1
    finally:
        store.close()


def test_a_success_whose_audit_cannot_be_planned_still_returns_its_result(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The run's result is recorded; the store fails on the audit's plan after it (a dropped
    connection, a full disk): the caller gets the success, not an exception for a run that ended
    well, and the log says which audit was not planned."""
    catalog = Catalog()
    catalog.register("shipper", shipper)
    store = open_store(store_url)
    try:

        def down(audit: Any) -> None:
            raise StoreError("the store is down for a moment")

        store.schedule_audit = down  # type: ignore[method-assign]
        result = asyncio.run(Runner(store, catalog).start("shipper", "ship box 3", state={"item": "box-3"}))
        assert result.reason is StopReason.SUCCESS
        record = store.get(result.run_id)
        assert record is not None and record.stop_reason is StopReason.SUCCESS
        assert f"run {result.run_id}: its success audit was not planned" in caplog.text
    finally:
        store.close()


def test_the_share_audited_is_a_stable_choice_per_run() -> None:
    audit = SuccessAudit(check=shipped, share=0.25)
    chosen = [audit.samples(f"run-{i}") for i in range(4000)]
    assert 800 < sum(chosen) < 1200
    assert chosen == [audit.samples(f"run-{i}") for i in range(4000)]  # the same in any process


@pytest.mark.parametrize(
    "kwargs",
    [
        {"share": 0},
        {"share": 1.5},
        {"after": -1},
        {"after": float("nan")},  # was taken: the audit's due time NaN, never due
        {"after": float("inf")},
        {"share": "0.1"},  # was a TypeError
        {"check": "orders_clean.csv exists"},  # was taken: the audit itself failed, as ERROR
    ],
)
def test_a_bad_audit_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="SuccessAudit"):
        SuccessAudit(**{"check": shipped, **kwargs})


HELD = threading.Event()  # set at the end of the test below: its hung check's thread then ends


def never_answers(ctx: RunContext) -> list[str]:
    """An audit check whose outside world never answers."""
    HELD.wait(120)
    return []


async def shipped_async(ctx: RunContext) -> list[str]:
    return shipped(ctx)


def forgot_return(ctx: RunContext) -> None:
    """A check that forgot its `return`: None is no verdict, not a pass."""


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("check", "outcome", "says"),
    [
        (within(0.3, never_answers), AuditOutcome.ERROR, "`never_answers` did not finish within 0.3 s"),
        (shipped_async, AuditOutcome.FALSE_SUCCESS, "'box-9' was never shipped"),
        (forgot_return, AuditOutcome.ERROR, "verifier 'forgot_return' returned None"),
    ],
    ids=["hung", "async", "no-list"],
)
def test_an_audit_check_is_run_as_a_verifier_is(tmp_path: Path, check: Any, outcome: str, says: str) -> None:
    """Within its own timeout (a hung check held the audits for ever, on a thread that kept the
    process from exiting; it is an audit that could not be made, not a false success), an `async def`
    one awaited (its coroutine was taken for a list), and a check that returns no list an error (None
    was counted `confirmed`)."""

    def build(state: dict[str, Any]) -> Agent:
        audit = SuccessAudit(check=check, share=1.0)
        return Agent("shipper", ScriptedModel([[finish("done", "box-9")]]), task_type="ship", audit=audit)

    catalog = Catalog()
    catalog.register("shipper", build)
    store = open_store(str(tmp_path / "runs.db"))
    try:
        runner = Runner(store, catalog)
        SHIPPED.clear()
        ran = asyncio.run(runner.start("shipper", "ship box 9"))
        [done] = asyncio.run(runner.audit_due(now=10**10))
        assert (done.run_id, done.outcome) == (ran.run_id, outcome)
        assert says in done.note
    finally:
        HELD.set()
        store.close()
