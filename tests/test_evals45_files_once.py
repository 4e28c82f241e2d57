"""`endstate eval evals/ evals/mine.yaml`: a case file named twice (itself, and in its folder) is
read once. Before, every case of it was refused as 'already used' in that same file (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli.main import main
from agent.evals.case import CaseError, load_cases

CASE = """
cases:
  - name: mine/{name}
    agent: invoice-downloader
    fixture: portal_offline
    script: invoice/portal-offline
    expect: gave_up
    impossible: true
    judge: [nothing_downloaded]
"""


@pytest.fixture
def evals(tmp_path: Path) -> Path:
    folder = tmp_path / "evals"
    (folder / "more").mkdir(parents=True)
    (folder / "mine.yaml").write_text(CASE.format(name="one"))
    (folder / "more" / "other.yaml").write_text(CASE.format(name="two"))
    return folder


def test_a_file_named_with_its_folder_is_read_once(evals: Path) -> None:
    cases = load_cases([evals, evals / "mine.yaml", evals / "more", evals / ".." / "evals" / "mine.yaml"])
    assert [c.name for c in cases] == ["mine/one", "mine/two"]


def test_the_eval_of_a_folder_and_a_file_in_it_runs_each_case_once(
    evals: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(evals.parent)
    assert main(["eval", "evals/", "evals/mine.yaml", "--no-progress"]) == 0
    assert "PASSED: 2 of 2 cases met their expectations." in capsys.readouterr().out


def test_two_files_with_one_case_name_are_still_refused(evals: Path) -> None:
    (evals / "copy.yaml").write_text(CASE.format(name="one"))
    with pytest.raises(CaseError, match="case 'mine/one': field 'name': already used in"):
        load_cases([evals])
