"""A case's `task_type` heads rows of the eval's tables (the case table and the stop distribution)
and becomes a metric label. One holding a line break or an escape sequence (`"a\\nb\\x1b[31m"`)
was taken as written: it broke both tables across lines and wrote the escape to the terminal, as
a case's name once did. It is now refused when the case loads, as a name is: one line of printable
characters, at most 200."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.evals.case import CaseError, load_file

CASE = """
cases:
  - name: mine/clean
    agent: csv-cleaner
    fixture: dirty_orders
    script: csv/clean
    expect: success
    judge: [csv_matches_hand_cleaned]
    task_type: {task_type}
"""


@pytest.mark.parametrize("task_type", ['"a\\nb"', '"csv\\x1b[31mRED"', '"tab\\there"', "x" * 201])
def test_a_task_type_that_is_no_one_line_label_is_refused(tmp_path: Path, task_type: str) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(CASE.format(task_type=task_type))
    said = r"case 'mine/clean': field 'task_type': (must be one line|at most 200)"
    with pytest.raises(CaseError, match=said):
        load_file(path)


def test_a_plain_task_type_loads(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(CASE.format(task_type="csv_clean/orders-2026"))
    (case,) = load_file(path)
    assert case.task_type == "csv_clean/orders-2026"
