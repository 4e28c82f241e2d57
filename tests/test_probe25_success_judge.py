"""A case that expects success cannot have, as its only judges, ones that pass every success.

`note_explains` checks that a stop other than success says why; on a success it returns nothing.
A case `expect: success` with `judge: [note_explains]` met the rule "a case that expects success
needs an independent judge", yet nothing checked the success: with the verifiers broken, a run that
wrote nothing passed as a true success.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli.main import main
from agent.evals.case import CaseError, load_cases

CASE = """\
cases:
  - name: csv/said-done
    agent: csv-cleaner
    fixture: dirty_orders
    script: csv/clean
    expect: {expect}
    judge: {judge}
"""


def _write(tmp_path: Path, expect: str = "success", judge: str = "[note_explains]") -> Path:
    path = tmp_path / "case.yaml"
    path.write_text(CASE.format(expect=expect, judge=judge))
    return path


def test_a_success_case_judged_only_by_note_explains_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match=r"field 'judge': note_explains passes every success"):
        load_cases([_write(tmp_path)])


def test_the_eval_command_says_so_in_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", str(_write(tmp_path))]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "case 'csv/said-done'" in err and "csv_matches_hand_cleaned" in err


@pytest.mark.parametrize(
    ("expect", "judge"),
    [
        ("success", "[note_explains, csv_matches_hand_cleaned]"),  # a judge that looks at the success
        ("no_progress", "[note_explains]"),  # no success expected: it judges the stop's note
    ],
)
def test_cases_with_a_judge_for_what_they_expect_still_load(tmp_path: Path, expect: str, judge: str) -> None:
    [case] = load_cases([_write(tmp_path, expect, judge)])
    assert case.expect == expect
