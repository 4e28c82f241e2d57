"""`file_absent` looks for a path in the world the run left behind. A path out of that world
(`/etc/passwd`, `../../x`) or the world itself (`.`) was taken as written: the judge looked outside
the run's folder, found the file there, and the eval reported the agent's run as a FALSE SUCCESS
("/etc/passwd exists, though nothing should have written it") for a mistake in the case. Such a
path is now refused when the case loads, naming the file, the case and the field."""

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
    judge: [csv_matches_hand_cleaned, {{file_absent: {{path: '{path}'}}}}]
"""


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.csv", "out/../../outside.csv", ".", "out/.."])
def test_a_path_out_of_the_world_is_refused_when_the_case_loads(tmp_path: Path, path: str) -> None:
    case = tmp_path / "mine.yaml"
    case.write_text(CASE.format(path=path))
    with pytest.raises(CaseError) as caught:
        load_file(case)
    said = str(caught.value)
    assert said.startswith(f"{case}: case 'mine/clean': field 'judge': file_absent: ")
    assert "a path inside the run's folder" in said and repr(path) in said


@pytest.mark.parametrize("path", ["orders_clean.csv", "out/report.txt", "./out.csv"])
def test_a_path_inside_the_world_loads(tmp_path: Path, path: str) -> None:
    case = tmp_path / "mine.yaml"
    case.write_text(CASE.format(path=path))
    (loaded,) = load_file(case)
    assert loaded.judges[-1].params == {"path": path}
