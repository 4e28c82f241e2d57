"""A case file is a user's YAML: aliases that expand a small file into hundreds of millions of
values (a "billion laughs") or lists nested thousands deep must be refused in one line naming the
file, not hang `endstate eval` for minutes eating gigabytes, nor end it in a RecursionError's
traceback."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from agent.evals.case import CaseError, load_file

PAIRS = zip("abcdefgh", "bcdefghi", strict=True)
LAUGHS = "".join(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n" for prev, name in PAIRS)
BOMB_HEAD = 'a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]\n' + LAUGHS
CASE = """\
cases:
  - name: laughs
    agent: invoice-downloader
    fixture: portal_offline
    expect: gave_up
    impossible: true
"""


def run_eval(path: Path) -> subprocess.CompletedProcess[str]:
    def cap_memory() -> None:  # the old code grew past 1.5 GB: fail fast rather than swap a shared box
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "eval", "--no-progress", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=cap_memory,
    )


@pytest.mark.parametrize(
    "field",
    [
        "    task: *i\n    judge: [nothing_downloaded]\n",
        "    task: pay\n    judge: [{note_explains: {words: *i}}]\n",
    ],
    ids=["task", "judge-argument"],
)
def test_an_alias_bomb_is_refused_at_once_in_one_line(tmp_path: Path, field: str) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text(BOMB_HEAD + CASE + field)
    done = run_eval(path)
    assert done.returncode == 2, done.stderr[-2000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"endstate: {path}: ")
    assert "alias" in line and "1000000" in line


def test_anchors_used_as_meant_still_load(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(
        "words: &w [portal, offline]\n" + CASE + "    script: invoice/portal-offline\n"
        "    judge: [nothing_downloaded, {note_explains: {words: *w}}]\n"
    )
    [case] = load_file(path)
    assert case.judges[1].params == {"words": ["portal", "offline"]}


@pytest.mark.parametrize("opening,closing", [("[", "]"), ("{a: ", "}")], ids=["lists", "mappings"])
def test_values_nested_thousands_deep_are_refused_not_a_traceback(
    tmp_path: Path, opening: str, closing: str
) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("cases: " + opening * 5000 + "1" + closing * 5000 + "\n")
    with pytest.raises(CaseError, match=r"deep\.yaml: values nested more than .* deep"):
        load_file(path)
    done = run_eval(path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
