"""A case file of more values than the loader takes (MAX_VALUES) and no alias at all was composed
whole before it was refused, and refused as "an alias bomb": a 27 MB file of 200,000 plain cases
(3.2 million values) took 137 s to be told to "name each anchor's values fewer times", which it has
none of. It is now counted as it is read, refused with a message that fits it (split the file),
and an alias bomb is still named as one."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.evals import case as case_module
from agent.evals.case import CaseError, load_file

CASE = (
    "  - {{name: c{i}, agent: csv-cleaner, fixture: dirty_orders, script: csv/clean, expect: success, "
    "judge: [csv_matches_hand_cleaned]}}\n"
)


@pytest.fixture
def few(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(case_module, "MAX_VALUES", 1000)
    return 1000


def test_a_file_of_too_many_plain_values_is_told_to_split(tmp_path: Path, few: int) -> None:
    path = tmp_path / "many.yaml"
    path.write_text("cases:\n" + "".join(CASE.format(i=i) for i in range(few // 10)))
    with pytest.raises(CaseError) as caught:
        load_file(path)
    said = str(caught.value)
    assert said.startswith(f"{path}: more than {few} values")
    assert "split" in said and "alias" not in said


def test_an_alias_bomb_is_still_named_as_one(tmp_path: Path, few: int) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                    "cases: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n")  # fmt: skip
    with pytest.raises(CaseError, match="once its aliases"):
        load_file(path)


def test_a_file_within_the_bound_loads(tmp_path: Path, few: int) -> None:
    path = tmp_path / "some.yaml"
    path.write_text("cases:\n" + "".join(CASE.format(i=i) for i in range(few // 20)))
    assert len(load_file(path)) == few // 20


def test_nesting_too_deep_is_still_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("cases:\n  - " + "[" * 150 + "]" * 150 + "\n")
    with pytest.raises(CaseError, match=r"values nested more than 100 deep \(line 2\)"):
        load_file(path)
