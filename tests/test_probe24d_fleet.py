"""probe24d: services of one fleet share a store and run different agents (SQLite and PostgreSQL).

Before, a runner whose catalog lacked a run's agent claimed that run anyway, in `recover` (a crashed
or shutdown-cancelled run), in the deadline sweep and in the success audits, and ended it `error`
("could not be continued"), or recorded its audit as an error, though another service that has the
agent would have continued it: a dropped run, and a false error on the dashboards. Now a runner
claims only the runs of agents its catalog has, leaves the others untouched for a runner that has
them (and says so once per agent), refuses an answer or a resume of such a run before any claim,
and an operator ends a run whose agent no deployment has any more with `endstate end`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_runner_agents import Crash, counted, counter_state, env_with_tests, make_counter, outlive_leases

from agent import Agent, StopReason
from agent.audit import SuccessAudit
from agent.durable.runner import Catalog, NotInCatalog, Runner
from agent.durable.store import NotClaimable, RunRecord, RunStatus, RunStore, open_store
from agent.models.scripted import ScriptedModel, finish

DYING_LEASE = 600.0


def billing(state: dict[str, Any]) -> Agent:
    """The agent only the billing service has (a counter, under its own name)."""
    return dataclasses.replace(make_counter(state), name="billing")


def audited(state: dict[str, Any]) -> Agent:
    """An agent whose every success is audited at once (the audit confirms it)."""
    audit = SuccessAudit(check=lambda ctx: [], share=1.0, after=0)
    return Agent(name="audited", model=ScriptedModel([[finish("done", "ok")]]), audit=audit)


def support_catalog() -> Catalog:
    """The support service's agents: it has no `billing` and no `audited`."""
    c = Catalog()
    c.register("counter", make_counter)
    return c


def billing_catalog() -> Catalog:
    c = Catalog()
    c.register("billing", billing)
    c.register("audited", audited)
    return c


def runner_of(store_url: str, catalog: Catalog, **options: Any) -> Runner:
    return Runner(open_store(store_url), catalog, **options)


def untouched(store: RunStore, before: RunRecord) -> None:
    """The run's row is as it was: nobody claimed, released or ended it."""
    after = store.get(before.run_id)
    assert after is not None
    assert (after.status, after.segments, after.owner, after.updated_at, after.stop_reason) == (
        before.status,
        before.segments,
        before.owner,
        before.updated_at,
        before.stop_reason,
    )


def test_a_crashed_run_is_left_by_a_runner_without_its_agent_and_recovered_by_one_with_it(
    store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "crash"
    dying = runner_of(store_url, billing_catalog(), lease_seconds=DYING_LEASE)
    with pytest.raises(Crash):
        asyncio.run(dying.start("billing", "count", state=counter_state(folder, "crash"), run_id="b1"))
    assert outlive_leases(store_url, DYING_LEASE + 1, dying.owner) == 1  # its worker died
    support, billing_service = (
        runner_of(store_url, support_catalog()),
        runner_of(store_url, billing_catalog()),
    )
    try:
        before = support.store.get("b1")
        assert before is not None and before.status is RunStatus.RUNNING
        with caplog.at_level(logging.WARNING, logger="endstate.runner"):
            assert asyncio.run(support.recover()) == []
            assert asyncio.run(support.recover()) == []  # every sweep: said once
        untouched(support.store, before)
        said = [r.getMessage() for r in caplog.records if "'billing'" in r.getMessage()]
        assert len(said) == 1 and "left for a runner whose catalog has that agent" in said[0], said

        [done] = asyncio.run(billing_service.recover())
        assert (done.run_id, done.reason) == ("b1", StopReason.SUCCESS)
        assert counted(folder) == [1, 2, 3, 4]  # no recorded call ran twice
    finally:
        for r in (dying, support, billing_service):
            r.store.close()


def test_a_run_a_shutdown_cancelled_is_left_by_a_runner_without_its_agent(
    store_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "stopped"
    stopping = runner_of(store_url, billing_catalog())
    stopping.shutting_down.set()  # the process is shutting down as the run begins: it is checkpointed
    first = asyncio.run(stopping.start("billing", "count", state=counter_state(folder, "plain"), run_id="b2"))
    assert first.reason is StopReason.CANCELLED
    support, billing_service = (
        runner_of(store_url, support_catalog()),
        runner_of(store_url, billing_catalog()),
    )
    try:
        before = support.store.get("b2")
        assert before is not None and (before.status, before.interrupted) == (RunStatus.CANCELLED, True)
        assert support.recoverable() == [] and asyncio.run(support.recover()) == []
        untouched(support.store, before)
        [done] = asyncio.run(billing_service.recover())
        assert (done.run_id, done.reason) == ("b2", StopReason.SUCCESS)
    finally:
        for r in (stopping, support, billing_service):
            r.store.close()


def test_a_run_past_its_deadline_is_swept_only_by_a_runner_with_its_agent(
    store_url: str, tmp_path: Path
) -> None:
    state = counter_state(tmp_path / "ask", "ask", wait=1)
    asking = runner_of(store_url, billing_catalog())
    first = asyncio.run(asking.start("billing", "count", state=state, run_id="b3"))
    assert first.reason is StopReason.NEED_HELP
    support, billing_service = (
        runner_of(store_url, support_catalog()),
        runner_of(store_url, billing_catalog()),
    )
    later = time.time() + 60
    try:
        before = support.store.get("b3")
        assert before is not None
        assert support.expiry_jobs(now=later) == [] and asyncio.run(support.sweep(now=later)) == []
        untouched(support.store, before)
        [done] = asyncio.run(billing_service.sweep(now=later))
        assert (done.run_id, done.reason) == ("b3", StopReason.HELP_TIMEOUT)
    finally:
        for r in (asking, support, billing_service):
            r.store.close()


def test_an_audit_is_made_only_by_a_runner_with_its_agent(store_url: str) -> None:
    billing_service = runner_of(store_url, billing_catalog())
    support = runner_of(store_url, support_catalog())
    try:
        ran = asyncio.run(billing_service.start("audited", "ship it", run_id="a1"))
        assert ran.reason is StopReason.SUCCESS
        later = time.time() + 60
        assert asyncio.run(support.audit_due(now=later)) == []
        audit = support.store.audit_of("a1")
        assert audit is not None and audit.outcome is None  # still due: not recorded as an error
        [made] = asyncio.run(billing_service.audit_due(now=later))
        assert (made.run_id, str(made.outcome)) == ("a1", "confirmed")
    finally:
        billing_service.store.close()
        support.store.close()


def test_an_audit_due_elsewhere_never_holds_back_the_audits_this_runner_can_make(store_url: str) -> None:
    """The store gives a runner the due audits of its own agents: a hundred due for another service's
    agent, earlier, do not fill the page it reads."""
    store = open_store(store_url)
    try:
        from agent.audit import Audit

        for i in range(120):
            store.schedule_audit(Audit(f"x{i}", "audited", "general", 1.0 + i))
        store.schedule_audit(Audit("mine", "counter", "counting", 500.0))
        assert [a.run_id for a in store.due_audits(1000.0, agents=["counter"])] == ["mine"]
        assert store.due_audits(1000.0, agents=[]) == []
        assert len(store.due_audits(1000.0)) == 100
    finally:
        store.close()


def test_an_answer_where_the_agent_is_not_deployed_is_refused_before_any_claim(
    store_url: str, tmp_path: Path
) -> None:
    state = counter_state(tmp_path / "ask", "ask")
    billing_service = runner_of(store_url, billing_catalog())
    support = runner_of(store_url, support_catalog())
    try:
        first = asyncio.run(billing_service.start("billing", "count", state=state, run_id="b4"))
        assert first.reason is StopReason.NEED_HELP
        before = support.store.get("b4")
        assert before is not None
        for attempt in (lambda: support.claim("b4", "3"), lambda: support.claim("b4")):
            with pytest.raises(NotInCatalog, match=r"agent 'billing'.*nothing was changed.*endstate end b4"):
                attempt()
        untouched(support.store, before)
        assert support.store.get("b4").refused is None  # type: ignore[union-attr]  # no refusal kept

        done = asyncio.run(billing_service.resume("b4", "3"))  # where the agent is deployed
        assert done.reason is StopReason.SUCCESS
    finally:
        billing_service.store.close()
        support.store.close()


def endstate(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env_with_tests(),
    )


def test_the_cli_of_a_machine_without_the_agent_refuses_an_answer_and_an_operator_ends_the_run(
    store_url: str, tmp_path: Path
) -> None:
    """A run whose agent no deployment has any more (its service retired) waits for ever: `endstate
    answer` from a machine with another catalog says why in one line; `endstate end` ends it as
    `error` (`ended_by_operator`), and `pending` no longer lists it."""
    retired = runner_of(store_url, billing_catalog())
    try:
        first = asyncio.run(
            retired.start("billing", "count", state=counter_state(tmp_path / "a", "ask"), run_id="b5")
        )
        assert first.reason is StopReason.NEED_HELP
    finally:
        retired.store.close()
    on = ("--store", store_url, "--catalog", "test_probe24d_fleet:support_catalog")
    pending = endstate("pending", "--store", store_url)  # it runs no agent: it takes no --catalog
    assert pending.returncode == 0 and "b5  billing" in pending.stdout  # seen from any machine

    answered = endstate("answer", "b5", "3", *on)
    assert answered.returncode == 2 and "Traceback" not in answered.stderr
    assert len(answered.stderr.strip().splitlines()) == 1
    assert "agent 'billing', which this catalog does not have" in answered.stderr

    ended = endstate("end", "b5", "--note", "billing was retired", *on)
    assert ended.returncode == 0, ended.stderr
    assert "run b5: error" in ended.stdout and "billing was retired" in ended.stdout
    store = open_store(store_url)
    try:
        rec = store.get("b5")
        assert rec is not None
        assert (rec.status, rec.stop_reason, rec.error_type) == (
            RunStatus.FINISHED,
            "error",
            "ended_by_operator",
        )
        assert rec.owner is None and rec.ended_at is not None
        assert store.snapshot("b5") is not None  # its journal is kept for review
        assert store.waiting(10) == []
    finally:
        store.close()
    again = endstate("end", "b5", *on)
    assert again.returncode == 2 and "has ended already" in again.stderr
    assert "no run with id 'nope'" in endstate("end", "nope", *on).stderr


def test_end_refuses_a_run_a_live_worker_holds(store_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "held"
    holder = runner_of(store_url, billing_catalog(), lease_seconds=DYING_LEASE)
    operator = runner_of(store_url, support_catalog())
    try:
        job = holder.begin("billing", "count", state=counter_state(folder, "plain"), run_id="b6")
        before = operator.store.get("b6")
        assert before is not None
        with pytest.raises(NotClaimable, match="held by a live worker"):
            operator.end("b6")
        untouched(operator.store, before)
        assert outlive_leases(store_url, DYING_LEASE + 1, holder.owner) == 1  # its worker died
        holder._let_go("b6", None)  # (and this stand-in for it holds it no longer)
        ended = operator.end("b6", "never to run")
        assert (ended.reason, ended.error_type) == (StopReason.ERROR, "ended_by_operator")
        assert job.run_id == "b6" and counted(folder) == []  # nothing ran
    finally:
        holder.store.close()
        operator.store.close()


def test_a_service_without_the_agent_refuses_an_answer_with_a_503_that_says_where_it_runs(
    store_url: str, tmp_path: Path
) -> None:
    """Behind one load balancer a request may reach any service of the fleet: one whose catalog lacks
    the run's agent answers 503 (this deployment cannot serve it; another can), changing nothing."""
    from starlette.testclient import TestClient

    from agent.service.app import Service, create_app
    from agent.service.auth import Token

    token = "test-token-0123456789abcdef"
    billing_service = runner_of(store_url, billing_catalog())
    support = runner_of(store_url, support_catalog())
    try:
        first = asyncio.run(
            billing_service.start("billing", "count", state=counter_state(tmp_path / "a", "ask"), run_id="b7")
        )
        assert first.reason is StopReason.NEED_HELP
        before = support.store.get("b7")
        assert before is not None
        service = Service(support, Token(token), sweep_interval=3600)
        with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as api:
            reply = api.post(
                "/runs/b7/answer", json={"answer": "3"}, headers={"Authorization": f"Bearer {token}"}
            )
            assert reply.status_code == 503, reply.text
            assert "agent 'billing', which this catalog does not have" in reply.json()["error"]
            assert api.get("/pending").json()["total"] == 1  # still listed: any service shows it
        untouched(support.store, before)
    finally:
        billing_service.store.close()
        support.store.close()
