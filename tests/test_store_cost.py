"""A run's cost in the store: unknown stays unknown (never $0), known stays known, on both backends."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from old_stores import write_old_store

from agent import Agent, Approval, Budget, HelpPolicy, LimitKind, Price, PriceTable, StopReason, tool
from agent.budget import Spent
from agent.cli.main import main
from agent.durable.review import queue
from agent.durable.store import Lease, NewRun, Outcome, RunStatus, RunStore, open_store
from agent.evals.limits import history_from_store, render, suggest
from agent.journal import Task
from agent.models.scripted import ScriptedModel, call, finish
from agent.snapshot import Checkpoint, Snapshot, SnapshotKind
from agent.usage import Usage

NOW = 1_800_000_000.0
LEASE = Lease("w1", NOW + 60)
PRICED = PriceTable({"house-model": Price(input_per_mtok=3.0, output_per_mtok=15.0)})
UNPRICED = PriceTable()  # "house-model" is in no model table: its price is unknown


@tool
def look() -> str:
    """Read the invoice."""
    return "invoice INV-1, $5"


@tool(needs_approval=True)
def wire(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


def agent(prices: PriceTable, *steps: Any, store: RunStore | None = None, run_id: str = "r1") -> Agent:
    checkpoint = (lambda cp: store.checkpoint(run_id, cp, LEASE, NOW)) if store is not None else None
    return Agent(
        name="payer",
        model=ScriptedModel(list(steps), name="house-model"),
        tools=[look, wire],
        prices=prices,
        budget=Budget(max_turns=10, max_seconds=60),
        help=HelpPolicy(wait_seconds=3600),
        checkpoint=checkpoint,
    )


def started(store: RunStore, run_id: str = "r1") -> None:
    store.create(NewRun(run_id, "payer", "pay the invoice", "invoice"), LEASE, NOW)


def finished(store: RunStore, prices: PriceTable, run_id: str = "r1") -> None:
    started(store, run_id)
    result = agent(prices, [finish("done", "paid")], store=store, run_id=run_id).run("pay", run_id=run_id)
    store.record(run_id, Outcome.of(result), LEASE, NOW + 1)


def test_a_run_of_unknown_cost_is_stored_as_unknown_not_as_zero(store: RunStore) -> None:
    finished(store, UNPRICED, "unknown")
    finished(store, PRICED, "known")
    unknown, known = store.get("unknown"), store.get("known")
    assert unknown is not None and known is not None
    assert unknown.cost_usd is None and unknown.usage.cost_usd is None and unknown.input_tokens > 0
    assert known.cost_usd is not None and known.cost_usd > 0
    assert unknown.to_dict()["cost_usd"] is None and known.to_dict()["cost_usd"] == known.cost_usd
    listed = {r.run_id: r.cost_usd for r in store.list_runs()}
    assert listed == {"unknown": None, "known": known.cost_usd}


def test_a_checkpoint_of_a_running_run_keeps_its_cost_unknown(store: RunStore) -> None:
    started(store)
    steps = [call("look")], [call("wire", amount=5)]
    result = agent(UNPRICED, *steps, store=store).run("pay", run_id="r1")
    assert result.reason is StopReason.NEED_HELP and result.cost_usd is None
    running = store.get("r1")  # only the first turn's checkpoint has written its row so far
    assert running is not None and running.turns == 1 and running.input_tokens > 0
    assert running is not None and running.status is RunStatus.RUNNING and running.cost_usd is None


@pytest.mark.parametrize(("first", "second"), [(PRICED, UNPRICED), (UNPRICED, PRICED)])
def test_a_resumed_run_whose_segments_mix_known_and_unknown_cost_is_unknown(
    store: RunStore, first: PriceTable, second: PriceTable
) -> None:
    started(store)
    waiting = agent(first, [call("wire", amount=5)]).run("pay", run_id="r1")
    rec = store.record("r1", Outcome.of(waiting), LEASE, NOW + 1)
    assert rec.status is RunStatus.WAITING
    assert (rec.cost_usd is None) == (first is UNPRICED)  # the first segment alone: as it was
    store.claim("r1", (RunStatus.WAITING,), LEASE, NOW + 2, approved=True)
    snap = store.snapshot("r1")
    assert snap is not None
    done = agent(second, [call("wire", amount=5)], [finish("done", "paid")]).resume(snap, Approval())
    assert done.reason is StopReason.SUCCESS and done.turns == 2
    assert done.cost_usd is None  # never the known segment's cost presented as the total
    rec = store.record("r1", Outcome.of(done), LEASE, NOW + 3)
    assert rec.cost_usd is None and rec.input_tokens == done.input_tokens > waiting.input_tokens


def test_a_known_cost_adds_up_over_segments(store: RunStore) -> None:
    started(store)
    waiting = agent(PRICED, [call("wire", amount=5)]).run("pay", run_id="r1")
    store.record("r1", Outcome.of(waiting), LEASE, NOW + 1)
    store.claim("r1", (RunStatus.WAITING,), LEASE, NOW + 2, approved=True)
    snap = store.snapshot("r1")
    assert snap is not None and waiting.cost_usd is not None and waiting.cost_usd > 0
    done = agent(PRICED, [call("wire", amount=5)], [finish("done", "paid")]).resume(snap, Approval())
    rec = store.record("r1", Outcome.of(done), LEASE, NOW + 3)
    assert rec.cost_usd == done.cost_usd and done.cost_usd is not None and done.cost_usd > waiting.cost_usd


def test_the_cache_tokens_are_kept(store: RunStore) -> None:
    from agent.result import RunResult

    started(store)
    usage = Usage(1000, 50, cache_read_tokens=800, cache_write_tokens=150, cost_usd=0.0125)
    result = RunResult("r1", "payer", "invoice", StopReason.SUCCESS, turns=1, usage=usage)
    rec = store.record("r1", Outcome.of(result), LEASE, NOW + 1)
    assert rec.usage == usage == store.get("r1").usage  # type: ignore[union-attr]
    assert rec.to_dict() | usage.flat() == rec.to_dict()  # flat in the JSON, beside the rest


@pytest.mark.parametrize("unpriced", [0, 2])
def test_a_checkpoint_writes_the_runs_tally_as_its_usage(store: RunStore, unpriced: int) -> None:
    """A checkpoint's usage columns are the running tally's usage (its cost to six places, or unknown
    once a call had no price), its turns and its times: what a record of the same tally writes."""
    started(store)
    spent = Spent(3, 1200, 340, 0.123456789, 1.5, 0.25, unpriced, 700, 90)
    head = Snapshot("r1", "payer", "invoice", SnapshotKind.CHECKPOINT, 0, [], spent)
    store.checkpoint("r1", Checkpoint(head, 0, [Task("pay the invoice")]), LEASE, NOW)
    running = store.get("r1")
    assert running is not None and running.usage == spent.usage
    assert spent.usage.cost_usd == (None if unpriced else 0.123457)
    assert (running.turns, running.active_seconds, running.waiting_seconds) == (3, 1.5, 0.25)


# -- what shows a run's cost -----------------------------------------------------------------------


def test_endstate_runs_prints_unknown_for_an_unknown_cost(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with closing(open_store(store_url)) as store:
        finished(store, UNPRICED, "unknown")
        finished(store, PRICED, "known")
        known = store.get("known")
    assert known is not None and known.cost_usd is not None
    assert main(["runs", "--store", store_url]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert " unknown  " in rows["unknown"] and "$0.0000" not in rows["unknown"]
    assert f"${known.cost_usd:.4f}" in rows["known"]
    assert main(["runs", "--json", "--store", store_url]) == 0
    shown = {d["run_id"]: d["cost_usd"] for d in map(json.loads, capsys.readouterr().out.splitlines())}
    assert shown == {"unknown": None, "known": known.cost_usd}


@pytest.mark.slow
def test_the_service_shows_an_unknown_cost_as_null(store_url: str, tmp_path: Path) -> None:
    from test_service_support import Server

    with closing(open_store(store_url)) as store:
        finished(store, UNPRICED, "unknown")
        finished(store, PRICED, "known")
    with Server(store_url, tmp_path) as server, server.client() as api:
        listed = {r["run_id"]: r["cost_usd"] for r in api.get("/runs").json()["runs"]}
        one, other = api.get("/runs/unknown").json(), api.get("/runs/known").json()
    assert listed["unknown"] is None and one["cost_usd"] is None and one["input_tokens"] > 0
    assert listed["known"] == other["cost_usd"] > 0


def test_the_review_queue_shows_an_unknown_cost_as_null(store: RunStore) -> None:
    started(store, "r1")
    result = agent(UNPRICED, [finish("give_up", "no invoice")]).run("pay", run_id="r1")
    store.record("r1", Outcome.of(result), LEASE, NOW + 1)
    [queued] = queue(store, [StopReason.GAVE_UP], 0.0, 10)
    assert queued.cost_usd is None and json.loads(json.dumps(queued.to_dict()))["cost_usd"] is None


def test_limits_suggest_leaves_unknown_costs_out_of_the_cost_ceiling_and_says_how_many(
    store_url: str,
) -> None:
    with closing(open_store(store_url)) as store:
        for i in range(3):
            finished(store, PRICED, f"known-{i}")
        for i in range(2):
            finished(store, UNPRICED, f"unknown-{i}")
        costs = [r.cost_usd for r in store.list_runs() if r.cost_usd is not None]
    (s,) = suggest(history_from_store(store_url))
    ceiling = next(c for c in s.ceilings if c.kind is LimitKind.COST)
    assert ceiling.observed.count == 3 and ceiling.observed.longest == max(costs)  # the $0s are not in
    assert s.unknown_cost == 2 and s.to_dict()["unknown_cost"] == 2
    assert "2 successful run(s) of unknown cost" in render([s], "the store")
    assert next(c for c in s.ceilings if c.kind is LimitKind.TURNS).observed.count == 5  # the rest use all


def test_limits_suggest_gives_no_cost_ceiling_when_every_cost_is_unknown(store_url: str) -> None:
    with closing(open_store(store_url)) as store:
        for i in range(2):
            finished(store, UNPRICED, f"unknown-{i}")
    (s,) = suggest(history_from_store(store_url))
    assert s.ceiling(LimitKind.COST) is None and s.ceiling(LimitKind.TURNS) is not None
    text = render([s], "the store")
    assert "2 successful run(s) of unknown cost" in text and "no cost ceiling" in text
    assert "no suggestion for cost" not in text  # it was recorded: unknown, not missing


# -- the upgrade --------------------------------------------------------------------------------------


def test_a_version_6_store_upgraded_to_7_keeps_its_costs(store_url: str) -> None:
    _write_v6_store(store_url, [("old-priced", 0.0421, 1200), ("old-free", 0.0, 10)])
    with closing(open_store(store_url)) as store:
        assert store.schema_version() >= 7  # type: ignore[attr-defined]
        old = {r.run_id: r for r in store.list_runs()}
        assert {k: r.cost_usd for k, r in old.items()} == {"old-priced": 0.0421, "old-free": 0.0}
        assert old["old-priced"].usage == Usage(1200, 0, 0, 0, 0.0421)
        finished(store, UNPRICED, "new")  # and the upgraded table takes an unknown cost
        assert store.get("new").cost_usd is None  # type: ignore[union-attr]


def _write_v6_store(url: str, runs: list[tuple[str, float, int]]) -> None:
    """The schema as version 6 left it, with finished runs of known cost."""
    rows = [
        {"run_id": run_id, "agent": "payer", "task": "pay", "task_type": "invoice", "status": "finished",
         "started_at": NOW, "updated_at": NOW, "ended_at": NOW, "stop_reason": "success", "turns": 1,
         "input_tokens": tokens, "cost_usd": cost}
        for run_id, cost, tokens in runs
    ]  # fmt: skip
    write_old_store(url, 6, rows)
