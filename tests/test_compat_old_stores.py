"""Stores written by every store schema since the journal (4) open under today's code, and every run
in them, whatever its state, is listed, counted, answered, recovered or swept, and finishes.

tests/data/compat/ holds SQL dumps of stores that older releases wrote with tests/compat_agents.py
(its README says which commit wrote each and how); each is loaded into a fresh store of each kind
the dump allows, then driven to its end with HEAD's code.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import compat_agents as ca
import pg
import pytest
from compat_stores import backends_for, dumps, load, schema_of
from prometheus_client import CollectorRegistry

from agent import Extension, StopReason
from agent.audit import AuditOutcome
from agent.clock import SystemClock
from agent.durable.runner import Runner
from agent.durable.store import NotClaimable, RunStatus, open_store
from agent.durable.store._sql import latest_version
from telemetry.metrics import MetricsHooks

CASES = [pytest.param((d, b), id=f"{d.stem}-{b}") for d in dumps() for b in backends_for(d)]
AUDITS_SINCE = 6  # the store schema that brought success audits
WAITING = ["c-question", "c-approval", "c-deny", "c-expired", "c-timeout"]
FINISHED = {"c-done": "success", "c-limit": "limit", "c-gave-up": "gave_up", "c-audited": "success"}


class Later(SystemClock):
    """The system's clocks set to an hour after the store's runs were written, then running: the
    crashed run's lease and c-expired's deadline (1 s) are past, the others' (a day) ahead."""

    def __init__(self, written: float) -> None:
        self.offset = written + 3600 - time.time()

    def time(self) -> float:
        return super().time() + self.offset


@pytest.fixture(params=CASES)
def old_store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, int]:
    dump, backend = request.param
    return load(dump, backend, tmp_path), schema_of(dump)


def drive(url: str, written: float, how: Callable[[Runner], Coroutine[Any, Any, Any]]) -> Any:
    store = open_store(url)
    try:
        return asyncio.run(how(Runner(store, ca.catalog(), clock=Later(written))))
    finally:
        store.close()


def test_an_old_store_is_read_whole_and_every_run_in_it_finishes(old_store: tuple[str, int]) -> None:
    url, schema = old_store
    store = open_store(url)
    try:
        assert store.schema_version() == latest_version(store.dialect) > schema  # type: ignore[attr-defined]
        listing = store.list_runs(limit=None)
        assert not listing.damaged
        assert {r.run_id: r.status for r in listing} == {
            **dict.fromkeys(WAITING, RunStatus.WAITING),
            "c-crashed": RunStatus.RUNNING,
            "c-answered": RunStatus.RUNNING,
            "c-cancelled": RunStatus.CANCELLED,
            "c-cut": RunStatus.CANCELLED,
            **dict.fromkeys(FINISHED, RunStatus.FINISHED),
        }
        written = max(r.updated_at for r in listing)
        for record in listing:  # every journal reads (early releases kept none for a finished run)
            snap = store.snapshot(record.run_id)
            if snap is not None or record.status is not RunStatus.FINISHED:
                assert snap is not None and snap.task == f"task of {record.run_id}", record.run_id
        waiting = store.waiting(limit=10)
        assert [r.run_id for r in waiting] == WAITING
        assert waiting[1].pending is not None and waiting[1].pending.name == "send_invoice"
        assert {r.run_id: r.stop_reason for r in store.finished_since(None)} == FINISHED
        tails = {r: store.journal_tail(r, 2) for r in WAITING}  # type: ignore[attr-defined]
        assert all(t is not None and t.suspension is not None for t in tails.values()), tails
        queue = store.review_queue([StopReason.LIMIT, StopReason.GAVE_UP], success_share=1.0)
        assert sorted(r.run_id for r in queue) == sorted(FINISHED)
        store.add_review("c-limit", "limit_too_low", "", written, by="compat")
        assert [(v.run_id, v.label) for v in store.labelled(limit=10)] == [("c-limit", "limit_too_low")]
        hooks = MetricsHooks(CollectorRegistry(), pending=store.pending_groups)
        gauges = {
            agent: hooks.registry.get_sample_value(
                "agent_help_pending", {"agent": agent, "task_type": "default"}
            )
            for agent in ("c-question", "c-approval", "c-expired", "c-timeout")
        }
        assert gauges == {"c-question": 1.0, "c-approval": 2.0, "c-expired": 1.0, "c-timeout": 1.0}
        oldest = hooks.registry.get_sample_value(
            "agent_help_oldest_pending_seconds", {"agent": "c-question", "task_type": "default"}
        )
        assert oldest is not None and oldest >= time.time() - written - 60  # from when it asked
    finally:
        store.close()

    ca.COUNTS.clear()
    answered = drive(url, written, lambda r: r.resume("c-question", "EU"))
    assert (answered.reason, answered.output) == (StopReason.SUCCESS, "EU share: 40%")
    approved = drive(url, written, lambda r: r.resume("c-approval", approved=True))
    assert (approved.reason, approved.output) == (StopReason.SUCCESS, "billed")
    denied = drive(url, written, lambda r: r.resume("c-deny", approved=False))
    assert (denied.reason, denied.output) == (StopReason.SUCCESS, "billed")
    recovered = drive(url, written, lambda r: r.recover())
    assert sorted((r.run_id, r.reason, r.output) for r in recovered) == [
        ("c-answered", StopReason.SUCCESS, "DELTA: net 30"),
        ("c-cancelled", StopReason.SUCCESS, "three customers looked up"),
        ("c-crashed", StopReason.SUCCESS, "three customers looked up"),
        ("c-cut", StopReason.SUCCESS, "slow one looked up"),
    ]
    swept = drive(url, written, lambda r: r.sweep())
    assert sorted((r.run_id, r.reason, r.output) for r in swept) == [
        ("c-expired", StopReason.SUCCESS, "not shipped"),
        ("c-timeout", StopReason.HELP_TIMEOUT, ""),
    ]
    # no recorded call ran again: BETA and GAMMA for the crashed run, GAMMA for the cancelled one,
    # DELTA for the answered one; the call a shutdown cut off is not run again
    assert ca.COUNTS == {"send_invoice": 1, "lookup": 4}
    # the success audit the old release scheduled (schema 6 on) is made, a minute after the run ended
    audits = drive(url, written, lambda r: r.audit_due())
    expected = [("c-audited", AuditOutcome.CONFIRMED)] if schema >= AUDITS_SINCE else []
    assert [(a.run_id, a.outcome) for a in audits] == expected

    store = open_store(url)
    try:
        listing = store.list_runs(limit=None)
        assert not listing.damaged and {r.status for r in listing} == {RunStatus.FINISHED}
        assert store.waiting(limit=10) == [] and store.pending_groups() == []
        assert store.prune(ended_before=written + 7200) == len(ca.RUNS)
        assert store.list_runs(limit=None) == []
    finally:
        store.close()


def test_limits_suggest_reads_an_old_store(
    old_store: tuple[str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    from agent.cli.main import main

    url, _ = old_store
    assert main(["limits", "suggest", "--store", url, "--json"]) == 0
    [found] = json.loads(capsys.readouterr().out)
    assert found["task_type"] == "default" and found["ceilings"]["turns"]["successes"] == 2


def test_the_service_s_inbox_and_pages_read_an_old_store(old_store: tuple[str, int]) -> None:
    from starlette.testclient import TestClient
    from test_service_defences import LOCAL, TOKEN

    from agent.service.app import Service, create_app
    from agent.service.auth import Token

    url, _ = old_store
    store = open_store(url)
    try:
        written = max(r.updated_at for r in store.list_runs(limit=None))
        runner = Runner(store, ca.catalog(), clock=Later(written))
        service = Service(runner, Token(TOKEN), sweep_interval=3600)
        with TestClient(create_app(service), base_url=LOCAL) as api:
            inbox = api.get("/inbox")
            assert inbox.status_code == 200, inbox.text[:300]
            assert "Which region: EU or US?" in inbox.text and "send_invoice" in inbox.text
            pending = api.get("/pending", headers={"Authorization": f"Bearer {TOKEN}"})
            assert pending.status_code == 200, pending.text[:300]
            assert "damaged" not in pending.json()
            assert {"c-question", "c-approval", "c-deny"} <= {r["run_id"] for r in pending.json()["pending"]}
            review = api.get("/inbox/review?limit=50")
            assert review.status_code == 200 and "c-limit" in review.text, review.text[:300]
            for run_id in ca.RUNS:
                page = api.get(f"/runs/{run_id}", headers={"Authorization": f"Bearer {TOKEN}"})
                assert page.status_code == 200 and page.json()["run_id"] == run_id, page.text[:300]
    finally:
        store.close()


@pytest.mark.parametrize("backend", pg.BACKENDS)
def test_more_budget_for_a_limit_stop_an_early_release_kept_no_snapshot_of_says_so(
    backend: str, tmp_path: Path
) -> None:
    """The release of store schema 4 kept no snapshot of a finished run: its limit stop cannot be
    given more budget, and the refusal says that (it said the run 'did not stop at a limit')."""
    from compat_stores import DATA

    url = load(DATA / "schema4.sqlite.sql", backend, tmp_path)
    store = open_store(url)
    try:
        runner = Runner(store, ca.catalog())
        with pytest.raises(NotClaimable) as refused:
            runner.claim("c-limit", more=Extension(turns=1))
        said = str(refused.value)
        assert "stopped at a limit" in said and "no snapshot" in said and "did not stop" not in said
        record = store.get("c-limit")
        assert record is not None and record.status is RunStatus.FINISHED and record.owner is None
    finally:
        store.close()
