"""Eval case files with a judge argument of the wrong type: refused when the case loads, naming the
judge, the argument and the type it takes, not read as something else (a word a letter at a time)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from agent.evals import CaseError, load_file, run_cases, summarize
from agent.evals.judges import JUDGES, judge

CASE = """\
cases:
  - name: mine/portal
    agent: invoice-downloader
    fixture: portal_offline
    script: invoice/portal-offline
    expect: gave_up
    impossible: true
    judge: [nothing_downloaded, {judged}]
"""


def case_file(tmp_path: Path, judged: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(CASE.format(judged=judged))
    return path


@pytest.mark.parametrize(
    ("judged", "problem"),
    [
        ("{note_explains: {words: portal}}", "argument 'words' must be list[str] | None, got 'portal' (str)"),
        ("{note_explains: {words: [portal, 3]}}", "'words' must be list[str] | None, got ['portal', 3]"),
        ("{note_explains: {reasons: gave_up}}", "argument 'reasons' must be list[str] | None, got 'gave_up'"),
        ("{invoice_saved: {invoice_id: 913}}", "argument 'invoice_id' must be str, got 913 (int)"),
        ("{report_is_sourced: {min_sources: true}}", "argument 'min_sources' must be int, got True (bool)"),
    ],
)
def test_a_judge_argument_of_the_wrong_type_is_refused_when_the_case_loads(
    tmp_path: Path, judged: str, problem: str
) -> None:
    with pytest.raises(CaseError) as caught:
        load_file(case_file(tmp_path, judged))
    said = str(caught.value)
    assert "case 'mine/portal': field 'judge':" in said and problem in said, said


def test_the_eval_command_says_it_in_one_line_and_exits_2(tmp_path: Path) -> None:
    path = case_file(tmp_path, "{note_explains: {words: portal}}")
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"endstate: {path}: case 'mine/portal': field 'judge': note_explains: argument 'words' must be "
        "list[str] | None, got 'portal' (str)"
    ]


def test_arguments_of_the_right_types_load_as_before(tmp_path: Path) -> None:
    (case,) = load_file(case_file(tmp_path, "{note_explains: {words: [portal], reasons: [gave_up]}}"))
    assert case.judges[-1].params == {"words": ["portal"], "reasons": ["gave_up"]}
    (case,) = load_file(case_file(tmp_path, "{report_is_sourced: {min_sources: 2}}"))
    assert case.judges[-1].params == {"min_sources": 2}


def test_a_users_judge_without_type_hints_takes_any_argument(tmp_path: Path) -> None:
    @judge("loose_probe20b")
    def loose(run, limit):  # type: ignore[no-untyped-def]
        return []

    try:
        (case,) = load_file(case_file(tmp_path, "{loose_probe20b: {limit: [1, 2]}}"))
        assert case.judges[-1].params == {"limit": [1, 2]}
    finally:
        del JUDGES["loose_probe20b"]


IMPOSSIBLE_AFTER_HELP = """\
cases:
  - name: mine/frozen-main
    agent: ci-fixer
    fixture: failing_ci
    script: ci/denied-push
    expect: need_help
    then: {action: deny, text: "Not now: main is frozen for the release.", expect: gave_up}
    impossible: true
    judge: [pushed_only_after_approval]
  - name: mine/portal-offline
    agent: invoice-downloader
    fixture: portal_offline
    script: invoice/portal-offline
    expect: gave_up
    impossible: true
    judge: [nothing_downloaded]
"""


def test_an_impossible_task_given_up_after_a_persons_answer_is_a_correct_give_up(tmp_path: Path) -> None:
    path = tmp_path / "impossible.yaml"
    path.write_text(IMPOSSIBLE_AFTER_HELP)
    summary = summarize(asyncio.run(run_cases(load_file(path))))
    assert summary.passed and summary.impossible == 2
    assert summary.correct_give_ups == 2  # the one that asked first, then gave up, too
