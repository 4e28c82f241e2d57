"""`endstate eval --repeat N --json | endstate limits suggest --jsonl -`: every round's run is read,
each judged by its own round. Before, a case line held one round (its worst), so limits read a
fifth of five rounds' runs, and a flaky case only its failing round."""

from __future__ import annotations

import json

import pytest

from agent.cli.main import main
from agent.evals.limits import LimitsError, history_from_jsonl, suggest
from agent.result import LimitKind


def _eval_lines(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    main(["eval", *args, "--json", "--no-progress"])
    return capsys.readouterr().out.splitlines()


def test_a_repeated_case_line_holds_every_round_and_limits_reads_each_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = _eval_lines(capsys, "csv/clean", "research/private-margin", "--repeat", "3")
    cases = [json.loads(line) for line in lines[:-1]]
    assert [len(c["each_round"]) for c in cases] == [3, 3]
    ids = {s["run_id"] for c in cases for r in c["each_round"] for s in r["segments"]}
    assert len(ids) == 6  # a run of its own each round
    history = history_from_jsonl(lines)
    assert history.stops("csv_clean") == {"success": 3}
    assert history.stops("research") == {"gave_up": 3}
    observed = history.observed("csv_clean", LimitKind.TURNS, 0.95)
    assert observed is not None and observed.count == 3


def test_one_round_has_no_each_round(capsys: pytest.CaptureFixture[str]) -> None:
    (case, _summary) = [json.loads(line) for line in _eval_lines(capsys, "csv/clean")]
    assert "each_round" not in case
    assert history_from_jsonl([json.dumps(case)]).stops("csv_clean") == {"success": 1}


def _round(run_id: str, false_success: bool) -> dict:
    segment = {"reason": "success", "turns": 5, "run_id": run_id, "judge_errors": []}
    return {
        "case": "c",
        "task_type": "t",
        "expected": ["success"],
        "actual": ["success"],
        "false_success": false_success,
        "timed_out": None,
        "segments": [segment],
    }


def test_a_round_the_eval_called_a_false_success_sizes_nothing_the_others_do() -> None:
    rounds = [_round("a", False), _round("b", True), _round("c", False)]
    line = json.dumps({**rounds[1], "each_round": rounds})  # the line shows the worst round
    history = history_from_jsonl([line])
    observed = history.observed("t", LimitKind.TURNS, 0.95)
    assert observed is not None and observed.count == 2
    assert history.reviewed("t").false_successes == 1


@pytest.mark.parametrize("rounds", ["[1]", '{"a": 1}', '[{"segments": [], "each_round": []}]'])
def test_a_bad_each_round_is_named(rounds: str) -> None:
    line = '{"case": "c", "task_type": "t", "segments": [], "each_round": ' + rounds + "}"
    with pytest.raises(LimitsError, match="line 1: not a run record: each_round must be a list"):
        history_from_jsonl([line], "eval.jsonl")


def test_the_note_on_successes_left_out_says_an_eval_case_can_leave_them_out() -> None:
    """From `eval --json`, no person labelled anything: the note said only 'labelled false_success'."""
    rounds = [_round("a", False), _round("b", True)]
    history = history_from_jsonl([json.dumps({**rounds[1], "each_round": rounds})])
    (suggestion,) = suggest(history)
    [note] = [n for n in suggestion.notes if "left out of the successful runs" in n]
    assert "1 success(es) labelled false_success left out" in note
    assert "by an eval case that did not accept it" in note and "its judge could not check" in note
