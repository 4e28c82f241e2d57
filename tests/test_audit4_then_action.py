"""A follow-up action that cannot continue the run's stop is a mistake in the case file. A cancelled
run can only be resumed, and a question or an approval is never `resume`d: such a case loaded, ran,
and failed as "the case could not run: SnapshotError: ... (pass Approval() or Denial('why'))", advice
for the Python API, naming no field, and its first segment's stop vanished from the report. Now the
load refuses what is wrong on its face, and what only the run shows (an `approve` where a question
waits) names the field, with the first segment kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent.evals.case import CaseError, load_file
from agent.evals.runner import run_case
from agent.result import StopReason

CSV_SHUTDOWN = """cases:
- name: x
  agent: csv-cleaner
  fixture: dirty_orders
  script: csv/shutdown
  judge: [csv_matches_hand_cleaned]
  expect: cancelled
  then:
    action: %s
    expect: success
"""

WHICH_ONE = """cases:
- name: x
  agent: invoice-downloader
  fixture: portal_online
  script: invoice/which-one
  judge: [{invoice_saved: {invoice_id: INV-0913}}]
  expect: need_help
  then: {action: %s, expect: success}
"""


@pytest.mark.parametrize("action", ["approve", "deny", "expire", "answer\n    text: 'yes'"])
def test_a_cancelled_run_is_only_resumed(tmp_path: Path, action: str) -> None:
    said = refused(tmp_path, CSV_SHUTDOWN % action)
    assert "cancelled" in said and "resume" in said


def test_need_help_is_never_resumed_without_an_answer(tmp_path: Path) -> None:
    said = refused(tmp_path, WHICH_ONE % "resume")
    assert "answer" in said and "approve" in said


def refused(tmp_path: Path, text: str) -> str:
    """Why loading a case file of `text` is refused, checked to name its `then.action` field."""
    path = tmp_path / "case.yaml"
    path.write_text(text)
    with pytest.raises(CaseError) as caught:
        load_file(path)
    assert str(caught.value).startswith(f"{path}: case 'x': field 'then.action': ")
    return str(caught.value)


def test_an_approval_where_a_question_waits_names_the_field_and_keeps_the_first_stop(tmp_path: Path) -> None:
    path = tmp_path / "case.yaml"
    path.write_text(WHICH_ONE % "approve")
    (case,) = load_file(path)
    outcome = asyncio.run(run_case(case))
    assert outcome.actual == [StopReason.NEED_HELP]
    [problem] = outcome.problems
    assert problem.startswith(
        "the case could not run: field 'then.action': 'approve' cannot continue this run: "
    )
    assert "a question" in problem and "action: answer" in problem, problem
    assert "pass Answer" not in problem, problem
