"""A case's name is printed in the eval table, the JSON lines and error messages: a name holding a
newline broke the table's rows, and one holding an escape sequence (ESC [ 31 m) was written raw to
the user's terminal. Such a name is refused when the case loads, naming the field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent.evals.case import CaseError, load_file

CASE = """\
cases:
  - name: {name}
    agent: invoice-downloader
    fixture: portal_offline
    script: invoice/portal-offline
    expect: gave_up
    impossible: true
    judge: [nothing_downloaded]
"""


@pytest.mark.parametrize("name", [r'"two\nlines"', r'"red\x1b[31m"', r'"tab\there"', r'"bell\a"'])
def test_a_name_with_control_characters_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / "names.yaml"
    path.write_text(CASE.format(name=name))
    with pytest.raises(CaseError, match=r"field 'name': must be one line of printable characters"):
        load_file(path)
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", "--no-progress", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "\x1b" not in done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_name_of_thousands_of_characters_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "long.yaml"
    path.write_text(CASE.format(name="a" * 5000))
    with pytest.raises(CaseError, match=r"field 'name': at most 200 characters, got 5000"):
        load_file(path)


@pytest.mark.parametrize("name", ["invoice/offline-é", "ci/fix #2 (retry)", "café: ünïcode"])
def test_ordinary_names_still_load(tmp_path: Path, name: str) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(CASE.format(name=f'"{name}"'))
    [case] = load_file(path)
    assert case.name == name
