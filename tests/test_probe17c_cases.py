"""A key given twice in a case file is a mistake that YAML hides: the last one silently wins. A
second `judge:` dropped the first judge, so the case checked less than its author wrote (a false
success the dropped judge would have caught passed); a second `cases:` dropped every case above
it. Both are refused with the file, the case, the field and the two lines; overriding a field
merged from an anchor (`<<: *base`) is no duplicate and still loads."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent.evals.case import CaseError, load_file

TWO_JUDGES = "    judge: [no_invented_answer]\n    judge: [file_absent]\n"
CASE = """\
  - name: {name}
    agent: researcher
    fixture: no_public_answer
    script: research/private-margin
    expect: gave_up
    impossible: true
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_field_given_twice_in_a_case_is_named_with_both_lines(tmp_path: Path) -> None:
    text = "cases:\n" + CASE.format(name="margin") + TWO_JUDGES
    path = write(tmp_path, text)
    with pytest.raises(CaseError) as raised:
        load_file(path)
    assert str(raised.value) == (
        f"{path}: case 'margin': field 'judge': given twice (lines 8 and 9); YAML would keep only "
        "the last one: keep one"
    )


def test_a_second_cases_key_would_drop_every_case_above_it(tmp_path: Path) -> None:
    text = "cases:\n" + CASE.format(name="one") + "cases:\n" + CASE.format(name="two")
    path = write(tmp_path, text)
    with pytest.raises(CaseError) as raised:
        load_file(path)
    assert str(raised.value) == (
        f"{path}: field 'cases': given twice (lines 1 and 8); YAML would keep only the last one: keep one"
    )


def test_a_duplicate_in_a_case_without_a_name_names_its_position(tmp_path: Path) -> None:
    text = "- agent: researcher\n  expect: gave_up\n  expect: success\n"
    path = write(tmp_path, text)
    said = r"^.*mine\.yaml: case #1: field 'expect': given twice \(lines 2 and 3\)"
    with pytest.raises(CaseError, match=said):
        load_file(path)


def test_overriding_a_field_merged_from_an_anchor_still_loads(tmp_path: Path) -> None:
    text = """\
    base: &base
      agent: researcher
      fixture: no_public_answer
      script: research/private-margin
      expect: gave_up
      impossible: true
      judge: [no_invented_answer]
    cases:
      - <<: *base
        name: a
      - <<: *base
        name: b
        judge: [no_invented_answer, {note_explains: {words: [margin]}}]
    """
    a, b = load_file(write(tmp_path, text))
    assert [j.name for j in a.judges] == ["no_invented_answer"]
    assert [j.name for j in b.judges] == ["no_invented_answer", "note_explains"]


def test_the_eval_command_says_so_in_one_line_and_exits_2(tmp_path: Path) -> None:
    text = "cases:\n" + CASE.format(name="margin") + TWO_JUDGES
    path = write(tmp_path, text)
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        f"endstate: {path}: case 'margin': field 'judge': given twice (lines 8 and 9); YAML would keep "
        "only the last one: keep one"
    ]
