"""A PostgreSQL store whose server ends its connections (`pg_terminate_backend`: an operator, a
failover, a pooler's restart) between two checkpoints of a run, before an answer, and in the middle
of an answer's statement: the next checkpoint, and the answer, connect again; the run goes on and
nothing is written twice or lost; an answer cut off changed nothing and can be given again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pg
import psycopg
import pytest

from agent import Agent, HelpPolicy, StopReason, tool
from agent._state import calls_of
from agent.durable.runner import Catalog, Job, Runner
from agent.durable.store import RunStatus, StoreError, open_store
from agent.journal import Journal
from agent.models.scripted import ScriptedModel, call, finish


def _terminate_others(url: str) -> int:
    """End every other connection to the database of `url` (as an operator would); how many."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.fixture
def pg_url() -> str:
    return pg.shared_server().new_database()


def _catalog(url: str, ended: list[int]) -> Catalog:
    @tool
    def step(n: int) -> str:
        """Take a step; step 2 ends the store's connections on the server first."""
        if n == 2:
            ended.append(_terminate_others(url))
        return f"did {n}"

    steps: list[Any] = [
        [call("step", n=1)],
        [call("step", n=2)],
        [call("step", n=3)],
        [finish("need_help", "Which way now?")],
        [call("step", n=4)],
        [finish("done", "ok")],
    ]
    catalog = Catalog()
    catalog.register(
        "stepper",
        lambda state: Agent(
            name="stepper", model=ScriptedModel(steps), tools=[step], help=HelpPolicy(wait_seconds=3600)
        ),
    )
    return catalog


def test_a_run_whose_store_connections_the_server_ended_goes_on(pg_url: str) -> None:
    ended: list[int] = []
    store = open_store(pg_url)
    runner = Runner(store, _catalog(pg_url, ended))
    try:
        asked = asyncio.run(runner.start("stepper", "walk", run_id="walk"))
        assert asked.reason is StopReason.NEED_HELP, (asked.reason, asked.note)
        assert ended and ended[0] >= 1  # the store's connection (and its checkpoint sender's) ended
        assert _terminate_others(pg_url) >= 1  # and again, while the run waits for its answer
        done = asyncio.run(runner.drive(runner.claim("walk", "left")))
        assert done.reason is StopReason.SUCCESS, (done.reason, done.note)
        record = store.get("walk")
        assert record is not None and (record.status, record.stop_reason) == (
            RunStatus.FINISHED,
            StopReason.SUCCESS,
        )
        snap = store.snapshot("walk")
        assert snap is not None
        results = [c.result for c in calls_of(Journal(snap.journal))]
        assert results == ["did 1", "did 2", "did 3", "did 4"], results  # each once, none lost
    finally:
        runner.catalog.close()
        store.close()


def test_an_answer_whose_connection_the_server_ended_mid_statement_changed_nothing(pg_url: str) -> None:
    """The answer's claim waits on the run's row (another transaction holds it) when the server ends
    its connection: the answer fails saying so, the run still waits for it, and the same answer
    given again lands."""
    store = open_store(pg_url)
    runner = Runner(store, _catalog(pg_url, []))
    try:
        asked = asyncio.run(runner.start("stepper", "walk", run_id="walk"))
        assert asked.reason is StopReason.NEED_HELP
        with psycopg.connect(pg_url) as holder:  # a transaction holding the run's row
            holder.execute("SELECT 1 FROM endstate_runs WHERE run_id = 'walk' FOR UPDATE")
            outcome: list[BaseException | Job] = []
            answering = threading.Thread(target=_answer, args=(runner, outcome), daemon=True)
            answering.start()
            waiting = _backend_waiting_for_a_lock(pg_url)
            with psycopg.connect(pg_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (waiting,))
            answering.join(30)
            assert not answering.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], StoreError), outcome
        assert "terminating connection" in str(outcome[0]), outcome[0]
        record = store.get("walk")
        assert record is not None and (record.status, record.owner) == (RunStatus.WAITING, None)
        done = asyncio.run(runner.drive(runner.claim("walk", "left")))  # given again: it lands
        assert done.reason is StopReason.SUCCESS, (done.reason, done.note)
    finally:
        runner.catalog.close()
        store.close()


def _answer(runner: Runner, outcome: list[BaseException | Job]) -> None:
    try:
        outcome.append(runner.claim("walk", "left"))
    except BaseException as exc:
        outcome.append(exc)


def _backend_waiting_for_a_lock(url: str) -> int:
    """The pid of the backend that waits for a row lock (the answer's claim), once there is one."""
    with psycopg.connect(url, autocommit=True) as conn:
        for _ in range(600):
            row = conn.execute(
                "SELECT pid FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            ).fetchone()
            if row:
                return int(row[0])
            time.sleep(0.05)
    raise AssertionError("no backend waited for the run's row in 30 s")
