"""`limits suggest --jsonl` over `endstate eval --json` leaves out a success the case says must not be.

A case that expects another end than success (a promoted `false_success` case expects `gave_up`,
and stays red while the agent still claims success) failed in the eval, yet its success was read
as a successful run and set the ceilings: the limits were sized by a run a person called false.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.cli.main import main

CASE = """\
cases:
  - name: review/claimed-clean
    agent: csv-cleaner
    fixture: dirty_orders
    script: csv/clean
    expect: {expect}
    judge: [{{file_absent: {{path: invoices}}}}]
"""


def _suggest(tmp_path: Path, capsys: pytest.CaptureFixture[str], expect: str) -> tuple[int, dict]:
    (tmp_path / "case.yaml").write_text(CASE.format(expect=expect))
    main(["eval", "--json", "--no-progress", str(tmp_path / "case.yaml")])
    lines = capsys.readouterr().out.splitlines()
    assert json.loads(lines[0])["actual"] == ["success"]
    (tmp_path / "eval.jsonl").write_text("\n".join(lines) + "\n")
    code = main(["limits", "suggest", "--jsonl", str(tmp_path / "eval.jsonl"), "--json"])
    [suggestion] = json.loads(capsys.readouterr().out)
    return code, suggestion


def test_a_success_the_case_expected_to_give_up_sets_no_ceiling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, suggestion = _suggest(tmp_path, capsys, "gave_up")
    assert code == 1 and suggestion["ceilings"] == {}  # no task type got ceilings
    assert "1 of them labelled false_success" in suggestion["notes"][0]


def test_a_success_the_case_expected_sets_them_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, suggestion = _suggest(tmp_path, capsys, "success")
    assert code == 0 and suggestion["ceilings"]["turns"]["successes"] == 1
