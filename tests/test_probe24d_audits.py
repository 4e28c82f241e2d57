"""probe24d: the services of a fleet make each success audit once, not once a service.

Every service's sweep made every due audit: each listed it, each ran its check (an evaluator model,
say: paid for once a service), and only the first outcome was kept. Now a worker takes a due audit
(in one statement, as listed) before it runs the check: the others leave it. A worker that dies
while it checks leaves it due again later (`AUDIT_HOLD_SECONDS`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from agent import Agent, StopReason
from agent.audit import Audit, SuccessAudit
from agent.durable.runner import AUDIT_HOLD_SECONDS, Catalog, Runner
from agent.durable.store import open_store
from agent.models.scripted import ScriptedModel, finish

CHECKED: list[str] = []  # the run ids each audit check was asked about, in this process
LOCK = threading.Lock()


def slow_check(ctx: Any) -> list[str]:
    """An independent check that takes a while (an evaluator model's call, say)."""
    with LOCK:
        CHECKED.append(ctx.run_id)
    time.sleep(0.5)
    return []


def audited_catalog() -> Catalog:
    audit = SuccessAudit(check=slow_check, share=1.0, after=0)
    c = Catalog()
    c.register(
        "judged",
        lambda state: Agent(name="judged", model=ScriptedModel([[finish("done", "ok")]]), audit=audit),
    )
    return c


def test_two_services_sweeping_at_once_make_a_due_audit_once(store_url: str) -> None:
    CHECKED.clear()
    runners = [Runner(open_store(store_url), audited_catalog()) for _ in range(3)]
    try:
        ran = asyncio.run(runners[0].start("judged", "ship it", run_id="j1"))
        assert ran.reason is StopReason.SUCCESS
        later = time.time() + 60
        start = threading.Barrier(len(runners))
        made: list[list[Audit]] = [[] for _ in runners]

        def sweep(i: int) -> None:
            start.wait()
            made[i] = asyncio.run(runners[i].audit_due(now=later))

        threads = [threading.Thread(target=sweep, args=(i,)) for i in range(len(runners))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert CHECKED == ["j1"]  # the check ran once
        assert sorted(len(m) for m in made) == [0, 0, 1]
        audit = runners[0].store.audit_of("j1")
        assert audit is not None and str(audit.outcome) == "confirmed"
    finally:
        for r in runners:
            r.store.close()


def test_an_audit_whose_maker_died_is_due_again_after_its_hold(store_url: str) -> None:
    store = open_store(store_url)
    try:
        store.schedule_audit(Audit("j2", "judged", "general", 100.0))
        [due] = store.due_audits(200.0)
        assert store.claim_audit(due, 200.0 + AUDIT_HOLD_SECONDS)  # taken; its maker dies
        assert not store.claim_audit(due, 300.0)  # as listed before: taken already
        assert store.due_audits(200.0 + AUDIT_HOLD_SECONDS - 1) == []
        [again] = store.due_audits(200.0 + AUDIT_HOLD_SECONDS)
        assert again.run_id == "j2" and store.claim_audit(again, 5000.0)
    finally:
        store.close()
