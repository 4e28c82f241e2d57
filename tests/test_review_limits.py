"""Review labels feed `limits suggest`: false successes are left out, limit_too_low raises a ceiling."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_limits import seed_runs

from agent.cli.main import main
from agent.durable.store import Lease, NewRun, Outcome, open_store
from agent.evals.limits import PastRun, RecordHistory, suggest
from agent.result import LimitKind, RunResult, StopReason
from agent.usage import Usage

S, L = StopReason.SUCCESS, StopReason.LIMIT


def labelled(runs: list[PastRun], labels: dict[str, str]) -> list[PastRun]:
    return [dataclasses.replace(r, label=labels.get(r.run_id or "")) for r in runs]


def test_a_success_labelled_false_is_not_a_success_the_ceilings_come_from() -> None:
    long = PastRun("research", S, None, 90, 300, 90_000, 0.9, "long")  # would have set the ceiling at 120
    (plain,) = suggest(RecordHistory([*seed_runs(), long]))
    assert plain.ceiling(LimitKind.TURNS) == 120
    (reviewed,) = suggest(RecordHistory(labelled([*seed_runs(), long], {"long": "false_success"})))
    assert reviewed.ceiling(LimitKind.TURNS) == 25  # as if it had not succeeded
    left_out = "1 success(es) labelled false_success left out of the successful runs"
    assert any(n.startswith(left_out) for n in reviewed.notes), reviewed.notes


def test_only_false_successes_give_no_suggestion_and_say_why() -> None:
    runs = [
        PastRun("t", S, None, 5, 5, 500, 0.1, "a"),
        PastRun("t", L, LimitKind.TURNS, 10, 9, 900, 0.2, "b"),
    ]
    (s,) = suggest(RecordHistory(labelled(runs, {"a": "false_success"})))
    assert s.ceilings == ()
    assert "1 of them labelled false_success" in s.notes[0]


def test_a_limit_stop_labelled_too_low_puts_its_ceiling_above_what_it_used() -> None:
    too_low = PastRun("research", L, LimitKind.TURNS, 30, 90, 30_000, 0.3, "cut-off")
    (plain,) = suggest(RecordHistory([*seed_runs(), too_low]))
    assert plain.ceiling(LimitKind.TURNS) == 25  # below the 30 turns the cut-off run had used
    (reviewed,) = suggest(RecordHistory(labelled([*seed_runs(), too_low], {"cut-off": "limit_too_low"})))
    assert reviewed.ceiling(LimitKind.TURNS) == 40  # 30 x 1.25, rounded up
    assert reviewed.ceiling(LimitKind.SECONDS) == plain.ceiling(LimitKind.SECONDS)  # only its own budget
    assert "runs labelled limit_too_low used up to 30: the turns ceiling is above it (40)" in reviewed.notes


def test_a_limit_stop_labelled_fine_changes_nothing() -> None:
    too_low = PastRun("research", L, LimitKind.TURNS, 30, 90, 30_000, 0.3, "cut-off")
    (plain,) = suggest(RecordHistory([*seed_runs(), too_low]))
    (reviewed,) = suggest(RecordHistory(labelled([*seed_runs(), too_low], {"cut-off": "fine"})))
    assert reviewed.ceilings == plain.ceilings and reviewed.notes == plain.notes


def test_limits_suggest_reads_the_labels_in_the_run_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = str(tmp_path / "runs.db")
    store = open_store(url)
    lease, now = Lease("w1", 4e9), 1.9e9
    runs = [*seed_runs(), PastRun("research", L, LimitKind.TURNS, 30, 90, 30_000, 0.3, "cut-off")]
    for run in runs:
        assert run.run_id is not None
        store.create(NewRun(run.run_id, "researcher", "task", run.task_type), lease, now)
        result = RunResult(
            run.run_id, "researcher", run.task_type, run.reason, run.limit, turns=int(run.turns),
            active_seconds=run.seconds, usage=Usage(int(run.tokens), cost_usd=run.cost),
        )  # fmt: skip
        store.record(run.run_id, Outcome.of(result), lease, now)
    store.add_review("cut-off", "fine", "", now)
    store.add_review("cut-off", "limit_too_low", "it was one page from done", now + 1)  # the latest counts
    store.close()
    assert main(["limits", "suggest", "--store", url, "--json"]) == 0
    out = capsys.readouterr().out
    assert '"suggested": 40' in out and "labelled limit_too_low used up to 30" in out
