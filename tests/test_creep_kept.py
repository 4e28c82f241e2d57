"""creep: a long-lived service keeps nothing of a run once it is over.

A service (`endstate serve`) runs for months: a million runs. Anything it kept per run (a dict keyed by
run id, a result, an agent and its model, a record, a snapshot) would grow its memory without bound.
Here a real service app with telemetry on (spans through the batch processor to an exporter that drops
them, every Prometheus instrument, `/metrics` and `/pending` read) plays runs over HTTP that end each
way a run ends (success, a question answered, a limit, an error, no progress, a deadline swept into
help_timeout), then as many again; after each batch, once nothing is in flight and the garbage is
collected, it counts what is still alive. No class has as many live objects as one batch had runs (asyncio
keeps up to some 100 cancelled timers, each with the context it copied, a bounded few runs' objects),
and the runner's own per-run structures are empty.
`benchmarks/service_memory.py` measures the process's memory over 20,000 runs of a real `endstate
serve`.
"""

from __future__ import annotations

import functools
import gc
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient

from agent import Agent, Budget, HelpPolicy, tool
from agent.durable.runner import Catalog, Job, Runner, runner_with_telemetry
from agent.durable.store import RunRecord, open_store
from agent.hooks import RunInfo
from agent.models.scripted import ScriptedModel, call, finish, say
from agent.result import RunResult
from agent.service.app import Service, create_app
from agent.service.auth import Token
from agent.snapshot import Snapshot
from telemetry import Telemetry

TOKEN = "creep-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RUN_CLASSES = (Agent, RunResult, RunRecord, Job, ScriptedModel, Snapshot, RunInfo)


@tool
def note(n: int) -> str:
    """Write down a number."""
    return f"noted {n}"


# each agent's script and ceilings, and how its run ends (after an answer, for `asks`)
PLAYS: dict[str, tuple[list[Any], dict[str, Any], str]] = {
    "succeeds": ([[call("note", n=1)], [finish("done", "ok")]], {}, "success"),
    "asks": ([[call("note", n=1)], [finish("need_help", "Which?")], [finish("done", "ok")]], {}, "success"),
    "runs_out": ([[call("note", n=1)], [call("note", n=2)], [finish("done", "ok")]], {"turns": 1}, "limit"),
    "repeats": ([[call("note", n=1)]] * 6, {}, "no_progress"),
    "talks": ([[say("hm")], [finish("give_up", "cannot")]], {}, "gave_up"),
    "breaks": ([], {}, "error"),
    "expires": ([[finish("need_help", "Which?")], [finish("done", "ok")]], {"wait": 60}, "help_timeout"),
}


def build(name: str) -> Any:
    steps, limits, _ = PLAYS[name]

    def agent(state: dict[str, Any]) -> Agent:
        script = [list(step) for step in steps] or [RuntimeError("the model broke")]  # one error per run
        return Agent(
            name=name,
            model=ScriptedModel(script),
            tools=[note],
            budget=Budget(max_turns=limits.get("turns", 10), max_seconds=600),
            help=HelpPolicy(wait_seconds=limits.get("wait", 3600)),
        )

    return agent


class Dropped(SpanExporter):
    def export(self, spans: Any) -> SpanExportResult:
        return SpanExportResult.SUCCESS


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[TestClient, Runner]]:
    telemetry = Telemetry.from_env({}, registry=CollectorRegistry(), span_exporter=Dropped())
    catalog = Catalog()
    for name in PLAYS:
        catalog.register(name, build(name))
    store = open_store(str(tmp_path / "runs.db"))
    runner = runner_with_telemetry(store, catalog, telemetry, 60)
    service = Service(runner, Token(TOKEN), sweep_interval=3600, metrics=telemetry.exposition)
    try:
        with TestClient(create_app(service), base_url="http://127.0.0.1:8000") as client:
            yield client, runner
    finally:
        store.close()
        telemetry.shutdown()


def play(client: TestClient, runner: Runner, rounds: int) -> None:
    """`rounds` runs of every agent, each to its end over HTTP."""
    for _ in range(rounds):
        for name, (_, _, ends) in PLAYS.items():
            started = client.post("/runs", json={"agent": name, "task": "note it"}, headers=AUTH)
            assert started.status_code == 202, started.text
            run_id = started.json()["run_id"]
            if name in ("asks", "expires"):
                until(client, run_id, "waiting")
            if name == "asks":
                answered = client.post(f"/runs/{run_id}/answer", json={"answer": "the first"}, headers=AUTH)
                assert answered.status_code == 202, answered.text
            if name == "expires":  # a sweep a second past its deadline, by the clock the test gives it
                record = runner.store.get(run_id)
                assert record is not None and record.deadline is not None
                client.portal.call(functools.partial(runner.sweep, now=record.deadline + 1))  # type: ignore[union-attr]
            assert until(client, run_id, "finished")["stop_reason"] == ends, name
        assert client.get("/metrics").status_code == 200
        assert client.get("/pending", headers=AUTH).status_code == 200
    deadline = time.monotonic() + 30
    while runner.in_flight and time.monotonic() < deadline:  # a recorded run's task ends a moment later
        time.sleep(0.01)


def until(client: TestClient, run_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        run: dict[str, Any] = client.get(f"/runs/{run_id}", headers=AUTH).json()
        if run["status"] == status or time.monotonic() > deadline:
            assert run["status"] == status, run
            return run
        time.sleep(0.005)


def alive() -> Counter[str]:
    """The run objects still alive, by class, once the garbage is collected."""
    gc.collect()
    return Counter(type(o).__name__ for o in gc.get_objects() if isinstance(o, RUN_CLASSES))


def per_run(runner: Runner) -> dict[str, int]:
    """The sizes of the runner's structures that hold a run while it is held, driven or started."""
    return {
        "held": len(runner.held()),
        "active": runner.active,
        "in flight": runner.in_flight,
        "segments": len(runner._segments),
        "starting": len(runner._starting_ids),
    }


def test_a_service_keeps_no_run_object_once_its_runs_are_over(served: tuple[TestClient, Runner]) -> None:
    client, runner = served
    batch = 10 * len(PLAYS)
    play(client, runner, 10)
    play(client, runner, 10)
    kept = alive()  # asyncio keeps cancelled timers (and the contexts they copied) until it purges them
    assert all(count < batch for count in kept.values()), f"kept after {2 * batch} runs: {kept}"
    assert per_run(runner) == dict.fromkeys(per_run(runner), 0)
