"""A rolling deploy over one store: the new release opens a version-1 store and upgrades it in place
while a worker of version 1 still holds a run. That worker goes on writing its run's snapshot the
way version 1 did (a whole snapshot of provider messages in the run's row) beside the journal
entries the upgrade made of the run's older state. The new release reads that version-1 snapshot,
not the stale entries, and stores the run's journal whole again once it holds the run: the run
finishes, and no call it recorded runs again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pg
import pytest
import v1_agents
from old_stores import write_old_store

from agent import Agent, Budget, StopReason
from agent.durable.runner import Runner
from agent.durable.store import RunStatus, RunStore, open_store
from agent.journal import Answered, Result, Stopped, Suspended, Task
from agent.models.scripted import ScriptedModel, call, finish

FIXTURE = json.loads((Path(__file__).with_name("fixtures") / "v1_store_rows.json").read_text())


def _v1(run_id: str) -> dict[str, Any]:
    row = next(r for r in FIXTURE["rows"] if r["run_id"] == run_id)
    snapshot: dict[str, Any] = json.loads(row["snapshot"])
    return snapshot


def _written_by_v1(store: RunStore, run_id: str, snapshot: dict[str, Any], status: str) -> None:
    """What a version-1 worker's write leaves in the upgraded store (its columns: no entries); its
    lease is over (the worker stopped at the deploy's end)."""
    store._rows(  # type: ignore[attr-defined]
        "UPDATE endstate_runs SET snapshot = ?, status = ?, checkpoints = checkpoints + 1, lease_until = 0 "
        "WHERE run_id = ?",
        (json.dumps(snapshot), status, run_id),
    )


def _results(store: RunStore, run_id: str) -> list[str]:
    snap = store.snapshot(run_id)
    assert snap is not None and isinstance(snap.journal[0], Task) and isinstance(snap.journal[-1], Stopped)
    record = store.get(run_id)
    assert record is not None and record.journal_length == len(snap.journal)
    return [e.text for e in snap.journal if isinstance(e, Result)]


@pytest.fixture(params=pg.BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = pg.url_for(request.param, tmp_path)
    write_old_store(url, FIXTURE["schema_version"], FIXTURE["rows"])
    opened = open_store(url)  # the new release upgrades the store
    yield opened
    opened.close()


def _runner(store: RunStore) -> Runner:
    v1_agents.COUNTS.clear()
    catalog = v1_agents.catalog()
    catalog.register("v1-approval", _asks_after_the_invoice)
    return Runner(store, catalog, clock=v1_agents.AsWritten())


def _asks_after_the_invoice(_: dict[str, Any] | None = None) -> Agent:
    """v1-approval, whose model asks a question after the invoice was sent."""
    steps = [
        [call("lookup", customer="ACME"), call("send_invoice", customer="ACME", amount=120.0)],
        [finish("need_help", "Which currency?")],
        [finish("done", "billed")],
    ]
    tools = [v1_agents.lookup, v1_agents.send_invoice]
    return Agent("v1-approval", ScriptedModel(steps), tools=tools, budget=Budget(max_turns=10))


def test_a_checkpoint_a_version_1_worker_wrote_after_the_upgrade_is_recovered(store: RunStore) -> None:
    # v1-crashed held the result of its first call; the version-1 worker finished the turn since
    snapshot = _v1("v1-crashed")
    results = [
        {"type": "tool_result", "tool_use_id": "toolu_001_0", "content": "ACME: net 30"},
        {"type": "tool_result", "tool_use_id": "toolu_001_1", "content": "BETA: net 30"},
    ]
    snapshot["messages"].append({"role": "user", "content": results})
    snapshot["open_results"] = []  # version 1 wrote no turn in flight so
    _written_by_v1(store, "v1-crashed", snapshot, "running")
    done = {r.run_id: r for r in asyncio.run(_runner(store).recover())}
    assert done["v1-crashed"].reason is StopReason.SUCCESS, done["v1-crashed"].note
    assert v1_agents.COUNTS == {"lookup": 1}  # GAMMA only: BETA's result was recorded by version 1
    assert _results(store, "v1-crashed") == ["ACME: net 30", "BETA: net 30", "GAMMA: net 30", *_done()]


def _asked_after_the_invoice(store: RunStore) -> None:
    """The version-1 worker got the approval of v1-approval's call, ran it, and its model then asked."""
    snapshot = _v1("v1-approval")
    asked = {"type": "tool_use", "id": "toolu_002_0", "name": "finish"}
    asked["input"] = {"kind": "need_help", "note": "Which currency?"}
    results = [
        {"type": "tool_result", "tool_use_id": "toolu_001_0", "content": "ACME: net 30"},
        {"type": "tool_result", "tool_use_id": "toolu_001_1", "content": "invoice of 120.00 sent to ACME"},
    ]
    snapshot["messages"] += [
        {"role": "user", "content": results},
        {"role": "assistant", "content": [asked]},
    ]
    snapshot["open_results"] = [None]
    snapshot["suspension"] = {**snapshot["suspension"], "question": "Which currency?", "pending": None}
    _written_by_v1(store, "v1-approval", snapshot, "waiting")
    store._rows(  # type: ignore[attr-defined]
        "UPDATE endstate_runs SET question = ?, pending = NULL WHERE run_id = ?",
        ("Which currency?", "v1-approval"),
    )


def test_a_question_a_version_1_worker_asked_after_the_upgrade_is_answered(store: RunStore) -> None:
    _asked_after_the_invoice(store)
    answered = asyncio.run(_runner(store).resume("v1-approval", "EUR"))
    assert answered.reason is StopReason.SUCCESS, answered.note
    assert v1_agents.COUNTS == {}  # the invoice version 1 sent is not sent again
    record = store.get("v1-approval")
    assert record is not None and record.status is RunStatus.FINISHED
    snap = store.snapshot("v1-approval")
    assert snap is not None
    assert [type(e) for e in snap.journal].count(Suspended) == 1  # the upgrade's stale question is gone
    answers = [e.reply for e in snap.journal if isinstance(e, Answered)]
    assert [getattr(a, "text", None) for a in answers] == ["EUR"]
    assert _results(store, "v1-approval")[:2] == ["ACME: net 30", "invoice of 120.00 sent to ACME"]


def test_a_question_a_version_1_worker_asked_after_the_upgrade_expires(store: RunStore) -> None:
    _asked_after_the_invoice(store)
    runner = _runner(store)
    [expired] = [
        r
        for r in asyncio.run(runner.sweep(now=v1_agents.WRITTEN_AT + 2 * 86400))
        if r.run_id == "v1-approval"
    ]
    assert expired.reason is StopReason.HELP_TIMEOUT, expired.note
    snap = store.snapshot("v1-approval")
    assert snap is not None and [type(e) for e in snap.journal].count(Suspended) == 1
    assert _results(store, "v1-approval") == ["ACME: net 30", "invoice of 120.00 sent to ACME"]


def _done() -> list[str]:
    return []  # the finish call that succeeded stops the run: it has no result entry
