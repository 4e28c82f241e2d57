"""A success audit whose check is slow, not dead: made once in the fleet, and never holding up the
service's deadline sweep or its recovery of other workers' runs while it checks."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pg
import pytest

from agent import Agent, HelpPolicy, RunContext, StopReason, within
from agent.audit import SuccessAudit
from agent.clock import SystemClock
from agent.durable.runner import AUDIT_HOLD_SECONDS, Catalog, Runner
from agent.durable.store import RunStatus, open_store
from agent.models.scripted import ScriptedModel, finish
from agent.service.app import Service
from agent.service.auth import Token

TOKEN = "t" * 32
HOUR = 3600.0


class Ahead(SystemClock):
    """The system's clock, moved on when a test says time passed (no test waits for it)."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def time(self) -> float:
        return super().time() + self.ahead


class Gate:
    """An audit check that counts its calls and waits until the test lets it finish."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, ctx: RunContext) -> list[str]:
        self.calls.append(ctx.run_id)
        self.entered.set()
        self.release.wait(60)
        return []


def done_model() -> ScriptedModel:
    return ScriptedModel([[finish("done", "ok")]])


def catalog(gate: Gate) -> Catalog:
    audit = SuccessAudit(check=within(HOUR, gate), share=1.0, after=0)
    c = Catalog()
    c.register("judged", lambda state: Agent(name="judged", model=done_model(), audit=audit))
    c.register(
        "asker",
        lambda state: Agent(
            name="asker",
            model=ScriptedModel([[finish("need_help", "Which one?")]]),
            help=HelpPolicy(wait_seconds=60),
        ),
    )
    return c


@pytest.fixture(params=pg.BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return pg.url_for(request.param, tmp_path)


def test_an_audit_whose_check_may_take_an_hour_is_not_made_again_while_its_maker_still_checks(
    store_url: str,
) -> None:
    """The check's own timeout is an hour: a worker still inside it 15 minutes on is slow, not dead, so
    another worker of the fleet must not make the same audit again meanwhile."""
    gate = Gate()
    first, second = Runner(open_store(store_url), catalog(gate)), Runner(open_store(store_url), catalog(gate))
    try:
        assert asyncio.run(first.start("judged", "ship it", run_id="j1")).reason is StopReason.SUCCESS
        now = time.time()
        made: list[Any] = []
        checking = threading.Thread(target=lambda: made.extend(asyncio.run(first.audit_due(now=now + 1))))
        checking.start()
        assert gate.entered.wait(60), "the first worker never began the check"
        later = now + 1 + AUDIT_HOLD_SECONDS + 60  # past the 15-minute hold, well inside the check's hour
        again = asyncio.run(second.audit_due(now=later))
        gate.release.set()
        checking.join(60)
        assert gate.calls == ["j1"], f"the audit's check ran {len(gate.calls)} times"
        assert again == [] and [a.run_id for a in made] == ["j1"]
    finally:
        gate.release.set()
        first.store.close()
        second.store.close()


def test_the_service_sweeps_deadlines_while_an_audit_check_is_still_running(tmp_path: Path) -> None:
    """A slow audit check (an evaluator model, a look at the outside world) runs beside the sweep: a
    person's deadline passing meanwhile still ends that run `help_timeout` on time."""
    gate = Gate()
    store = open_store(str(tmp_path / "runs.db"))
    clock = Ahead()
    runner = Runner(store, catalog(gate), clock=clock)
    service = Service(runner, Token(TOKEN), sweep_interval=0.05)

    async def main() -> tuple[RunStatus | None, Any]:
        assert (await runner.start("judged", "ship it", run_id="j1")).reason is StopReason.SUCCESS
        async with service.lifespan(None):  # type: ignore[arg-type]
            began = await asyncio.to_thread(gate.entered.wait, 60)
            assert began, "the service never began the audit's check"
            asked = await runner.start("asker", "pick one", run_id="a1")
            assert asked.reason is StopReason.NEED_HELP
            clock.ahead = 61.0  # its minute's deadline passes while the check still runs
            for _ in range(200):
                record = store.get("a1")
                if record is not None and record.status is RunStatus.FINISHED:
                    break
                await asyncio.sleep(0.05)
            seen = store.get("a1")
            gate.release.set()
        return (seen.status if seen else None), (seen.stop_reason if seen else None)

    try:
        status, reason = asyncio.run(asyncio.wait_for(main(), 120))
    finally:
        gate.release.set()
        store.close()
    assert gate.calls == ["j1"]
    assert (status, reason) == (RunStatus.FINISHED, StopReason.HELP_TIMEOUT), (status, reason)


def test_the_service_audits_never_hold_its_event_loop_while_the_store_hangs() -> None:
    """Audits run beside the sweep, and their store calls (the due list, the run's reads) are made off
    the event loop: a PostgreSQL server that stops answering never stalls `/healthz` and the runs."""
    from hang import FreezableProxy

    url = pg.shared_server().new_database()
    head, _, name = url.rpartition("/")
    with FreezableProxy(int(head.rpartition(":")[2])) as proxy:
        store = open_store(f"{head.rpartition(':')[0]}:{proxy.port}/{name}", timeout=8)
        service = Service(Runner(store, catalog(Gate())), Token(TOKEN), sweep_interval=0.05)

        async def longest_stall() -> float:
            """The longest the event loop went without running a 10 ms sleep, over 3 s of a frozen store."""
            async with service.lifespan(None):  # type: ignore[arg-type]
                await asyncio.sleep(0.3)  # a few rounds of sweeps and audits with the store answering
                proxy.freeze()
                longest, last, until = 0.0, time.monotonic(), time.monotonic() + 3
                while time.monotonic() < until:
                    await asyncio.sleep(0.01)
                    now = time.monotonic()
                    longest, last = max(longest, now - last), now
                proxy.thaw()
            return longest

        try:
            stall = asyncio.run(asyncio.wait_for(longest_stall(), 120))
        finally:
            proxy.thaw()
            store.close()
    assert stall < 6.0, f"the event loop stalled {stall:.1f} s waiting for a store that hangs (timeout 8 s)"
