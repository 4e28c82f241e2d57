"""The eval report's case table stays a table when a case name is longer than 30 characters.

`endstate review promote` names its cases `review/<run id>` (39 characters), and the runbooks send
the on-call person to `endstate eval evals/promoted/`: every row then pushed its columns right of
the header's, so "expected" and "actual" no longer stood under their titles.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli.main import main

PROMOTED = "review/9086168d01074f01abfd6d4d33af4e45"


def test_columns_line_up_under_their_titles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases.yaml").write_text(
        "cases:\n"
        f"  - name: {PROMOTED}\n    agent: csv-cleaner\n    fixture: dirty_orders\n"
        "    script: csv/clean\n    expect: success\n    judge: [csv_matches_hand_cleaned]\n"
        "  - name: csv/short\n    agent: csv-cleaner\n    fixture: dirty_orders\n"
        "    script: csv/clean\n    expect: limit\n"
    )
    assert main(["eval", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("case "))
    header, rows = lines[head], lines[head + 1 : head + 3]
    wants = [
        {"task type": "csv_clean", "expected": "success", "actual": "success", "result": "ok"},
        {"task type": "csv_clean", "expected": "limit", "actual": "success", "result": "FALSE SUCCESS"},
    ]
    for row, want in zip(rows, wants, strict=True):
        for title, value in want.items():
            at = header.index(title)
            assert row[at:].startswith(value) and row[at - 1] == " ", f"{title!r} column: {row!r}"
